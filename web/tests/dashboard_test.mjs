// The dashboard in a real browser: Debian's chromium, headless, driven by
// playwright-core (never a downloaded browser) against real apollo11-node
// processes. Registered in ctest as dashboard_browser_test (label cluster).
// Every page is also checked by axe-core (a11y.mjs); the nodes, the CLI and
// the big pipelines come from harness.mjs, shared with screenshots.mjs.
//
// Usage: node dashboard_test.mjs --node BIN --cli BIN --out DIR [--chromium PATH]
//                                [--load-budget-ms N] [--assets DIR] [--perf [--window S]]
//   --out   scratch state dirs and the screenshots (one PNG per page)
//   --load-budget-ms  the 10,000-task page's load target (2000; a sanitizer
//           build passes more)
//   --assets  serve the pages' assets from DIR (the dist/ of
//           scripts/build-dashboard.sh's esbuild step) instead of the node's
//           bundle: to test web/src changes before the node is rebuilt
//   --perf  instead of the tests, measure 10 pages on an active 10,000-task
//           run: coordinator CPU and API requests per second
import { chromium } from "playwright-core";
import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import assert from "node:assert/strict";
import { axeCheck, describe } from "./a11y.mjs";
import { assetsProxy, bigPipeline as bigPipelineText, Cluster, json, parseArgs, waitFor, widePipeline } from "./harness.mjs";

const args = parseArgs(process.argv.slice(2));
const OUT = path.resolve(args.out ?? "dashboard-test");
const CHROMIUM = args.chromium ?? "/usr/bin/chromium";
const TOKEN = "dashboard-test-token-0123456789";
let passed = 0, failed = 0;

if (!fs.existsSync(CHROMIUM)) {
  console.error(`no browser at ${CHROMIUM}: install Debian's chromium (scripts/setup.sh --with-tests)`);
  process.exit(1);
}
fs.rmSync(OUT, { recursive: true, force: true });
fs.mkdirSync(path.join(OUT, "screenshots"), { recursive: true });

const cluster = new Cluster({ node: args.node, cli: args.cli, out: OUT });
const startNode = (name, extra) => cluster.startNode(name, extra);
const cli = (...a) => cluster.cli(...a);
const writePipeline = (name, text) => cluster.writePipeline(name, text);
const bigPipeline = (type) => writePipeline("big-" + type, bigPipelineText(type));

async function test(name, f) {
  const t0 = Date.now();
  try {
    await f();
    passed++;
    console.log(`ok - ${name} (${Date.now() - t0} ms)`);
  } catch (e) {
    failed++;
    console.log(`not ok - ${name}: ${e.stack ?? e}`);
  }
}

