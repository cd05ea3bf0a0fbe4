// The screenshots in docs/screenshots, every PNG there: one node
// (--role=all, with an API token) in a scratch directory, a 300-task run of
// a registered, scheduled pipeline with two versions, a 10,000-task run, a
// flaky execution, a small run with a handled timeout whose alerts go to a
// local webhook, a task flagged slow and a second worker; each page shot at
// 1366x768 in Debian's chromium, signed in, and checked by axe-core on the
// way (serious or critical violations are printed and make the exit status
// 1; the shots are written anyway). scripts/screenshots.sh runs it; it
// builds nothing.
//
// Usage: node screenshots.mjs --node BIN --cli BIN --out DIR --shots DIR
//                             [--chromium PATH] [--assets DIR] [--only NAME,...]
//   --out     scratch: the node's state, its logs, pipeline files
//   --shots   where the PNGs go (docs/screenshots), replacing those there
//   --assets  serve the dashboard from DIR (a dist/ of scripts/build-dashboard.sh's
//             esbuild step) instead of the bundle inside the node: a local
//             server in front of the node answers /assets/* from DIR and
//             forwards the rest, to see changes not yet built into the node
//   --only    just these shots (names below), e.g. --only run-300,pipeline
import { chromium } from "playwright-core";
import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import { axeCheck, describe } from "./a11y.mjs";
import { assetsProxy, bigPipeline, Cluster, json, parseArgs, runIdOf, waitFor, widePipeline } from "./harness.mjs";

const args = parseArgs(process.argv.slice(2));
const CHROMIUM = args.chromium ?? "/usr/bin/chromium";
const TOKEN = "screenshots-token-0123456789";
const OUT = path.resolve(args.out ?? "screenshots-scratch");
const SHOTS = path.resolve(args.shots ?? "docs/screenshots");
const only = args.only ? new Set(String(args.only).split(",")) : null;

// web.wide with something to see: a flaky task (attempt 1 fails), a failed
// one whose `on: failure` branch runs, a timed-out one whose `on: timeout`
// branch runs, and a few that take a moment. v2 adds the schedule.
function wideTask(layer, i) {
  if (layer === 2 && i === 5) {
    return `    type: shell
    command: |
      if [ "$APOLLO11_ATTEMPT" -lt 2 ]; then echo "attempt 1: connection reset" >&2; exit 75; fi
      echo "attempt $APOLLO11_ATTEMPT: loaded 1200 rows"
    retry: { max_retries: 2, delay: 500ms, backoff: fixed, on_exit_codes: [75] }`;
  }
  if (layer === 4 && i === 1) return "    type: shell\n    command: echo no such table >&2; exit 3";
  if (layer === 8 && i === 7) return "    type: shell\n    command: sleep 5\n    timeout: 1s";
  if (i === 10) return `    type: shell\n    command: sleep 0.${layer % 5 + 1}`;
  return "    type: noop";
}
const wideV1 = widePipeline(wideTask).replace("name: web.wide\n",
  'name: web.wide\nparams:\n  day: "2026-01-01"\n  rows: "1000"\n');
const wideV2 = wideV1.replace("name: web.wide\n", 'name: web.wide\nschedule: "0 3 * * *"\ncatchup: none\nmax_active_runs: 2\n');

// web.etl, the run page of the README: a flaky transform, a validation that
// times out (its Exit the signal that ended it) and is handled by an
// on: timeout branch; its alerts go to HOOK (the overview's Recent alerts).
const etl = (hook) => `version: "1.0"
name: web.etl
alerts:
  - events: [task_failed, task_timeout, run_failed, run_failures_handled]
    webhook: "${hook}"
pipeline:
  - id: extract
    type: shell
    command: echo "extracted 1200 rows"; sleep 0.5
  - id: transform
    type: shell
    command: |
      if [ "$APOLLO11_ATTEMPT" -lt 2 ]; then echo "attempt 1: connection reset" >&2; exit 75; fi
      sleep 1; echo "transformed 1200 rows"
    retry: { max_retries: 2, delay: 500ms, backoff: fixed, on_exit_codes: [75] }
    depends_on: extract
  - id: validate
    type: shell
    command: sleep 30
    timeout: 1s
    depends_on: extract
  - id: quarantine
    type: shell
    command: echo "batch set aside"
    depends_on: [{ task: validate, on: timeout }]
  - id: load
    type: shell
    command: sleep 0.5; echo "loaded 1200 rows"
    depends_on: transform
  - id: report
    type: noop
    depends_on: [load, quarantine]
`;
// web.slowpoke: fast the first time (it leaves MARK), then 60 s, which the
// node (--slow-min 1s) flags slow on the run page.
const slowpoke = (mark) => `version: "1.0"
name: web.slowpoke
pipeline:
  - id: work
    type: shell
    command: if [ -f ${mark} ]; then sleep 60; else touch ${mark}; fi
`;

