// The dashboard's sign-in through a real OpenID Connect provider, in a real
// browser: oidc-provider from npm (oidc_provider.mjs, its own login and
// consent pages) on a loopback port, a real apollo11-node given
// --oidc-client-id, and Debian's chromium driven by playwright-core.
// Registered in ctest as dashboard_sso_with_oidc_provider (label cluster).
//
// Usage: node sso_test.mjs --node BIN --cli BIN --out DIR [--chromium PATH]
//
// bob (group ops, operator) signs in through the provider's login page and
// triggers a run from the Pipelines page; the session cookie is HttpOnly,
// Secure and SameSite=Strict; alice (viewers, viewer) sees no Trigger and
// gets 403 calling the route anyway; a page of another origin posting with
// bob's cookie is refused; dave (no group) is told he has no role; a
// forged callback and a replayed one sign nobody in; sign-out ends the
// session on the node. The audit trail names bob.
import { chromium } from "playwright-core";
import { spawn } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";

const args = Object.fromEntries(process.argv.slice(2).map((a, i, all) =>
  a.startsWith("--") ? [a.slice(2), all[i + 1] && !all[i + 1].startsWith("--") ? all[i + 1] : true] : null).filter(Boolean));
const NODE = args.node, CLI = args.cli, OUT = path.resolve(args.out ?? "sso-test");
const CHROMIUM = args.chromium ?? "/usr/bin/chromium";
const HERE = path.dirname(fileURLToPath(import.meta.url));
const children = [];
let passed = 0, failed = 0;

fs.rmSync(OUT, { recursive: true, force: true });
fs.mkdirSync(path.join(OUT, "screenshots"), { recursive: true });

function freePort() {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

function run(bin, argv, name) {
  const out = fs.openSync(path.join(OUT, name + ".out"), "w");
  const err = fs.openSync(path.join(OUT, name + ".err"), "w");
  const child = spawn(bin, argv, { stdio: ["ignore", out, err] });
  children.push(child);
  return child;
}

async function waitFor(f, ms, what) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (v) return v;
    if (Date.now() > end) throw new Error("timed out: " + what);
    await new Promise((r) => setTimeout(r, 100));
  }
}

function cli(...a) {
  return new Promise((resolve, reject) => {
    const p = spawn(CLI, a, { stdio: ["ignore", "pipe", "pipe"] });
    let out = "", err = "";
    p.stdout.on("data", (d) => (out += d));
    p.stderr.on("data", (d) => (err += d));
    p.on("close", (code) => (code === 0 ? resolve(out) : reject(new Error(`apollo11 ${a.join(" ")}: ${code} ${err}`))));
  });
}

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

// Signs `user` in through the provider's pages, from the dashboard's
// "Sign in with SSO", and waits to be back on `back` signed in.
async function signIn(page, base, user, back = "/pipelines") {
  await page.goto(base + back);
  await page.click("#sso-login");
  await page.waitForSelector('input[name="login"]', { timeout: 15000 });
  await page.fill('input[name="login"]', user);
  await page.fill('input[name="password"]', "any password: the provider's development login");
  await page.click('button[type="submit"]');
  // The provider's consent page, then back to the node.
  await page.waitForSelector('button[type="submit"]', { timeout: 15000 });
  await page.click('button[type="submit"]');
}

