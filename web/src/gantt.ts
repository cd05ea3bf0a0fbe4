// The run's timeline: one row per attempt, its queue time (ready until the
// worker started the process), its run time (the worker's start to end:
// what the task table's Duration column shows) and the retry wait before
// the next, over a time axis with ticks, as wide as its box. Runs too big
// for their full history are drawn on a canvas from each task's latest
// attempt (status times), with the task under the pointer named.

import { clear, fmtMs, h, s } from "./dom";
import { STATE_GLYPH } from "./graph";
import { STATES, TaskStatus, Transition } from "./types";

const ROW = 16, LABEL = 200, AXIS = 22, RIGHT = 56;
const FINAL = new Set(["SUCCESS", "FAILED", "TIMEOUT", "CANCELED", "SKIPPED"]);

export interface Attempt {
  exec: string;
  task: string;
  attempt: number;
  readyAt?: number;
  runAt?: number;
  endAt?: number;
  end?: string;
  waitUntil?: number;
}

export function attemptsOf(history: Transition[]): Attempt[] {
  const byKey = new Map<string, Attempt>();
  const get = (t: Transition): Attempt => {
    const key = t.exec_id + "#" + t.attempt;
    let a = byKey.get(key);
    if (!a) {
      a = { exec: t.exec_id, task: t.task_id, attempt: t.attempt };
      byKey.set(key, a);
    }
    return a;
  };
  for (const t of history) {
    if (t.to === "READY") {
      if (t.from === "RETRYING") {
        const prev = byKey.get(t.exec_id + "#" + (t.attempt - 1));
        if (prev) prev.waitUntil = t.ts_us;
      }
      get(t).readyAt = t.ts_us;
    } else if (t.to === "RUNNING") {
      get(t).runAt = t.ts_us;
    } else if (t.from === "RUNNING" && (FINAL.has(t.to) || t.to === "RETRYING" || t.to === "READY")) {
      const a = get(t);
      a.endAt = t.ts_us;
      a.end = t.to;
    }
  }
  // Only attempts that were placed or queued are bars (SKIPPED tasks never ran).
  return [...byKey.values()].filter((a) => a.runAt !== undefined || a.readyAt !== undefined);
}

// A duration in the units an axis reads best: "250 ms", "1.5 s", "2 min 30 s".
export function fmtSpan(ms: number): string {
  if (ms < 1000) return Math.round(ms) + " ms";
  if (ms < 60000) return +(ms / 1000).toFixed(ms % 1000 ? 1 : 0) + " s";
  const min = Math.floor(ms / 60000), sec = Math.round((ms % 60000) / 1000);
  return sec ? `${min} min ${sec} s` : `${min} min`;
}

// Tick steps, in ms, that read well.
const STEPS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 15000, 30000, 60000,
  120000, 300000, 600000, 900000, 1800000, 3600000, 7200000, 14400000, 43200000, 86400000];

function tickStep(spanMs: number, px: number): number {
  for (const step of STEPS) if ((step / spanMs) * px >= 80) return step;
  const day = STEPS[STEPS.length - 1];
  return day * Math.ceil((spanMs * 80) / px / day);
}

// The time scale of one drawing: run time 0 is `t0` (µs); `left`..`right`
// are the pixels it spans.
class Scale {
  constructor(readonly t0: number, readonly t1: number, readonly left: number, readonly right: number) {}
  x(us: number): number {
    return this.left + ((us - this.t0) / (this.t1 - this.t0)) * (this.right - this.left);
  }
  us(x: number): number {
    return this.t0 + ((x - this.left) / (this.right - this.left)) * (this.t1 - this.t0);
  }
  ticks(): number[] {
    const spanMs = (this.t1 - this.t0) / 1000;
    const step = tickStep(spanMs, this.right - this.left);
    const out: number[] = [];
    for (let ms = 0; ms <= spanMs + 1e-9; ms += step) out.push(ms);
    return out;
  }
}