async function main() {
  if (!fs.existsSync(CHROMIUM)) throw new Error(`no browser at ${CHROMIUM}: install Debian's chromium`);
  fs.rmSync(OUT, { recursive: true, force: true });
  fs.mkdirSync(OUT, { recursive: true });
  fs.mkdirSync(SHOTS, { recursive: true });
  const cluster = new Cluster({ node: args.node, cli: args.cli, out: OUT });
  let browser, proxy;
  // The webhook web.etl's alerts are delivered to.
  const posts = [];
  const receiver = http.createServer((req, res) => {
    req.resume();
    req.on("end", () => { posts.push(req.url); res.end("ok"); });
  });
  await new Promise((r) => receiver.listen(0, "127.0.0.1", r));
  try {
    const info = await cluster.startNode("node", ["--role=all", "--slots", "4", "--labels", "ssd",
      "--http-bind", "127.0.0.1:0", "--bind", "tcp://127.0.0.1:0", "--api-bind", "tcp://127.0.0.1:0",
      "--api-token", TOKEN, "--slow-min", "1s", "--alert-fold-window", "200ms"]).listening();
    await cluster.startNode("w-gpu", ["--role=worker", "--connect", info.workers, "--worker-id", "w-gpu",
      "--slots", "2", "--labels", "gpu", "--http-bind", "off"]).listening();
    const api = info.api;
    let base = "http://" + info.http;
    if (args.assets) {
      proxy = await assetsProxy(path.resolve(args.assets), info.http);
      base = "http://127.0.0.1:" + proxy.address().port;
    }

    // The registered pipeline, two versions, the second scheduled; a run of it.
    await cluster.cli("pipelines", "add", cluster.writePipeline("wide-v1", wideV1), "--coordinator", api);
    await cluster.cli("pipelines", "add", cluster.writePipeline("wide-v2", wideV2), "--coordinator", api);
    const wide = runIdOf(await cluster.cli("trigger", "web.wide", "-p", "rows=1200", "--coordinator", api, "--json"));
    await waitFor(async () => ["SUCCESS", "FAILED"].includes((await json(base, "/api/runs/" + wide)).state),
      120000, "the 300-task run to end");
    let big = wide;  // --only without run-10000 skips the big run
    if (!only || only.has("run-10000")) {
      big = runIdOf(await cluster.cli("submit", cluster.writePipeline("big", bigPipeline("noop")),
        "--coordinator", api, "--json", "--timeout", "60"));
      await waitFor(async () => (await json(base, "/api/runs/" + big)).state === "SUCCESS", 180000,
        "the 10,000-task run to end");
    }

    const want = (name) => !only || only.has(name);
    let etlRun = wide;
    if (want("run") || want("overview-alerts")) {
      const hook = `http://127.0.0.1:${receiver.address().port}/hook`;
      etlRun = runIdOf(await cluster.cli("submit", cluster.writePipeline("etl", etl(hook)),
        "--coordinator", api, "--json", "--wait"));
      await waitFor(() => posts.length >= 2, 15000, "web.etl's alerts at the webhook");
    }
    let slowRun = wide;
    if (want("run-slow-flag")) {
      const file = cluster.writePipeline("slowpoke", slowpoke(path.join(OUT, "slowpoke.mark")));
      await cluster.cli("submit", file, "--coordinator", api, "--json", "--wait");
      slowRun = runIdOf(await cluster.cli("submit", file, "--coordinator", api, "--json"));
    }

    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ["--no-sandbox"] });
    const page = await browser.newPage({ viewport: { width: 1366, height: 768 } });
    await page.goto(base + "/");
    await page.fill("#token", TOKEN);
    await page.click("#login button[type=submit]");
    await page.waitForSelector("#signed-in");

    const shots = [
      ["overview", "/", async () => {
        await page.waitForFunction(() => document.querySelector("#m-waiting-value")?.textContent !== "–");
        await page.waitForSelector(`#recent-runs tr[data-run="${big}"]`);
        await page.waitForTimeout(4000);  // a few samples in the charts
      }],
      ["overview-alerts", "/", async () => {
        await page.waitForSelector('#recent-alerts tr[data-type="timeout"] [data-delivery="delivered"]', { timeout: 15000 });
        await page.$eval("#recent-alerts", (e) => e.scrollIntoView({ block: "center" }));
      }],
      ["runs", "/runs", () => page.waitForSelector(`#runs-list tr[data-run="${wide}"]`)],
      ["run-300", "/run/" + wide, () => page.waitForSelector("#page-run.loaded")],
      ["run", "/run/" + etlRun, async () => {
        await page.waitForSelector("#page-run.loaded");
        await page.waitForSelector('#task-table .row[data-task="validate"] .exit[data-exit]');
      }],
      ["run-slow-flag", "/run/" + slowRun, async () => {
        await page.waitForSelector('#slow-tasks [data-slow="work"]', { timeout: 30000 });
        await page.$eval("#slow-tasks", (e) => e.scrollIntoView({ block: "center" }));
      }],
      ["run-10000", "/run/" + big, () => page.waitForSelector("#page-run.loaded", { timeout: 30000 })],
      ["execution", `/exec/${wide}.l2_t5`, () => page.waitForFunction(() =>
        document.querySelector("#log")?.textContent.includes("loaded 1200 rows") &&
        document.querySelectorAll("#exec-attempts tr.attempt").length === 2)],
      ["workers", "/workers", () => page.waitForSelector('#workers-list tr[data-worker="w-gpu"]')],
      ["pipelines", "/pipelines", () => page.waitForSelector('#pipelines-list tr[data-pipeline="web.wide"]')],
      ["pipeline", "/pipelines?name=web.wide", () => page.waitForSelector("#page-pipeline.loaded #versions-table")],
    ];
    let blocking = 0;
    for (const [name, url, ready] of shots) {
      if (only && !only.has(name)) continue;
      await page.goto(base + url);
      await ready();
      await page.mouse.move(0, 0);
      await page.screenshot({ path: path.join(SHOTS, name + ".png") });
      const a11y = await axeCheck(page);
      blocking += a11y.blocking.length;
      console.log(`${name}: ${path.join(SHOTS, name + ".png")}; axe: ${a11y.blocking.length} serious or critical, ${a11y.minor} minor or moderate`);
      if (a11y.blocking.length) console.log(describe(a11y.blocking));
    }
    process.exitCode = blocking ? 1 : 0;
  } finally {
    await browser?.close();
    proxy?.close();
    receiver.close();
    cluster.stopAll();
  }
}

main().catch((e) => {
  console.error(e);
  process.exitCode = 1;
});
