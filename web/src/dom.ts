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
