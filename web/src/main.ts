// The dashboard's entry: a client-side router over the node's pages, the
// header (role, epoch, login) and the shared banner.

import { ApiError, credentialsChanged, getJson, post, setToken, token, Who, whoami } from "./api";
import { appPath, BASE } from "./base";
import { clear, h } from "./dom";
import { NodeInfo } from "./types";
import { live } from "./live";
import { Page } from "./page";
import { overviewPage } from "./pages/overview";
import { runsPage } from "./pages/runs";
import { runPage } from "./pages/run";
import { execPage } from "./pages/exec";
import { workersPage } from "./pages/workers";
import { pipelinesPage } from "./pages/pipelines";
import { pipelinePage } from "./pages/pipeline";

let current: Page | undefined;

function route(path: string): { page: () => Page; nav: string } {
  const run = /^\/run\/([^/]+)$/.exec(path);
  if (run) return { page: () => runPage(decodeURIComponent(run[1])), nav: "runs" };
  const exec = /^\/exec\/(.+)$/.exec(path);
  if (exec) return { page: () => execPage(decodeURIComponent(exec[1])), nav: "runs" };
  switch (path) {
    case "/runs":
      return { page: runsPage, nav: "runs" };
    case "/workers":
      return { page: workersPage, nav: "workers" };
    case "/pipelines": {
      // One pipeline's page is /pipelines?name=NAME.
      const name = new URLSearchParams(location.search).get("name");
      return { page: name ? () => pipelinePage(name) : pipelinesPage, nav: "pipelines" };
    }
    default:
      return { page: overviewPage, nav: "overview" };
  }
}

function show(): void {
  current?.stop();
  const main = document.getElementById("main")!;
  clear(main);
  const r = route(appPath(location.pathname));
  for (const a of document.querySelectorAll<HTMLAnchorElement>("#nav a")) {
    a.classList.toggle("active", a.dataset.nav === r.nav);
  }
  current = r.page();
  main.append(current.root);
}

export function navigate(href: string): void {
  history.pushState(null, "", BASE + href);
  show();
}

// Shows what the caller may do: elements marked data-needs="ACTION" are
// hidden (app.css) unless the body's data-may lists ACTION.
function allow(who: Who | undefined): void {
  // One word per action ("read the audit trail" -> read-the-audit-trail).
  document.body.dataset.may = who ? who.may.map((a) => a.replace(/ /g, "-")).join(" ") : "";
}

function signedIn(box: HTMLElement, who: Who, signOut: () => Promise<void>): void {
  clear(box);
  box.append(
    h("span", { id: "signed-in" }, `signed in as ${who.name} (${who.roles || "no role"}) `),
    h("button", { id: "logout", onclick: () => void signOut().then(() => renderAuth()) }, "Sign out"),
  );
}

// The token form, and "Sign in with SSO" when the node has a provider: the
// node runs the provider's sign-in and comes back to this page.
function signInForm(box: HTMLElement, sso: boolean, notice: string): void {
  clear(box);
  const input = h("input", {
    id: "token", type: "password", placeholder: "API token", autocomplete: "off",
  }) as HTMLInputElement;
  const form = h("form", { class: "login", id: "login" }, input, h("button", { type: "submit" }, "Sign in"));
  const message = h("span", { id: "login-msg", role: "status" }, notice);
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const candidate = input.value.trim();
    try {
      const who = await whoami(candidate);
      if (who.via !== "token" && who.via !== "sso") throw new ApiError(401, "no token given");
      setToken(candidate);
      await renderAuth();
    } catch (err) {
      message.textContent = err instanceof ApiError && err.status === 401
        ? "not signed in: that token matches no principal of this node"
        : "not signed in: " + String(err);
    }
  });
  const here = appPath(location.pathname) + location.search;
  const ssoButton = sso ? h("button", {
    id: "sso-login", type: "button",
    onclick: () => location.assign(BASE + "/auth/login?return=" + encodeURIComponent(here)),
  }, "Sign in with SSO") : "";
  box.append(ssoButton, form, message);
}

// The header's sign-in: a token is kept only once the node says whose it
// is (GET /api/whoami); a session cookie is the node's to judge. The header
// names the principal and its role, and the pages show only what it may do.
async function renderAuth(notice = ""): Promise<void> {
  const box = document.getElementById("auth")!;
  const kept = token();
  let who: Who | undefined;
  try {
    who = await whoami(kept);
  } catch (e) {
    if (kept) setToken("");
    notice = e instanceof ApiError && e.status === 401
      ? "your token is no longer valid on this node"
      : "could not check the token: " + String(e);
    try {
      who = await whoami("");
    } catch {
      who = undefined;
    }
  }
  allow(who);
  if (who && kept && (who.via === "token" || who.via === "sso")) {
    return signedIn(box, who, async () => setToken(""));
  }
  if (who && who.via === "session") {
    return signedIn(box, who, async () => {
      await post("/auth/logout");
      credentialsChanged();
    });
  }
  signInForm(box, who?.sign_in ?? false, notice);
}

async function renderNodeInfo(): Promise<void> {
  const el = document.getElementById("node-info")!;
  try {
    const info = await getJson<NodeInfo>("/api/node");
    el.textContent = `role ${info.role ?? "?"} · epoch ${info.epoch ?? "?"}` +
      (info.mutations ? "" : " · read-only (no API tokens)");
  } catch {
    el.textContent = "node unreachable";
  }
}

// The header's "live" / "polling": whether the page is updated by the
// node's live events or polls (and why, in its tooltip).
function liveIndicator(): void {
  const el = h("span", { id: "live-state", class: "live-state", role: "status" });
  document.getElementById("node-info")!.after(el);
  const show = () => {
    const on = live.live;
    el.dataset.state = on ? "live" : "polling";
    el.textContent = on ? "● live" : "○ polling";
    el.setAttribute("aria-label", on ? "Updates: live, pushed by the node" : "Updates: polling");
    el.title = on ? "The pages are updated as the node's live events arrive"
      : "The pages poll the node: " + (live.reason || "the live events are not connected");
  };
  live.onState(show);
  show();
}

document.addEventListener("click", (e) => {
  const a = (e.target as Element).closest("a");
  if (!a || a.origin !== location.origin || e.ctrlKey || e.metaKey || e.button !== 0) return;
  if (BASE && !a.pathname.startsWith(BASE)) return;  // outside the dashboard
  e.preventDefault();
  navigate(appPath(a.pathname) + a.search);
});
window.addEventListener("popstate", show);

liveIndicator();
void renderAuth();
void renderNodeInfo();
show();