// The axis above the rows (it stays in view while they scroll).
function axis(width: number, sc: Scale, label: string): SVGElement {
  const svg = s("svg", { class: "gantt-axis", id: "gantt-axis", width, height: AXIS, role: "img",
    "aria-label": `time axis: ${label}, ${fmtSpan((sc.t1 - sc.t0) / 1000)} in all` });
  svg.append(s("text", { x: 4, y: 14, class: "gantt-axis-label" }, label));
  svg.append(s("line", { class: "gantt-axis-line", x1: sc.left, x2: sc.right, y1: AXIS - 1, y2: AXIS - 1 }));
  for (const ms of sc.ticks()) {
    const x = sc.x(sc.t0 + ms * 1000);
    svg.append(s("g", { class: "gantt-tick", "data-ms": ms },
      s("line", { x1: x, x2: x, y1: AXIS - 6, y2: AXIS - 1 }),
      s("text", { x, y: 12, "text-anchor": ms === 0 ? "start" : "middle" }, ms === 0 ? "0" : fmtSpan(ms))));
  }
  return svg;
}

function gridLines(sc: Scale, height: number): SVGElement {
  const g = s("g", { class: "gantt-grid", "aria-hidden": "true" });
  for (const ms of sc.ticks()) {
    const x = sc.x(sc.t0 + ms * 1000);
    g.append(s("line", { x1: x, x2: x, y1: 0, y2: height }));
  }
  return g;
}

function swatch(cls: string): SVGElement {
  return s("svg", { width: 22, height: 10, "aria-hidden": "true" },
    s("rect", { class: cls, x: 0, y: 0, width: 22, height: 10 }));
}

function legend(canvas: boolean): HTMLElement {
  const outcomes = ["SUCCESS", "FAILED", "TIMEOUT", "RUNNING", "RETRYING"].map((st) =>
    h("span", { class: "legend-state" }, swatch("st-" + st), ` ${STATE_GLYPH[st]} ${st.toLowerCase()}`));
  if (canvas) {
    return h("div", { class: "legend gantt-legend", id: "gantt-legend" },
      h("span", {}, "Run time of each task's latest attempt (worker start to end), coloured by its state:"), ...outcomes);
  }
  return h("div", { class: "legend gantt-legend", id: "gantt-legend" },
    h("span", { "data-part": "queued" }, swatch("gantt-queued"), " queued (ready until its worker started it)"),
    h("span", { "data-part": "run" }, "run (the worker's start to end, as the Duration column), by outcome:"), ...outcomes,
    h("span", { "data-part": "wait" }, swatch("gantt-wait"), " retry wait (until the next attempt is ready)"));
}

// The box's drawable width, and a redraw when it changes.
const redraws = new WeakMap<HTMLElement, { width: number; draw: () => void }>();
const observer = typeof ResizeObserver === "undefined" ? undefined : new ResizeObserver((entries) => {
  for (const e of entries) {
    const box = e.target as HTMLElement;
    const r = redraws.get(box);
    if (r && Math.abs(box.clientWidth - r.width) > 2) r.draw();
  }
});
function follow(box: HTMLElement, draw: () => void): void {
  if (!redraws.has(box)) observer?.observe(box);
  redraws.set(box, { width: box.clientWidth, draw });
}

function clock(us: number): string {
  const d = new Date(us / 1000);
  const p = (n: number, w = 2) => String(n).padStart(w, "0");
  return `${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}.${p(d.getMilliseconds(), 3)}`;
}