async function main() {
  const coordinator = startNode("coordinator", [...(args.perf ? ["--role=coordinator"] : ["--role=all", "--slots", "4"]),
    "--http-bind", "127.0.0.1:0", "--bind", "tcp://127.0.0.1:0", "--api-bind", "tcp://127.0.0.1:0",
    "--api-token", TOKEN, "--slow-min", "1s", "--alert-fold-window", "200ms"]);
  const info = await coordinator.listening();
  if (args.perf) {
    await startNode("w-perf", ["--role=worker", "--connect", info.workers, "--worker-id", "w-perf", "--slots", "40",
      "--http-bind", "off"]).listening();
  }
  // --assets DIR: the pages' scripts and styles from DIR, through a local
  // server in front of the node (a dashboard not yet built into it).
  const proxy = args.assets ? await assetsProxy(path.resolve(args.assets), info.http) : null;
  const base = proxy ? "http://127.0.0.1:" + proxy.address().port : "http://" + info.http;
  const api = info.api;
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ["--no-sandbox"] });
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  const requests = [];  // every URL the pages asked for
  page.on("request", (r) => requests.push(r.url()));
  const cspErrors = [];
  page.on("console", (m) => { if (/Content.Security.Policy|Refused to/i.test(m.text())) cspErrors.push(m.text()); });
  const shot = (name) => page.screenshot({ path: path.join(OUT, "screenshots", name + ".png") });
  try {
    if (args.perf) return await perf(browser, base, api);

    await test("the overview loads, with a strict CSP and no violation", async () => {
      const res = await page.goto(base + "/");
      assert.match(res.headers()["content-security-policy"], /script-src 'self'/);
      await page.waitForFunction(() => document.querySelector("#m-waiting-value")?.textContent !== "–");
      await page.waitForSelector("#backlog-value");
      assert.match(await page.textContent("#node-info"), /role all · epoch \d+/);
      assert.deepEqual(cspErrors, []);
    });

    let failedRunId = "", wideRunId = "";  // for the accessibility check
    await test("an alert fired by a failing run is listed under Recent alerts", async () => {
      // A small webhook receiver: the pipeline's own `alerts:` rule posts to it.
      const posts = [];
      const receiver = http.createServer((req, res) => {
        let body = "";
        req.on("data", (d) => (body += d));
        req.on("end", () => { posts.push(body); res.end("ok"); });
      });
      await new Promise((r) => receiver.listen(0, "127.0.0.1", r));
      try {
        const hook = `http://127.0.0.1:${receiver.address().port}/hook`;
        const file = writePipeline("alerting", `version: "1.0"
name: web.alerting
alerts:
  - events: [task_failed, run_failed]
    webhook: "${hook}"
pipeline:
  - id: broken
    type: shell
    command: echo no such table >&2; exit 3
`);
        await page.goto(base + "/");
        await page.waitForSelector("#recent-alerts-body");
        const id = /r\d{8}T[0-9-]+/.exec(await cli("submit", file, "--coordinator", api, "--json"))[0];
        failedRunId = id;
        await waitFor(() => posts.length >= 2, 15000, "the webhook received the alerts");
        const row = `#recent-alerts tr[data-type="retries_exhausted"]`;
        await page.waitForSelector(row, { timeout: 15000 });
        assert.match(await page.textContent(row), /web\.alerting/);
        assert.match(await page.textContent(row), /task broken failed/);
        assert.equal(await page.getAttribute(`${row} a[href="/run/${id}"]`, "href"), "/run/" + id);
        await page.waitForSelector(`${row} [data-delivery="delivered"]`, { timeout: 15000 });
        await page.waitForSelector(`#recent-alerts tr[data-type="run_failed"]`);
        assert.deepEqual(cspErrors, []);
        await shot("overview-alerts");
      } finally {
        receiver.close();
      }
    });

    const live = writePipeline("live", `version: "1.0"
name: web.live
pipeline:
  - id: start
    type: noop
  - id: slow
    type: shell
    command: echo line-from-slow; sleep 8; echo done-slow
    depends_on: start
  - id: flaky
    type: shell
    command: |
      if [ "$APOLLO11_ATTEMPT" -lt 2 ]; then echo "attempt 1 fails" >&2; exit 75; fi
      echo "attempt $APOLLO11_ATTEMPT works"
    retry: { max_retries: 2, delay: 300ms, backoff: fixed, on_exit_codes: [75] }
    depends_on: start
  - id: join
    type: noop
    depends_on: [slow, flaky]
  - id: on_failure
    type: shell
    command: echo never
    depends_on: [{ task: join, on: failure }]
`);
    let runId = "";
    await test("a submitted run appears live on the overview", async () => {
      await page.goto(base + "/");
      await page.waitForSelector("#recent-runs table, #recent-runs");
      const out = await cli("submit", live, "--coordinator", api, "--json");
      runId = /r\d{8}T[0-9-]+/.exec(out)[0];
      await page.waitForSelector(`#recent-runs tr[data-run="${runId}"]`, { timeout: 10000 });
      await shot("overview");
    });

    await test("the run's graph has one node per task, coloured by state as tasks finish", async () => {
      await page.goto(base + "/run/" + runId);
      await page.waitForSelector("#dag .node[data-task]");
      assert.equal(await page.locator("#dag .node[data-task]").count(), 5);
      // Live: the slow task is seen RUNNING (blue), then SUCCESS (green).
      await page.waitForSelector('#dag .node[data-task="slow"][data-state="RUNNING"]', { timeout: 10000 });
      const colour = (task) => page.$eval(`#dag .node[data-task="${task}"] rect`, (r) => getComputedStyle(r).fill);
      assert.equal(await colour("slow"), "rgb(47, 128, 237)");
      await page.waitForSelector('#dag .node[data-task="join"][data-state="SUCCESS"]', { timeout: 30000 });
      await page.waitForSelector('#dag .node[data-task="on_failure"][data-state="SKIPPED"]', { timeout: 5000 });
      for (const t of ["start", "slow", "flaky", "join"]) assert.equal(await colour(t), "rgb(39, 174, 96)");
      assert.equal(await colour("on_failure"), "rgb(223, 227, 232)");
    });

    await test("the Gantt has one bar per attempt", async () => {
      const status = await json(base, "/api/runs/" + runId);
      const attempts = Object.values(status.tasks).reduce((n, t) => n + t.attempts, 0);
      await page.waitForFunction((n) => document.querySelectorAll("#gantt .gantt-attempt").length === n, attempts, { timeout: 10000 });
      assert.equal(await page.locator('#gantt .gantt-attempt[data-exec$=".flaky"]').count(), 2);
      await page.waitForSelector("#task-table .row[data-task]");
      await shot("run");
    });

    await test("the Gantt has a legend, time ticks and its box's width; a run bar starts at the worker's start, as the Duration column", async () => {
      await page.goto(base + "/run/" + runId);
      await page.waitForSelector('#gantt .gantt-attempt[data-exec$=".flaky"] .gantt-run');
      for (const part of ["queued", "run", "wait"]) assert.ok(await page.isVisible(`#gantt-legend [data-part="${part}"]`), part);
      assert.ok(await page.locator("#gantt-axis .gantt-tick").count() >= 3, "at least 3 ticks on the axis");
      const widths = () => page.evaluate(() => [document.querySelector("#gantt").getBoundingClientRect().width,
        document.querySelector("#gantt-box").clientWidth]);
      let [svg, box] = await widths();
      assert.ok(svg > box - 30 && svg <= box, `the Gantt is ${svg} px in a ${box} px box`);
      await page.setViewportSize({ width: 900, height: 900 });
      await page.waitForFunction(() => Math.abs(document.querySelector("#gantt").getBoundingClientRect().width -
        document.querySelector("#gantt-box").clientWidth) < 30 && document.querySelector("#gantt-box").clientWidth < 900);
      await page.setViewportSize({ width: 1280, height: 900 });
      const flaky = (await json(base, "/api/runs/" + runId)).tasks.flaky;
      const bar = `#gantt .gantt-attempt[data-exec$=".flaky"][data-attempt="${flaky.attempts}"]`;
      assert.equal(Number(await page.getAttribute(bar + " .gantt-run", "data-start-us")), flaky.started_at_us);
      assert.equal(Number(await page.getAttribute(bar + " .gantt-run", "data-end-us")), flaky.finished_at_us);
      // The queue part ends where the run part starts.
      const [queueEnd, runStart] = await page.$eval(bar, (g) => {
        const q = g.querySelector(".gantt-queued"), r = g.querySelector(".gantt-run");
        return [Number(q.getAttribute("x")) + Number(q.getAttribute("width")), Number(r.getAttribute("x"))];
      });
      assert.ok(Math.abs(queueEnd - runStart) < 0.01, `queue ends at ${queueEnd}, run starts at ${runStart}`);
      const duration = (await page.textContent('#task-table .row[data-task="flaky"] > span:last-child')).trim();
      assert.ok(duration && (await page.textContent(bar + " .gantt-dur")).includes(duration),
        `the bar's label says the table's ${duration}`);
    });

    await test("a 300-task graph fits a 1366x768 screen on open, with arrowheads, edges styled by condition, zoom, search and hover", async () => {
      const file = writePipeline("wide", widePipeline());
      const id = /r\d{8}T[0-9-]+/.exec(await cli("submit", file, "--coordinator", api, "--json"))[0];
      wideRunId = id;
      await page.setViewportSize({ width: 1366, height: 768 });
      try {
        await page.goto(base + "/run/" + id);
        await page.waitForSelector("#page-run.loaded");
        assert.equal(await page.locator("#dag .node[data-task]").count(), 300);
        const outside = () => page.evaluate(() => {
          const v = document.querySelector("#dag").getBoundingClientRect();
          return [...document.querySelectorAll("#dag .node")].filter((n) => {
            const r = n.getBoundingClientRect();
            return r.left < v.left - 0.5 || r.right > v.right + 0.5 || r.top < v.top - 0.5 || r.bottom > v.bottom + 0.5;
          }).length;
        });
        assert.equal(await outside(), 0, "every task's box is in view");
        const view = await page.$eval("#dag", (e) => e.getBoundingClientRect().toJSON());
        assert.ok(view.bottom - view.top <= 768, "the graph's box fits the screen's height");
        // Arrowheads on every edge, by condition; failure, timeout and done drawn apart from success.
        const edges = await page.$$eval("#dag path.edge", (es) => es.map((e) => ({
          on: e.dataset.on, marker: e.getAttribute("marker-end"), dash: getComputedStyle(e).strokeDasharray, stroke: getComputedStyle(e).stroke })));
        assert.ok(edges.length > 300);
        for (const e of edges) assert.equal(e.marker, `url(#arrow-${e.on})`);
        assert.equal(await page.locator("#dag marker#arrow-success path").count(), 1);
        const style = (on) => edges.find((e) => e.on === on);
        for (const on of ["failure", "timeout", "done"]) {
          assert.ok(style(on), "an edge on " + on);
          assert.notEqual(style(on).dash, style("success").dash, on + " is dashed unlike success");
        }
        assert.notEqual(style("failure").stroke, style("success").stroke);
        assert.equal(await page.locator("#graph-legend .legend-edge").count(), 4);
        // Zoom by button and key, back by Fit.
        const zoom = () => page.$eval("#dag", (e) => Number(e.dataset.zoom));
        const fitted = await zoom();
        const transform = () => page.getAttribute("#dag .viewport", "transform");
        const before = await transform();
        await page.click("#graph-zoom-in");
        assert.ok((await zoom()) > fitted);
        assert.notEqual(await transform(), before);
        await page.focus("#dag");
        await page.keyboard.press("-");
        await page.keyboard.press("-");
        assert.ok((await zoom()) < fitted * 1.25);
        await page.click("#graph-fit");
        assert.equal(await transform(), before);
        // Hover lights what a task waits for and what waits for it.
        await page.hover('#dag .node[data-task="l6_t0"]');
        const lit = (task) => page.$eval(`#dag .node[data-task="${task}"]`, (n) => [...n.classList].filter((c) => c.startsWith("hl-")).join(""));
        assert.equal(await lit("l6_t0"), "hl-self");
        assert.equal(await lit("l5_t0"), "hl-up");
        assert.equal(await lit("l0_t1"), "hl-up");
        assert.equal(await lit("l7_t0"), "hl-down");
        assert.equal(await lit("l3_t10"), "");
        assert.match(await page.textContent("#graph-card"), /l6_t0/);
        // Search focuses a task and brings it into view.
        await page.fill("#graph-search", "l12_t7");
        await page.press("#graph-search", "Enter");
        await page.waitForFunction(() => document.querySelector("#dag").dataset.found === "l12_t7");
        assert.equal(await page.evaluate(() => document.activeElement?.getAttribute("data-task")), "l12_t7");
        assert.ok((await zoom()) >= 1, "zoomed in to read it");
        const box = await page.$eval('#dag .node[data-task="l12_t7"]', (n) => n.getBoundingClientRect().toJSON());
        const now = await page.$eval("#dag", (e) => e.getBoundingClientRect().toJSON());
        assert.ok(box.left >= now.left && box.right <= now.right && box.top >= now.top && box.bottom <= now.bottom);
        await page.click("#graph-fit");
        await page.mouse.move(0, 0);
        await page.$eval("#graph-box", (e) => e.scrollIntoView());
        await shot("run-300");
      } finally {
        await page.setViewportSize({ width: 1280, height: 900 });
      }
    });

    await test("the attempt selector shows attempt 1's stderr of a task that succeeded on attempt 3, with its exit code and reason", async () => {
      const file = writePipeline("thrice", `version: "1.0"
name: web.thrice
pipeline:
  - id: thrice
    type: shell
    command: |
      if [ "$APOLLO11_ATTEMPT" -lt 3 ]; then echo "attempt $APOLLO11_ATTEMPT fails" >&2; exit 75; fi
      echo "attempt $APOLLO11_ATTEMPT works"
    retry: { max_retries: 2, delay: 100ms, backoff: fixed, on_exit_codes: [75] }
`);
      const id = /r\d{8}T[0-9-]+/.exec(await cli("submit", file, "--coordinator", api, "--json", "--wait"))[0];
      await page.goto(base + "/exec/" + id + ".thrice");
      await page.waitForFunction(() => document.querySelectorAll("#log-attempt option").length === 3);
      await page.waitForFunction(() => document.querySelector("#log")?.textContent.includes("attempt 3 works"));
      assert.match(await page.textContent("#attempt-outcome"), /SUCCESS exit 0/);
      await page.selectOption("#log-stream", "err");
      await page.selectOption("#log-attempt", "1");
      await page.waitForFunction(() => document.querySelector("#log")?.textContent.includes("attempt 1 fails"));
      assert.match(await page.textContent("#attempt-outcome"), /RETRYING exit 75 · attempt 1 failed .*exit.* 75.*retry 1 of 2/);
      assert.match(page.url(), /\?attempt=1&stream=err$/);
      await page.click('#exec-attempts button.show-attempt[data-attempt="2"]');
      await page.waitForFunction(() => /^attempt 2 fails\s*$/.test(document.querySelector("#log")?.textContent ?? ""));
      // Times to the millisecond, as the trace has them.
      assert.match(await page.textContent("#exec-history tr.transition td.time"), /\d\d:\d\d:\d\d\.\d{3}$/);
      assert.match(await page.textContent("#exec-attempts tr.attempt td.time"), /\.\d{3}$/);
      await shot("execution-attempts");
    });

    await test("an execution page shows its history and log lines", async () => {
      await page.goto(base + "/exec/" + runId + ".flaky");
      await page.waitForFunction(() => document.querySelectorAll("#exec-history tr.transition").length >= 6);
      assert.equal(await page.locator("#exec-attempts tr.attempt").count(), 2);
      await page.waitForFunction(() => document.querySelector("#log")?.textContent.includes("attempt 2 works"));
      await page.selectOption("#log-stream", "err");
      await page.goto(base + "/exec/" + runId + ".slow");
      await page.waitForFunction(() => /line-from-slow[\s\S]*done-slow/.test(document.querySelector("#log")?.textContent ?? ""));
      await page.waitForFunction(() => (document.querySelector("#trace")?.textContent ?? "").includes("started"));
      await shot("execution");
    });

    await test("a run whose failure an on: branch handled shows as succeeded with a handled failure", async () => {
      const file = writePipeline("handled", 'version: "1.0"\nname: web.handled\npipeline:\n' +
        "  - id: load\n    type: shell\n    command: exit 3\n" +
        "  - id: cleanup\n    type: noop\n    depends_on: [{ task: load, on: failure }]\n");
      const out = await cli("submit", file, "--coordinator", api, "--json", "--wait");
      const id = /r\d{8}T[0-9-]+/.exec(out)[0];
      const status = await json(base, "/api/v1/runs/" + id);
      assert.equal(status.state, "SUCCESS");
      assert.equal(status.handled_failures, 1);
      assert.equal(status.tasks.load.handled, true);
      await page.goto(base + "/run/" + id);
      await page.waitForSelector('#run-head .handled[data-handled="1"]');
      assert.match(await page.textContent("#run-head"), /SUCCESS 1 handled failure/);
      await page.waitForSelector('#task-table .row[data-task="load"] .handled');
      await page.goto(base + "/runs");
      await page.waitForSelector(`tr[data-run="${id}"] .handled`);
    });

    await test("a timed-out task's Exit says the signal that ended it, as its execution page does", async () => {
      const file = writePipeline("timeout", 'version: "1.0"\nname: web.timeout\npipeline:\n' +
        "  - id: stuck\n    type: shell\n    command: sleep 30\n    timeout: 1s\n" +
        "  - id: after\n    type: noop\n    depends_on: [{ task: stuck, on: timeout }]\n");
      const id = /r\d{8}T[0-9-]+/.exec(await cli("submit", file, "--coordinator", api, "--json", "--wait"))[0];
      const stuck = (await json(base, "/api/runs/" + id)).tasks.stuck;
      assert.equal(stuck.state, "TIMEOUT");
      assert.ok(stuck.exit_code === -15 || stuck.exit_code === -9, "killed by SIGTERM or SIGKILL: " + stuck.exit_code);
      const name = stuck.exit_code === -15 ? "signal 15 (SIGTERM)" : "signal 9 (SIGKILL)";
      await page.goto(base + "/run/" + id);
      const cell = '#task-table .row[data-task="stuck"] .exit';
      await page.waitForSelector(cell + "[data-exit]");
      assert.equal(await page.textContent(cell), name);
      await page.goto(base + "/exec/" + id + ".stuck");
      await page.waitForSelector("#exec-attempts tr.attempt");
      assert.ok((await page.textContent("#exec-summary")).includes(name));
      assert.ok((await page.textContent("#exec-attempts tr.attempt")).includes(name));
    });

    await test("a running task's output is tailed live; without the token there is no cancel and the API refuses it, with it the run is canceled", async () => {
      const long = writePipeline("long", 'version: "1.0"\nname: web.long\npipeline:\n  - id: wait\n    type: shell\n    command: echo tick-1; sleep 60\n');
      const out = await cli("submit", long, "--coordinator", api, "--json");
      const id = /r\d{8}T[0-9-]+/.exec(out)[0];
      // The live tail: the running task's first line, before it ends.
      await page.goto(base + "/exec/" + id + ".wait");
      await page.waitForFunction(() => (document.querySelector("#log")?.textContent ?? "").includes("tick-1"), null, { timeout: 10000 });
      assert.match(await page.textContent("#log-meta"), /\(live\)/);
      page.on("dialog", (d) => d.accept());
      await page.goto(base + "/run/" + id);
      await page.waitForSelector('#dag .node[data-task="wait"][data-state="RUNNING"]', { timeout: 10000 });
      // Anonymous may not cancel here: the button is not shown, and the
      // route refuses the page's request anyway.
      await page.waitForSelector("#cancel", { state: "attached" });
      assert.equal(await page.isVisible("#cancel"), false);
      assert.equal(await page.isVisible("#rerun-failed"), false);
      const refused = await page.evaluate(async (url) => (await fetch(url, { method: "POST", body: "" })).status,
        base + "/api/runs/" + id + "/cancel");
      assert.ok(refused === 401 || refused === 403, "anonymous cancel answered " + refused);
      assert.equal((await json(base, "/api/runs/" + id)).state, "RUNNING");
      // A wrong token is checked with the node and not kept.
      await page.fill("#token", TOKEN + "-wrong");
      await page.click("#login button[type=submit]");
      await page.waitForFunction(() => (document.querySelector("#login-msg")?.textContent ?? "").includes("matches no principal"));
      assert.equal(await page.evaluate(() => sessionStorage.getItem("apollo11.token")), null);
      await page.fill("#token", TOKEN);
      await page.click("#login button[type=submit]");
      await page.waitForFunction(() => (document.querySelector("#signed-in")?.textContent ?? "").includes("signed in as api-token (admin)"));
      await page.click("#cancel");
      await page.waitForSelector('#run-head .state[data-state="CANCELED"]', { timeout: 15000 });
      // Rerun what did not succeed: a new run, linked to this one, opens.
      await page.click("#rerun-failed");
      await page.waitForFunction((old) => location.pathname.startsWith("/run/") && !location.pathname.endsWith(old), id);
      await page.waitForFunction((old) => (document.querySelector("#rerun-of")?.textContent ?? "").includes(old), id);
      await page.click("#cancel");
      await page.waitForSelector('#run-head .state[data-state="CANCELED"]', { timeout: 15000 });
      await page.click("#logout");
    });

    await test("a slow-task flag is answered from the run page", async () => {
      const mark = path.join(OUT, "slowpoke.mark");
      const file = writePipeline("slowpoke", `version: "1.0"
name: web.slowpoke
pipeline:
  - id: work
    type: shell
    command: if [ -f ${mark} ]; then sleep 60; else touch ${mark}; fi
`);
      const first = /r\d{8}T[0-9-]+/.exec(await cli("submit", file, "--coordinator", api, "--json", "--wait"))[0];
      assert.equal((await json(base, "/api/runs/" + first)).state, "SUCCESS");
      const id = /r\d{8}T[0-9-]+/.exec(await cli("submit", file, "--coordinator", api, "--json"))[0];
      await page.goto(base + "/run/" + id);
      await page.fill("#token", TOKEN);
      await page.click("#login button[type=submit]");
      await page.waitForSelector("#signed-in");
      await page.waitForSelector('#slow-tasks [data-slow="work"]', { timeout: 20000 });
      await shot("run-slow-flag");
      await page.click('#slow-tasks [data-slow="work"] button.danger');
      await page.waitForSelector('#dag .node[data-task="work"][data-state="FAILED"]', { timeout: 15000 });
      await page.click("#logout");
    });

    await test("a worker that joins appears on the workers page", async () => {
      await page.goto(base + "/workers");
      await page.waitForSelector("#workers-list tr[data-worker]");
      startNode("w-late", ["--role=worker", "--connect", info.workers, "--worker-id", "w-late", "--slots", "2",
        "--labels", "gpu", "--http-bind", "off"]);
      await page.waitForSelector('#workers-list tr[data-worker="w-late"]', { timeout: 15000 });
      await shot("workers");
    });

    await test("the Workers page's numbers equal /metrics at the same moment, with 3 long tasks running", async () => {
      // Three tasks that run long enough for both reads; the two workers
      // (the node's 4 slots, w-late's 2) hold nothing else by now.
      const file = writePipeline("three", 'version: "1.0"\nname: web.three\npipeline:\n' +
        [1, 2, 3].map((i) => `  - id: s${i}\n    type: shell\n    command: sleep 12\n`).join(""));
      const id = /r\d{8}T[0-9-]+/.exec(await cli("submit", file, "--coordinator", api, "--json"))[0];
      await waitFor(async () => Object.values((await json(base, "/api/runs/" + id)).tasks)
        .every((t) => t.state === "RUNNING"), 10000, "the 3 tasks RUNNING");
      // A RUNNING task has no exit code yet: the table's Exit is empty.
      await page.goto(base + "/run/" + id);
      await page.waitForSelector('#task-table .row[data-task="s1"]');
      assert.equal(await page.textContent('#task-table .row[data-task="s1"] .exit'), "");
      await page.goto(base + "/workers");
      await page.waitForSelector('#workers-list tr[data-worker="w-late"]');
      // What the page shows: its totals line, and the sums of its rows.
      const shown = () => page.evaluate(() => {
        const value = (sel) => Number(document.querySelector(sel)?.dataset.value);
        const sum = (cls) => [...document.querySelectorAll(`#workers-list tr[data-worker] td.${cls}`)]
          .reduce((n, td) => n + Number(td.textContent), 0);
        const rows = [...document.querySelectorAll("#workers-list tr[data-worker]")];
        return {
          workers: value("#workers-count"), slots: value("#workers-slots"), running: value("#workers-running"),
          free: value("#workers-free"), queued: value("#workers-queued"),
          rows: { slots: sum("slots"), running: sum("running"), free: sum("free"), queued: sum("queued") },
          busy: rows.filter((r) => Number(r.querySelector("td.running").textContent) +
            Number(r.querySelector("td.queued").textContent) > 0).length,
        };
      });
      const metric = (text, name, labels = "") => {
        const line = text.split("\n").find((l) => l.startsWith(name + (labels ? `{${labels}}` : "") + " "));
        assert.ok(line, `${name}{${labels}} in /metrics`);
        return Number(line.split(" ").pop());
      };
      // Read the page, then /metrics, then the page again: a moment when
      // the page did not change across the metrics read is "the same moment".
      let last = "";
      const agreed = await waitFor(async () => {
        const before = await shown();
        const text = await (await fetch(base + "/metrics")).text();
        const after = await shown();
        const m = {
          workers: metric(text, "apollo11_workers", 'state="busy"') + metric(text, "apollo11_workers", 'state="idle"'),
          busy: metric(text, "apollo11_workers", 'state="busy"'),
          slots: metric(text, "apollo11_cluster_slots"),
          free: metric(text, "apollo11_cluster_slots_free"),
          held: metric(text, "apollo11_executions", 'state="running"'),
        };
        last = JSON.stringify({ page: after, metrics: m });
        if (JSON.stringify(before) !== JSON.stringify(after)) return null;
        const p = after;
        return p.workers === m.workers && p.busy === m.busy && p.slots === m.slots && p.free === m.free &&
          p.running + p.queued === m.held && p.running === 3 ? { p, m } : null;
      }, 8000, "the Workers page and /metrics to agree").catch((e) => { throw new Error(e.message + ": " + last); });
      const { p } = agreed;
      assert.deepEqual(p.rows, { slots: p.slots, running: p.running, free: p.free, queued: p.queued });
      assert.equal(p.slots, 6);
      assert.equal(p.free, 3);
      assert.equal(p.queued, 0);
      assert.match(await page.textContent("#workers-totals"), /2 workers .* 6 slots: 3 executing, 3 free/);
      await shot("workers-busy");
    });

    await test("the runs and pipelines pages list what the API has", async () => {
      await page.goto(base + "/runs?state=SUCCESS");
      await page.waitForSelector(`#runs-list tr[data-run="${runId}"]`);
      await page.selectOption("#f-state", "CANCELED");
      await page.waitForFunction(() => !document.querySelector(`#runs-list tr[data-run]`)?.textContent.includes("web.live"));
      await page.selectOption("#f-state", "");
      // The filters are the server's (GET /api/v1/runs): a domain prefix
      // keeps this run, another one leaves nothing.
      await page.fill("#f-domain", "web.");
      await page.waitForSelector(`#runs-list tr[data-run="${runId}"]`);
      await page.fill("#f-domain", "zzz.");
      await page.waitForFunction(() => document.querySelector("#runs-list")?.textContent.includes("No run matches"));
      await page.fill("#f-domain", "");
      await page.waitForSelector(`#runs-list tr[data-run="${runId}"]`);
      assert.ok(requests.some((u) => u.includes("/api/v1/runs?") && u.includes("prefix=zzz.")),
        "the Runs page asks the server to filter");
      await shot("runs");
      await page.goto(base + "/pipelines");
      await page.waitForSelector('#pipelines-list tr[data-pipeline="web.live"]');
      assert.match(await page.textContent("#pipelines-about"), /versions and their diff/);
      await shot("pipelines");
    });

    // The pipeline page (/pipelines?name=NAME): registered pipelines,
    // operated as the admin token, then looked at as a viewer.
    const signIn = async () => {
      if (await page.isVisible("#signed-in")) return;
      await page.fill("#token", TOKEN);
      await page.click("#login button[type=submit]");
      await page.waitForSelector("#signed-in");
    };
    const pipelineEntry = async (name) => (await json(base, "/api/v1/pipelines")).find((p) => p.name === name);
    const formV1 = `version: "1.0"
name: web.form
params:
  count: "3"
  ratio: "0.5"
  flag: "false"
  who: "world"
pipeline:
  - id: greet
    type: shell
    command: echo "hello \${params.who} \${params.count}"
`;
    await cli("pipelines", "add", writePipeline("form-v1", formV1), "--coordinator", api);
    await cli("pipelines", "add", writePipeline("form-v2", formV1.replace('echo "hello', 'echo "good day')), "--coordinator", api);

    await test("the pipeline page's trigger form starts a run with the params typed, and links to it", async () => {
      await page.goto(base + "/pipelines");
      await signIn();
      await page.click('#pipelines-list tr[data-pipeline="web.form"] a[href="/pipelines?name=web.form"]');
      await page.waitForSelector("#page-pipeline.loaded #param-count");
      assert.equal(await page.inputValue("#param-count"), "3");
      assert.equal(await page.getAttribute("#param-count", "type"), "number");
      assert.equal(await page.inputValue("#param-flag"), "false");
      await page.fill("#param-count", "7");
      await page.fill("#param-who", "Ann Lee");
      await page.selectOption("#param-flag", "true");
      await page.fill("#trigger-key", "form-key-1");
      await page.click("#trigger-submit");
      await page.waitForSelector("#trigger-run");
      const id = (await page.getAttribute("#trigger-run", "href")).replace("/run/", "");
      assert.match(await page.textContent("#trigger-msg"), /started run .* of version 2/);
      const run = await json(base, "/api/v1/runs/" + id);
      assert.deepEqual(run.params, { count: "7", flag: "true", ratio: "0.5", who: "Ann Lee" });
      // The same key again answers the run it started.
      await page.click("#trigger-submit");
      await page.waitForFunction(() => /already exists/.test(document.querySelector("#trigger-msg")?.textContent ?? ""));
      assert.equal(await page.getAttribute("#trigger-run", "href"), "/run/" + id);
      // A value not of its param's type: the node's refusal is shown.
      await page.fill("#trigger-key", "");
      await page.fill("#param-count", "1.5");
      await page.click("#trigger-submit");
      await page.waitForFunction(() => document.querySelector("#trigger-msg")?.dataset.ok === "false");
      assert.match(await page.textContent("#trigger-msg"), /refused \(400\).*'1\.5' is not an integer/);
      await shot("pipeline-trigger");
    });

    await test("the pipeline page lists the versions and diffs v1 against v2 to the changed line", async () => {
      await page.goto(base + "/pipelines?name=web.form");
      await page.waitForSelector('#versions-table tr[data-version="2"]');
      assert.match(await page.textContent('#versions-table tr[data-version="2"]'), /active/);
      assert.doesNotMatch(await page.textContent('#versions-table tr[data-version="1"]'), /active/);
      await page.selectOption("#diff-from", "1");
      await page.selectOption("#diff-to", "2");
      await page.click("#diff-show");
      await page.waitForSelector("#diff-table");
      const rows = (op) => page.$$eval(`#diff-table tr[data-op="${op}"] td.code`, (tds) => tds.map((t) => t.textContent.trim()));
      assert.deepEqual(await rows("del"), ['"command": "echo \\"hello ${params.who} ${params.count}\\"",']);
      assert.deepEqual(await rows("ins"), ['"command": "echo \\"good day ${params.who} ${params.count}\\"",']);
      assert.match(await page.textContent("#diff-summary"), /1 line removed, 1 added/);
      assert.match(await page.textContent("#diff-table .diff-hunk"), /\.tasks\.greet\.command/);
      await shot("pipeline-diff");
    });

    await test("pause then unpause from the pipeline page", async () => {
      await page.goto(base + "/pipelines?name=web.form");
      await page.waitForSelector('#pipeline-state[data-state="active"]');
      await page.click("#pipeline-pause");
      await page.waitForSelector('#pipeline-state[data-state="paused"]');
      assert.match(await page.textContent("#pipeline-msg"), /web\.form paused/);
      assert.equal((await pipelineEntry("web.form")).paused, true);
      await page.click("#pipeline-unpause");
      await page.waitForSelector('#pipeline-state[data-state="active"]');
      assert.match(await page.textContent("#pipeline-msg"), /web\.form unpaused/);
      assert.equal((await pipelineEntry("web.form")).paused, false);
    });

    await test("backfill: the preview lists an hourly schedule's times over a past 3-hour range, Start queues them", async () => {
      await cli("pipelines", "add", writePipeline("hourly", `version: "1.0"
name: web.hourly
schedule: "0 * * * *"
catchup: none
overlap: queue
max_active_runs: 3
pipeline:
  - id: a
    type: noop
`), "--coordinator", api);
      const hour = 3600 * 1000;
      const from = Math.floor(Date.now() / hour) * hour - 5 * hour;
      const iso = (t) => new Date(t).toISOString().replace(".000Z", "Z");
      await waitFor(async () => (await pipelineEntry("web.hourly"))?.schedule?.next_fire, 5000, "the schedule's next fire");
      await page.goto(base + "/pipelines?name=web.hourly");
      await page.waitForSelector("#schedule-table");
      assert.match(await page.textContent("#schedule-next"), /\(in \d+/);
      await page.fill("#backfill-from", iso(from));
      await page.fill("#backfill-to", iso(from + 2 * hour));
      await page.click("#backfill-preview");
      await page.waitForSelector("#backfill-list li");
      const times = await page.$$eval("#backfill-list li", (lis) => lis.map((l) => Date.parse(l.dataset.time)));
      assert.deepEqual(times, [from, from + hour, from + 2 * hour]);
      assert.match(await page.textContent("#backfill-msg"), /would queue 3 runs/);
      assert.equal((await json(base, "/api/v1/pipelines/web.hourly")).fires, undefined, "the preview queued nothing");
      await shot("pipeline-backfill-preview");
      await page.click("#backfill-start");
      await page.waitForSelector('#backfill-msg[data-queued="3"]');
      const fires = await waitFor(async () => {
        const f = (await json(base, "/api/v1/pipelines/web.hourly")).fires ?? [];
        return f.length === 3 && f.every((x) => x.run_id) ? f : null;
      }, 10000, "three backfilled runs");
      assert.deepEqual(fires.map((f) => Date.parse(f.scheduled_at)).sort(), [from, from + hour, from + 2 * hour]);
      for (const f of fires) assert.equal(f.origin, "backfill");
      await page.goto(base + "/pipelines?name=web.hourly");
      await page.waitForFunction(() => document.querySelectorAll("#fires tr[data-fire] a").length === 3);
      await page.goto(base + "/pipelines");
      // The list is drawn after its answer arrives: wait for it, then look.
      await page.waitForSelector('#pipelines-list tr[data-pipeline="web.hourly"]');
      assert.ok(await page.isVisible('#pipelines-list tr[data-pipeline="web.hourly"] .next-fire time'));
    });

    await test("an admin removes a pipeline from its page, after a confirm", async () => {
      await cli("pipelines", "add", writePipeline("gone", 'version: "1.0"\nname: web.gone\npipeline:\n  - id: a\n    type: noop\n'),
        "--coordinator", api);
      await page.goto(base + "/pipelines?name=web.gone");
      await page.waitForSelector('#pipeline-state[data-state="active"]');
      let asked = "";
      page.once("dialog", (d) => { asked = d.message(); d.accept().catch(() => {}); });
      await page.click("#pipeline-remove");
      await page.waitForSelector('#pipeline-state[data-state="removed"]');
      assert.match(asked, /Remove web\.gone/);
      assert.match(await page.textContent("#pipeline-msg"), /web\.gone removed/);
      assert.equal((await pipelineEntry("web.gone")).removed, true);
    });

    await test("a viewer sees the pipeline page without any action", async () => {
      await page.goto(base + "/pipelines?name=web.hourly");
      if (await page.isVisible("#logout")) await page.click("#logout");
      await page.waitForSelector("#login");
      const who = await json(base, "/api/whoami");
      assert.equal(who.roles, "viewer");
      await page.goto(base + "/pipelines?name=web.hourly");
      await page.waitForSelector("#page-pipeline.loaded #versions-table");
      for (const sel of ["#trigger-form", "#backfill-form", "#pipeline-pause", "#pipeline-remove"]) {
        assert.equal(await page.locator(sel).count(), 1, sel + " is in the page");
        assert.equal(await page.isVisible(sel), false, sel + " is hidden from a viewer");
      }
      assert.ok(await page.isVisible("#schedule-table"));
      await shot("pipeline-viewer");
    });

    // Every page once, on the runs above, as served (the CSP on): axe-core's
    // serious and critical findings fail it; the others are only counted.
    await test("axe-core finds no serious or critical violation on any page", async () => {
      const pages = [
        ["/login (the overview, signed out, with the sign-in form)", "/login", "#recent-runs tr[data-run]"],
        ["runs", "/runs", "#runs-list tr[data-run]"],
        ["a failed run", "/run/" + failedRunId, "#page-run.loaded"],
        ["a 300-task run", "/run/" + wideRunId, "#page-run.loaded"],
        ["a flaky execution", `/exec/${runId}.flaky`, "#exec-attempts tr.attempt"],
        ["workers", "/workers", "#workers-list tr[data-worker]"],
        ["pipelines", "/pipelines", "#pipelines-list tr[data-pipeline]"],
        ["a scheduled pipeline, signed in (its forms)", "/pipelines?name=web.hourly", "#page-pipeline.loaded #backfill-form"],
        ["a pipeline's diff of two versions", "/pipelines?name=web.form", "#page-pipeline.loaded #versions-table"],
      ];
      const found = [];
      for (const [what, url, ready] of pages) {
        await page.goto(base + url);
        if (url.startsWith("/pipelines?")) await signIn();
        await page.waitForSelector(ready);
        if (url.endsWith("web.form")) {
          await page.selectOption("#diff-from", "1");
          await page.selectOption("#diff-to", "2");
          await page.click("#diff-show");
          await page.waitForSelector("#diff-table");
        }
        const { blocking, minor } = await axeCheck(page);
        console.log(`# axe, ${what}: ${blocking.length} serious or critical, ${minor} minor or moderate`);
        if (blocking.length) found.push(`${what} (${url}):\n${describe(blocking)}`);
      }
      await page.click("#logout");
      assert.equal(found.length, 0, "\n" + found.join("\n"));
    });

    await test("under --http-base-path the dashboard and its API live below the base", async () => {
      // A node of its own, as a reverse proxy would serve it at /tools/apollo.
      const based = startNode("based", ["--role=all", "--slots", "2", "--http-bind", "127.0.0.1:0",
        "--bind", "tcp://127.0.0.1:0", "--api-bind", "tcp://127.0.0.1:0", "--http-base-path", "/tools/apollo"]);
      const b = await based.listening();
      const root = "http://" + b.http;
      const file = writePipeline("based", 'version: "1.0"\nname: web.based\npipeline:\n  - id: a\n    type: shell\n    command: echo based\n');
      const out = await cli("submit", file, "--coordinator", b.api, "--json", "--wait");
      const id = /r\d{8}T[0-9-]+/.exec(out)[0];
      assert.equal((await fetch(root + "/api/runs")).status, 404);
      assert.equal((await fetch(root + "/tools/apollo/api/runs/" + id)).status, 200);
      await page.goto(root + "/tools/apollo/");
      await page.click('#nav a[data-nav="runs"]');
      await page.waitForFunction(() => location.pathname === "/tools/apollo/runs");
      await page.waitForSelector(`#runs-list tr[data-run="${id}"]`);
      await page.click(`#runs-list tr[data-run="${id}"] a`);
      await page.waitForFunction((r) => location.pathname === "/tools/apollo/run/" + r, id);
      await page.waitForSelector('#run-head .state[data-state="SUCCESS"]');
      // A reload of a page below the base is served the same page.
      await page.reload();
      await page.waitForSelector('#run-head .state[data-state="SUCCESS"]');
      based.child.kill("SIGTERM");
    });

    await test("a 10,000-task run's page loads in under 2 s", async () => {
      const out = await cli("submit", bigPipeline("noop"), "--coordinator", api, "--json", "--timeout", "60");
      const id = /r\d{8}T[0-9-]+/.exec(out)[0];
      await waitFor(async () => (await json(base, "/api/runs/" + id)).state === "SUCCESS", 120000, "the big run to finish");
      await page.goto(base + "/");
      const t0 = Date.now();
      await page.goto(base + "/run/" + id);
      await page.waitForSelector("#page-run.loaded", { timeout: 30000 });
      const total = Date.now() - t0;
      const inPage = await page.$eval("#page-run", (e) => Number(e.dataset.loadedMs));
      assert.equal(await page.locator("#dag .node.group").count(), 100);
      const phases = await page.$eval("#page-run", (e) => e.dataset.phases);
      console.log(`# 10000-task run page: ${total} ms from navigation to drawn (${inPage} ms in the page script: ${phases})`);
      await shot("run-10000");
      const budget = Number(args["load-budget-ms"] ?? 2000);
      assert.ok(total < budget, `load took ${total} ms (budget ${budget} ms)`);
    });
    assert.deepEqual(cspErrors, [], "CSP violations: " + cspErrors.join("; "));
  } finally {
    await browser.close();
    proxy?.close();
    cluster.stopAll();
  }
  console.log(`${passed} passed, ${failed} failed`);
  process.exitCode = failed ? 1 : 0;
}

