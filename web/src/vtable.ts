// The task table, virtualised: only the rows in view exist in the DOM, so
// 10,000 tasks scroll as smoothly as 10.

import { clear, fmtMs, fmtTaskExit, h, link, stateBadge } from "./dom";
import { TaskStatus } from "./types";

const ROW = 24;

export class TaskTable {
  readonly root: HTMLElement;
  private readonly spacer: HTMLElement;
  private ids: string[] = [];
  private tasks: Record<string, TaskStatus> = {};

  constructor() {
    this.spacer = h("div", { class: "spacer" });
    this.root = h("div", { class: "vtable", id: "task-table" },
      h("div", { class: "row head" }, ...["Task", "State", "Attempts", "Worker", "Exit", "Duration"].map((t) => h("span", {}, t))),
      this.spacer);
    this.root.addEventListener("scroll", () => this.paint());
  }

  set(tasks: Record<string, TaskStatus>): void {
    this.tasks = tasks;
    if (this.ids.length !== Object.keys(tasks).length) this.ids = Object.keys(tasks).sort();
    this.spacer.style.height = this.ids.length * ROW + "px";
    this.root.style.height = Math.min(420, (this.ids.length + 1) * ROW + 4) + "px";
    this.paint();
  }

  private paint(): void {
    const top = this.root.scrollTop;
    const first = Math.max(0, Math.floor(top / ROW) - 5);
    const last = Math.min(this.ids.length, first + Math.ceil((this.root.clientHeight || 420) / ROW) + 10);
    clear(this.spacer);
    for (let i = first; i < last; i++) {
      const id = this.ids[i];
      const t = this.tasks[id];
      const dur = t.started_at_us && t.finished_at_us ? fmtMs(Math.round((t.finished_at_us - t.started_at_us) / 1000)) : "";
      const row = h("div", { class: "row", "data-task": id },
        h("span", {}, link("/exec/" + encodeURIComponent(t.exec_id), id)),
        h("span", {}, stateBadge(t.state), t.handled ? h("span", {
          class: "handled", title: "Handled: a dependent's on: branch ran, and the run can still succeed",
        }, " handled") : ""),
        h("span", {}, t.attempts), h("span", {}, t.worker ?? ""),
        exitCell(t), h("span", {}, dur));
      row.style.top = i * ROW + "px";
      this.spacer.append(row);
    }
  }
}

// The Exit column: "exit 3", "signal 15 (SIGTERM)" for a timed-out task the
// worker killed, nothing while it runs; the raw code in data-exit.
function exitCell(t: TaskStatus): HTMLElement {
  const text = fmtTaskExit(t.state, t.exit_code);
  if (!text) return h("span", { class: "exit" });
  const title = (t.state === "RETRYING" ? "the last attempt's end: " : "") + text +
    (t.exit_code !== undefined ? ` (exit_code ${t.exit_code})` : "");
  return h("span", { class: "exit", "data-exit": t.exit_code, title }, text);
}
