// What the browser test (dashboard_test.mjs) and the screenshot script
// (screenshots.mjs) share: real apollo11-node processes in a scratch
// directory, the apollo11 CLI, and the pipelines they run.
import { spawn } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import path from "node:path";

// --name value pairs (a flag without a value is true).
export function parseArgs(argv) {
  return Object.fromEntries(argv.map((a, i, all) =>
    a.startsWith("--") ? [a.slice(2), all[i + 1] && !all[i + 1].startsWith("--") ? all[i + 1] : true] : null)
    .filter(Boolean));
}

export async function waitFor(f, ms, what) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (v) return v;
    if (Date.now() > end) throw new Error("timed out: " + what);
    await new Promise((r) => setTimeout(r, 100));
  }
}

export async function json(base, p) {
  const res = await fetch(base + p);
  return res.json();
}

// The run id in `apollo11 submit --json`'s answer.
export const runIdOf = (out) => /r\d{8}T[0-9-]+/.exec(out)[0];

// Nodes, the CLI and pipeline files under one scratch directory `out`; the
// nodes it started are stopped by stopAll().
export class Cluster {
  constructor({ node, cli, out }) {
    this.node = node;
    this.cliBin = cli;
    this.out = out;
    this.children = [];
  }

  // Starts `apollo11-node start` with a state dir OUT/NAME; listening()
  // resolves to the endpoints it printed ({http, api, workers, ...}).
  startNode(name, extra) {
    if (!fs.existsSync(this.node)) throw new Error("no apollo11-node at " + this.node);
    const outFile = path.join(this.out, name + ".out"), errFile = path.join(this.out, name + ".err");
    const child = spawn(this.node, ["start", "--state-dir", path.join(this.out, name), "--heartbeat", "200ms",
      "--log-level", "info", ...extra], { stdio: ["ignore", fs.openSync(outFile, "w"), fs.openSync(errFile, "w")] });
    this.children.push(child);
    return { child, listening: () => waitFor(() => {
      const text = fs.readFileSync(outFile, "utf8");
      const nl = text.indexOf("\n");
      return nl > 0 ? JSON.parse(text.slice(0, nl)) : null;
    }, 15000, name + " did not start: " + fs.readFileSync(errFile, "utf8")) };
  }

  // Runs the apollo11 CLI; resolves to its stdout, rejects on a non-zero exit.
  cli(...a) {
    return new Promise((resolve, reject) => {
      const p = spawn(this.cliBin, a, { stdio: ["ignore", "pipe", "pipe"] });
      let out = "", err = "";
      p.stdout.on("data", (d) => (out += d));
      p.stderr.on("data", (d) => (err += d));
      p.on("close", (code) => (code === 0 ? resolve(out) : reject(new Error(`apollo11 ${a.join(" ")}: ${code} ${err}`))));
    });
  }

  // Writes OUT/NAME.yaml and returns its path.
  writePipeline(name, text) {
    const file = path.join(this.out, name + ".yaml");
    fs.writeFileSync(file, text);
    return file;
  }

  stopAll() {
    for (const c of this.children) c.kill("SIGTERM");
  }
}

// 10,000 tasks: 100 chains of 100, so the graph has 100 layers. `noop`
// tasks, or shell tasks that sleep 0.2 s.
export function bigPipeline(type) {
  const lines = ['version: "1.0"', "name: bench.big", "pipeline:"];
  for (let layer = 0; layer < 100; layer++) {
    for (let i = 0; i < 100; i++) {
      lines.push(`  - id: t${layer}_${i}`);
      lines.push(type === "noop" ? "    type: noop" : "    type: shell\n    command: sleep 0.2");
      if (layer) lines.push(`    depends_on: t${layer - 1}_${i}`);
    }
  }
  return lines.join("\n") + "\n";
}

// 300 tasks in 15 layers of 20 (web.wide): each depends on the task beside
// it one layer up, every third also on its neighbour, and three of those
// edges are `on: failure`, `on: done` and `on: timeout` (which then never
// run: SKIPPED). `task(layer, i)` may give a task's body instead of noop.
export function widePipeline(task = () => "    type: noop") {
  const lines = ['version: "1.0"', "name: web.wide", "pipeline:"];
  for (let layer = 0; layer < 15; layer++) {
    for (let i = 0; i < 20; i++) {
      lines.push(`  - id: l${layer}_t${i}`, task(layer, i));
      if (!layer) continue;
      const deps = [`l${layer - 1}_t${i}`];
      const on = layer === 5 && i === 0 ? "failure" : layer === 7 && i === 3 ? "done" : layer === 9 && i === 6 ? "timeout" : "";
      if (i % 3 === 0) deps.push(on ? `{task: l${layer - 1}_t${(i + 1) % 20}, on: ${on}}` : `l${layer - 1}_t${(i + 1) % 20}`);
      lines.push(`    depends_on: [${deps.join(", ")}]`);
    }
  }
  return lines.join("\n") + "\n";
}

// A server in front of a node (`target`, HOST:PORT) that answers /assets/NAME
// from `dir` (a dist/ of scripts/build-dashboard.sh) when the file is there
// and forwards everything else (the page, its CSP, the API): the page keeps
// the node's asset names, only their content is replaced.
export function assetsProxy(dir, target) {
  const [host, port] = target.split(":");
  const server = http.createServer((req, res) => {
    // The node names an asset NAME.HASH.EXT (scripts/embed_assets.py); dist/ has NAME.EXT.
    const name = req.url.startsWith("/assets/") ?
      path.basename(req.url.slice(8).split("?")[0]).replace(/\.[0-9a-f]{12}(?=\.\w+$)/, "") : "";
    const file = name && path.join(dir, name);
    if (file && fs.existsSync(file)) {
      const types = { js: "text/javascript", css: "text/css", svg: "image/svg+xml" };
      res.writeHead(200, { "content-type": types[name.split(".").pop()] ?? "application/octet-stream", "cache-control": "no-store" });
      return fs.createReadStream(file).pipe(res);
    }
    const up = http.request({ host, port, path: req.url, method: req.method, headers: req.headers }, (r) => {
      res.writeHead(r.statusCode, r.headers);
      r.pipe(res);
    });
    up.on("error", (e) => {
      if (!res.headersSent) res.writeHead(502);
      res.end(String(e));
    });
    // A page that stops reading (a live event stream closed, a page left)
    // closes its side at the node too: the node counts open streams.
    res.on("close", () => { if (!res.writableFinished) up.destroy(); });
    req.pipe(up);
  });
  return new Promise((r) => server.listen(0, "127.0.0.1", () => r(server)));
}