// `tasks` (the run's status) gives each task's latest attempt the worker's
// start and end, so its run bar is what the task table's Duration says.
export function drawGantt(box: HTMLElement, attempts: Attempt[], nowUs: number,
  tasks: Record<string, TaskStatus> = {}): void {
  follow(box, () => drawGantt(box, attempts, nowUs, tasks));
  clear(box);
  if (!attempts.length) {
    box.append(h("p", { class: "muted" }, "No attempt has started yet."));
    return;
  }
  interface Bar { a: Attempt; queued: number; start?: number; end?: number; worker: boolean }
  const bars: Bar[] = attempts.map((a) => {
    const t = tasks[a.task];
    const latest = t !== undefined && t.exec_id === a.exec && t.attempts === a.attempt;
    const start = latest && t.started_at_us ? t.started_at_us : a.runAt;
    const end = latest && t.finished_at_us ? t.finished_at_us : a.endAt;
    const queued = Math.min(a.readyAt ?? start ?? nowUs, start ?? nowUs);
    return { a, queued, start, end, worker: latest && !!t.started_at_us };
  });
  bars.sort((x, y) => x.queued - y.queued || x.a.task.localeCompare(y.a.task) || x.a.attempt - y.a.attempt);
  const t0 = Math.min(...bars.map((b) => b.queued));
  const t1 = Math.max(...bars.map((b) => Math.max(b.a.waitUntil ?? 0, b.end ?? (b.start !== undefined ? nowUs : b.queued))), t0 + 1000);

  // Focusable, so that a keyboard can scroll it.
  const scroll = h("div", { class: "gantt-scroll", tabindex: 0, role: "region", "aria-label": "Timeline, one row per attempt" });
  box.append(legend(false), scroll);
  const width = Math.max(480, scroll.clientWidth);
  const sc = new Scale(t0, t1, LABEL, width - RIGHT);
  box.insertBefore(axis(width, sc, `from ${clock(t0)}`), scroll);
  const height = bars.length * ROW + 4;
  const svg = s("svg", { id: "gantt", width, height, role: "list", "aria-label": `${bars.length} attempts` });
  svg.append(gridLines(sc, height));
  const labelled = bars.length <= 400;
  bars.forEach((b, i) => {
    const { a } = b;
    const y = 2 + i * ROW;
    const st = b.start === undefined ? "READY" : b.end === undefined ? "RUNNING" : a.end ?? "RUNNING";
    const queuedMs = ((b.start ?? nowUs) - b.queued) / 1000;
    const ranMs = b.start !== undefined ? Math.round(((b.end ?? nowUs) - b.start) / 1000) : undefined;
    const told = `${a.task} attempt ${a.attempt}: ${st.toLowerCase()}` +
      `, queued ${fmtMs(Math.round(queuedMs))}` + (ranMs !== undefined ? `, ran ${fmtMs(ranMs)}` : "") +
      (b.worker ? "" : b.start !== undefined ? " (coordinator times: dispatch to result)" : "");
    const g = s("g", { class: "gantt-attempt", "data-exec": a.exec, "data-attempt": a.attempt, "data-state": st,
      role: "listitem", "aria-label": told },
    s("title", {}, told),
    s("text", { x: 4, y: y + 11, class: "gantt-name" }, `${a.task.length > 24 ? a.task.slice(0, 23) + "…" : a.task} #${a.attempt}`));
    const qEnd = b.start ?? nowUs;
    // At least a pixel wide, ending where the run starts.
    const qWidth = Math.max(1, sc.x(qEnd) - sc.x(b.queued));
    g.append(s("rect", { class: "gantt-queued", x: sc.x(qEnd) - qWidth, y: y + 3, height: ROW - 6,
      width: qWidth, "data-start-us": b.queued, "data-end-us": qEnd }));
    if (b.start !== undefined) {
      const end = b.end ?? nowUs;
      g.append(s("rect", { class: "gantt-run st-" + st, x: sc.x(b.start), y: y + 1, height: ROW - 2,
        width: Math.max(1, sc.x(end) - sc.x(b.start)), "data-start-us": b.start, "data-end-us": end,
        "data-worker-times": b.worker ? "1" : "0" }));
      if (a.waitUntil !== undefined) {
        const from = Math.max(end, a.endAt ?? end);
        g.append(s("rect", { class: "gantt-wait", x: sc.x(from), y: y + 4, height: ROW - 8,
          width: Math.max(1, sc.x(a.waitUntil) - sc.x(from)) }));
      }
      if (labelled && ranMs !== undefined) {
        const after = sc.x(Math.max(end, a.waitUntil ?? 0)) + 4;
        g.append(s("text", { class: "gantt-dur", x: Math.min(after, width - RIGHT + 4), y: y + 11 },
          `${STATE_GLYPH[st] ?? ""} ${fmtMs(ranMs)}`));
      }
    }
    svg.append(g);
  });
  scroll.append(svg);
}