// 10 pages on an active 10,000-task run: the coordinator's CPU (a process
// of its own, role=coordinator; the workers elsewhere) and the API requests
// the pages make, against the same window with no page open.
async function perf(browser, base, api) {
  const cpu = (pid) => {
    const f = fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
    return (Number(f[11]) + Number(f[12])) / 100;
  };
  const pid = cluster.children[0].pid;
  const out = await cli("submit", bigPipeline("shell"), "--coordinator", api, "--json", "--timeout", "60");
  const id = /r\d{8}T[0-9-]+/.exec(out)[0];
  const window = Number(args.window ?? 20);
  const measure = async () => {
    const c0 = cpu(pid);
    await new Promise((r) => setTimeout(r, window * 1000));
    return (cpu(pid) - c0) / window;
  };
  await new Promise((r) => setTimeout(r, 3000));
  const idle = await measure();
  let requests = 0, refused = 0;
  const pages = [];
  for (let i = 0; i < 10; i++) {
    const p = await browser.newPage();
    p.on("request", (r) => { if (new URL(r.url()).pathname.startsWith("/api/")) requests++; });
    p.on("response", (r) => { if (r.status() >= 500) refused++; });
    await p.goto(base + "/run/" + id);
    pages.push(p);
  }
  await new Promise((r) => setTimeout(r, 3000));
  const r0 = requests, f0 = refused;
  const busy = await measure();
  const rate = (requests - r0) / window;
  const status = await json(base, "/api/runs/" + id);
  const done = Object.values(status.tasks).filter((t) => t.state === "SUCCESS").length;
  console.log(`# coordinator CPU, no page open: ${(idle * 100).toFixed(1)} % of a core`);
  console.log(`# coordinator CPU, 10 pages open: ${(busy * 100).toFixed(1)} % of a core`);
  console.log(`# API requests from the 10 pages: ${rate.toFixed(1)} per second, ${refused - f0} answered 5xx`);
  console.log(`# run state ${status.state}, ${done} of 10000 tasks done at the end of the window`);
}

main().catch((e) => {
  console.error(e);
  cluster.stopAll();
  process.exitCode = 1;
});
