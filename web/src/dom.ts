// A tiny element builder: text is always set as text, never parsed as HTML.

import { BASE } from "./base";

type Child = Node | string | number | null | undefined | false;
type Attrs = Record<string, string | number | boolean | EventListener | undefined>;

export function h(tag: string, attrs: Attrs = {}, ...children: Child[]): HTMLElement {
  const el = document.createElement(tag);
  setAttrs(el, attrs);
  append(el, children);
  return el;
}

const SVG_NS = "http://www.w3.org/2000/svg";
export function s(tag: string, attrs: Attrs = {}, ...children: Child[]): SVGElement {
  const el = document.createElementNS(SVG_NS, tag);
  setAttrs(el, attrs);
  append(el, children);
  return el;
}

function setAttrs(el: Element, attrs: Attrs): void {
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === false) continue;
    if (typeof v === "function") el.addEventListener(k.replace(/^on/, ""), v);
    else el.setAttribute(k, v === true ? "" : String(v));
  }
}

function append(el: Element, children: Child[]): void {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    el.append(typeof c === "object" ? c : String(c));
  }
}

export function clear(el: Element): void {
  while (el.firstChild) el.removeChild(el.firstChild);
}

export function stateBadge(state: string): HTMLElement {
  return h("span", { class: "state " + state, "data-state": state }, state);
}

// A run's state, and beside a SUCCESS with handled failures the count: the
// run succeeded because on: branches handled its failed tasks.
export function runStateBadge(state: string, handled: number | undefined): HTMLElement | DocumentFragment {
  if (!handled) return stateBadge(state);
  const out = document.createDocumentFragment();
  out.append(stateBadge(state), " ", h("span", {
    class: "handled", "data-handled": handled,
    title: "The run succeeded: a dependent's on: failure, timeout or done branch handled each failed task",
  }, handled === 1 ? "1 handled failure" : `${handled} handled failures`));
  return out;
}

export function link(href: string, text: string): HTMLElement {
  return h("a", { href: BASE + href, "data-link": true }, text);
}

export function fmtTime(iso: string | undefined): string {
  if (!iso) return "";
  const d = new Date(iso);
  return isNaN(d.getTime()) ? iso : d.toLocaleString();
}

// A moment to the millisecond, local time: "2026-01-05 14:03:07.125"
// (fmtTime and fmtUs round to the second; the trace and the journal do not).
export function fmtTimeMs(at: string | number | undefined): string {
  if (at === undefined || at === "" || at === 0) return "";
  const d = typeof at === "number" ? new Date(at / 1000) : new Date(at);
  if (isNaN(d.getTime())) return String(at);
  const p = (n: number, w = 2) => String(n).padStart(w, "0");
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ` +
    `${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}.${p(d.getMilliseconds(), 3)}`;
}

// How a process ended, from its exit code: a negative one is the signal
// that killed it (the worker's convention), except -1, which the engine
// records when no process reported a status (timed out by the coordinator,
// killed by an operator, canceled or refused before it started).
export function fmtExit(code: number | undefined): string {
  if (code === undefined || code === null) return "";
  if (code >= 0) return "exit " + code;
  if (code === -1) return "no exit status (-1)";
  const names: Record<number, string> = { 1: "SIGHUP", 2: "SIGINT", 6: "SIGABRT", 9: "SIGKILL", 11: "SIGSEGV", 15: "SIGTERM" };
  return `signal ${-code}` + (names[-code] ? ` (${names[-code]})` : "");
}

// A task's exit as the task table shows it: only for a state an attempt's
// own end decided (the API gives exit_code for those alone), so RUNNING,
// READY, SKIPPED or CANCELED show none. RETRYING shows its last attempt's.
const EXIT_SHOWN = new Set(["SUCCESS", "FAILED", "TIMEOUT", "RETRYING"]);
export function fmtTaskExit(state: string, code: number | undefined): string {
  if (!EXIT_SHOWN.has(state)) return "";
  if (state === "TIMEOUT" && (code === undefined || code === -1)) return "timed out, no exit status";
  return fmtExit(code);
}

export function fmtUs(us: number | undefined): string {
  if (!us) return "";
  return new Date(us / 1000).toLocaleTimeString();
}

export function fmtMs(ms: number | undefined): string {
  if (ms === undefined || ms === null) return "";
  if (ms < 1000) return ms + " ms";
  if (ms < 60000) return (ms / 1000).toFixed(1) + " s";
  return (ms / 60000).toFixed(1) + " min";
}

export function message(el: HTMLElement, text: string, ok: boolean): void {
  el.className = "msg " + (ok ? "ok" : "error");
  el.textContent = text;
}
