// The run's timeline: one bar per attempt (queued, running, then the retry
// wait before the next), from the journal's transition times. Runs too big
// for their full history are drawn on a canvas from each task's latest
// attempt (status times).

import { clear, h, s } from "./dom";
import { TaskStatus, Transition } from "./types";

const ROW = 16, LABEL = 180, WIDTH = 900;
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

export function drawGantt(box: HTMLElement, attempts: Attempt[], nowUs: number): void {
  clear(box);
  if (!attempts.length) {
    box.append(h("p", { class: "muted" }, "No attempt has started yet."));
    return;
  }
  attempts.sort((a, b) => (a.readyAt ?? a.runAt ?? 0) - (b.readyAt ?? b.runAt ?? 0));
  const t0 = Math.min(...attempts.map((a) => a.readyAt ?? a.runAt ?? nowUs));
  const t1 = Math.max(...attempts.map((a) => a.waitUntil ?? a.endAt ?? nowUs), t0 + 1);
  const x = (t: number) => LABEL + ((t - t0) / (t1 - t0)) * (WIDTH - LABEL - 10);
  const svg = s("svg", { id: "gantt", width: WIDTH, height: attempts.length * ROW + 24 });
  svg.append(s("text", { x: LABEL, y: 12 }, `0 s`), s("text", { x: WIDTH - 60, y: 12 }, `${((t1 - t0) / 1e6).toFixed(2)} s`));
  attempts.forEach((a, i) => {
    const y = 20 + i * ROW;
    const g = s("g", { class: "gantt-attempt", "data-exec": a.exec, "data-attempt": a.attempt },
      s("text", { x: 2, y: y + 11 }, `${a.task} #${a.attempt}`));
    const ready = a.readyAt ?? a.runAt!;
    const run = a.runAt ?? nowUs;
    g.append(s("rect", { class: "gantt-queued", x: x(ready), y: y + 2, width: Math.max(1, x(run) - x(ready)), height: ROW - 4 }));
    if (a.runAt !== undefined) {
      const end = a.endAt ?? nowUs;
      const st = a.end ?? "RUNNING";
      g.append(s("rect", { class: "gantt-run st-" + st, x: x(a.runAt), y: y + 2, width: Math.max(1, x(end) - x(a.runAt)), height: ROW - 4 },
        s("title", {}, `${a.task} attempt ${a.attempt}: ${st}, ran ${((end - a.runAt) / 1000).toFixed(0)} ms`)));
      if (a.waitUntil !== undefined) {
        g.append(s("rect", { class: "gantt-wait", x: x(end), y: y + 4, width: Math.max(1, x(a.waitUntil) - x(end)), height: ROW - 8 },
          s("title", {}, "retry wait")));
      }
    }
    svg.append(g);
  });
  box.append(svg);
}

// The latest attempt of each task as a canvas strip, for runs too big for SVG.
export function drawGanttCanvas(box: HTMLElement, tasks: Record<string, TaskStatus>, nowUs: number): void {
  clear(box);
  const rows = Object.entries(tasks).filter(([, t]) => t.started_at_us)
    .sort((a, b) => a[1].started_at_us! - b[1].started_at_us!);
  box.append(h("p", { class: "muted" },
    `${rows.length} tasks started; latest attempt of each (a run this large is drawn from its status, not its full history).`));
  if (!rows.length) return;
  const t0 = rows[0][1].started_at_us!;
  const t1 = Math.max(...rows.map(([, t]) => t.finished_at_us ?? nowUs), t0 + 1);
  const rowH = rows.length > 2000 ? 1 : 3;
  const canvas = h("canvas", { id: "gantt-canvas", width: WIDTH, height: Math.min(8000, rows.length * rowH + 4) }) as HTMLCanvasElement;
  const ctx = canvas.getContext("2d")!;
  const css = getComputedStyle(document.documentElement);
  rows.forEach(([, t], i) => {
    const a = ((t.started_at_us! - t0) / (t1 - t0)) * WIDTH;
    const b = (((t.finished_at_us ?? nowUs) - t0) / (t1 - t0)) * WIDTH;
    ctx.fillStyle = css.getPropertyValue("--" + t.state).trim() || "#888";
    ctx.fillRect(a, 2 + i * rowH, Math.max(1, b - a), rowH);
  });
  box.append(canvas);
}