async function main() {
  const providerPort = await freePort();
  const nodePort = await freePort();
  const base = `http://127.0.0.1:${nodePort}`;
  const issuer = `http://127.0.0.1:${providerPort}`;
  const provider = spawn(process.execPath, [path.join(HERE, "oidc_provider.mjs"), String(providerPort),
    path.join(OUT, "provider.pem"), base + "/auth/callback"], { stdio: ["ignore", "pipe", "inherit"] });
  children.push(provider);
  await new Promise((resolve, reject) => {
    provider.stdout.once("data", (d) => (String(d).startsWith("listening") ? resolve() : reject(new Error(String(d)))));
    provider.once("exit", (code) => reject(new Error("the provider exited: " + code)));
  });
  const secret = path.join(OUT, "client-secret");
  fs.writeFileSync(secret, "dashboard-secret\n", { mode: 0o600 });
  run(NODE, ["start", "--role=all", "--state-dir", path.join(OUT, "node"), "--heartbeat", "200ms", "--slots", "2",
    "--http-bind", `127.0.0.1:${nodePort}`, "--bind", "tcp://127.0.0.1:0", "--api-bind", "tcp://127.0.0.1:0",
    "--oidc-issuer", issuer, "--oidc-audience", "apollo11",
    "--oidc-role", "viewers=viewer", "--oidc-role", "ops=operator", "--oidc-role", "admins=admin",
    "--oidc-client-id", "apollo11-dashboard", "--oidc-client-secret-file", secret,
    "--oidc-redirect-url", base + "/auth/callback"], "node");
  const info = await waitFor(() => {
    const text = fs.readFileSync(path.join(OUT, "node.out"), "utf8");
    const nl = text.indexOf("\n");
    return nl > 0 ? JSON.parse(text.slice(0, nl)) : null;
  }, 15000, "the node did not start: " + path.join(OUT, "node.err"));
  const pipeline = path.join(OUT, "sso.yaml");
  fs.writeFileSync(pipeline, 'version: "1.0"\nname: sso.demo\npipeline:\n  - id: hello\n    type: shell\n    command: echo hello\n');
  await cli("pipelines", "add", pipeline, "--coordinator", info.api);

  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ["--no-sandbox"] });
  const bob = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await bob.newPage();
  const shot = (p, name) => p.screenshot({ path: path.join(OUT, "screenshots", name + ".png") });
  let runId = "";
  try {
    await test("an operator signs in through the provider's login page and triggers a run", async () => {
      await page.goto(base + "/pipelines");
      assert.equal(await page.isVisible("#signed-in"), false);
      await signIn(page, base, "bob");
      await page.waitForFunction(() => (document.querySelector("#signed-in")?.textContent ?? "").includes("signed in as bob (operator)"),
        null, { timeout: 15000 });
      assert.equal(new URL(page.url()).pathname, "/pipelines");
      await page.waitForSelector('#pipelines-list tr[data-pipeline="sso.demo"] button.trigger', { state: "visible" });
      await shot(page, "sso-operator-pipelines");
      await page.click('#pipelines-list tr[data-pipeline="sso.demo"] button.trigger');
      await page.waitForFunction(() => location.pathname.startsWith("/run/"), null, { timeout: 15000 });
      runId = decodeURIComponent(new URL(page.url()).pathname.slice("/run/".length));
      await page.waitForSelector('#run-head .state[data-state="SUCCESS"]', { timeout: 20000 });
    });

    await test("the session cookie is HttpOnly, Secure and SameSite=Strict, and scripts cannot read it", async () => {
      // All of them: a URL filter would leave out Secure cookies of http://.
      const cookies = await bob.cookies();
      const session = cookies.find((c) => c.name === "apollo11_session");
      assert.ok(session, "no session cookie: " + JSON.stringify(cookies));
      assert.equal(session.httpOnly, true);
      assert.equal(session.secure, true);
      assert.equal(session.sameSite, "Strict");
      assert.equal(session.path, "/");
      assert.equal(session.domain, "127.0.0.1");
      assert.ok(!cookies.some((c) => c.name === "apollo11_sign_in"), "the sign-in cookie outlived the sign-in");
      assert.equal((await page.evaluate(() => document.cookie)).includes("apollo11_session"), false);
    });

    await test("the audit trail names the signed-in user", async () => {
      const audit = JSON.parse(await cli("audit", "--coordinator", info.api, "--action", "trigger", "--json"));
      const records = audit.records ?? audit;
      const mine = records.filter((r) => r.target?.includes("sso.demo"));
      assert.equal(mine.length, 1, JSON.stringify(records));
      assert.equal(mine[0].principal, "bob");
      assert.equal(mine[0].transport, "http");
      assert.match(mine[0].outcome, new RegExp(runId));
    });

    await test("a page of another origin posting with the session cookie is refused", async () => {
      const other = await bob.newPage();
      // The provider's origin: same site (127.0.0.1), so the Strict cookie
      // goes with the request; the node refuses it by its Origin.
      await other.goto(issuer + "/.well-known/openid-configuration");
      const answered = other.waitForResponse((r) => r.url().startsWith(base + "/api/pipelines/sso.demo/runs"));
      await other.evaluate((url) => fetch(url, { method: "POST", body: "{}", credentials: "include", mode: "no-cors" }).catch(() => {}),
        base + "/api/pipelines/sso.demo/runs");
      const res = await answered;
      assert.equal(res.status(), 403);
      // The page may not read the answer (no CORS); the node says why.
      await waitFor(() => fs.readFileSync(path.join(OUT, "node.err"), "utf8")
        .includes(`a page of another origin (${issuer}, not this node's 127.0.0.1:${nodePort})`), 5000, "the refusal logged");
      const runs = JSON.parse(await cli("runs", "--coordinator", info.api, "--json"));
      assert.equal((runs.runs ?? runs).filter((r) => r.pipeline === "sso.demo").length, 1);
      await other.close();
    });

    await test("a viewer sees no Trigger and is refused 403 calling the route anyway", async () => {
      const alice = await browser.newContext();
      const p = await alice.newPage();
      await signIn(p, base, "alice");
      await p.waitForFunction(() => (document.querySelector("#signed-in")?.textContent ?? "").includes("signed in as alice (viewer)"),
        null, { timeout: 15000 });
      await p.waitForSelector('#pipelines-list tr[data-pipeline="sso.demo"]');
      await p.waitForSelector('#pipelines-list tr[data-pipeline="sso.demo"] button.trigger', { state: "attached" });
      assert.equal(await p.isVisible('#pipelines-list tr[data-pipeline="sso.demo"] button.trigger'), false);
      assert.equal(await p.isVisible('#pipelines-list tr[data-pipeline="sso.demo"] button.pause'), false);
      await shot(p, "sso-viewer-pipelines");
      const status = await p.evaluate(async (url) =>
        (await fetch(url, { method: "POST", body: "{}", headers: { "Content-Type": "application/json" } })).status,
      base + "/api/pipelines/sso.demo/runs");
      assert.equal(status, 403);
      await alice.close();
    });

    await test("a user in no mapped group is told so, and is not signed in", async () => {
      const dave = await browser.newContext();
      const p = await dave.newPage();
      await signIn(p, base, "dave");
      await p.waitForFunction(() => document.body.innerText.includes("Not signed in"), null, { timeout: 15000 });
      assert.match(await p.innerText("body"), /dave signed in at the provider, but none of their groups \(none\) has a role/);
      assert.ok(!(await dave.cookies()).some((c) => c.name === "apollo11_session"));
      await dave.close();
    });

    await test("a forged callback signs nobody in", async () => {
      const res = await fetch(base + "/auth/callback?code=forged&state=forged");
      assert.equal(res.status, 400);
      assert.match(await res.text(), /unknown to the node/);
      assert.equal(res.headers.get("set-cookie")?.includes("apollo11_session=") &&
        !res.headers.get("set-cookie").includes("apollo11_session=;"), false);
    });

    await test("sign-out ends the session on the node, not only in the browser", async () => {
      const cookie = (await bob.cookies()).find((c) => c.name === "apollo11_session").value;
      const before = await (await fetch(base + "/api/whoami", { headers: { Cookie: "apollo11_session=" + cookie } })).json();
      assert.equal(before.name, "bob");
      assert.equal(before.via, "session");
      await page.goto(base + "/");
      await page.waitForSelector("#logout");
      await page.click("#logout");
      await page.waitForSelector("#sso-login");
      const after = await (await fetch(base + "/api/whoami", { headers: { Cookie: "apollo11_session=" + cookie } })).json();
      assert.equal(after.name, "anonymous");
      assert.ok(!(await bob.cookies()).some((c) => c.name === "apollo11_session"));
    });
  } finally {
    await browser.close();
  }
}

try {
  await main();
} catch (e) {
  failed++;
  console.log("not ok - setup: " + (e.stack ?? e));
} finally {
  for (const c of children) c.kill("SIGTERM");
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