// The latest attempt of each task as a canvas strip, for runs too big for
// SVG; the task under the pointer is named beside it.
export function drawGanttCanvas(box: HTMLElement, tasks: Record<string, TaskStatus>, nowUs: number): void {
  follow(box, () => drawGanttCanvas(box, tasks, nowUs));
  clear(box);
  const rows = Object.entries(tasks).filter(([, t]) => t.started_at_us)
    .sort((a, b) => a[1].started_at_us! - b[1].started_at_us!);
  box.append(h("p", { class: "muted" },
    `${rows.length} tasks started; latest attempt of each (a run this large is drawn from its status, not its full history). Point at a row to name its task.`));
  if (!rows.length) return;
  box.append(legend(true));
  const scroll = h("div", { class: "gantt-scroll gantt-canvas-wrap", tabindex: 0, role: "region",
    "aria-label": "Timeline, one row per task" });
  box.append(scroll);
  const width = Math.max(480, scroll.clientWidth);
  const t0 = rows[0][1].started_at_us!;
  const t1 = Math.max(...rows.map(([, t]) => t.finished_at_us ?? nowUs), t0 + 1000);
  const sc = new Scale(t0, t1, 0, width - 8);
  box.insertBefore(axis(width, sc, ""), scroll);
  const rowH = rows.length > 2000 ? 1 : 3;
  const canvas = h("canvas", {
    id: "gantt-canvas", width, height: Math.min(30000, rows.length * rowH + 4), role: "img",
    "aria-label": `${rows.length} tasks' run times from ${clock(t0)} over ${fmtSpan((t1 - t0) / 1000)}`,
  }) as HTMLCanvasElement;
  const ctx = canvas.getContext("2d")!;
  const css = getComputedStyle(document.documentElement);
  const colours = new Map<string, string>(STATES.map((st) => [st, css.getPropertyValue("--" + st).trim() || "#888"]));
  rows.forEach(([, t], i) => {
    const a = sc.x(t.started_at_us!), b = sc.x(t.finished_at_us ?? nowUs);
    ctx.fillStyle = colours.get(t.state) ?? "#888";
    ctx.fillRect(a, 2 + i * rowH, Math.max(1, b - a), rowH);
  });
  const tip = h("div", { class: "gantt-tip hidden", id: "gantt-tip", role: "status" });
  canvas.addEventListener("mousemove", (e) => {
    const r = canvas.getBoundingClientRect();
    const i = Math.floor((e.clientY - r.top - 2) / rowH);
    const row = rows[Math.max(0, Math.min(rows.length - 1, i))];
    const [id, t] = row;
    const ran = t.finished_at_us ? fmtMs(Math.round((t.finished_at_us - t.started_at_us!) / 1000)) : "running";
    tip.textContent = `${id} · ${STATE_GLYPH[t.state] ?? ""} ${t.state.toLowerCase()} · attempt ${t.attempts} · ${ran}` +
      ` · started +${fmtSpan((t.started_at_us! - t0) / 1000)}`;
    tip.dataset.task = id;
    tip.style.left = Math.min(e.clientX - r.left + 12, width - 320) + "px";
    tip.style.top = e.clientY - r.top + scroll.offsetTop - scroll.scrollTop + 12 + "px";
    tip.classList.remove("hidden");
  });
  canvas.addEventListener("mouseleave", () => tip.classList.add("hidden"));
  scroll.append(canvas);
  box.append(tip);
}
