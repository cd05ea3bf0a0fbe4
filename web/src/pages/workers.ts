// Workers: every worker the coordinator knows, read again on each live
// `workers` event (the node's answer changed), else polled. What each holds is
// split as /api/workers gives it: executing (at most its slots), queued
// beyond its slots (--prefetch) and its free slots, with the cluster's
// totals above, which are the figures /metrics gives (apollo11_cluster_slots,
// apollo11_cluster_slots_free, apollo11_workers{state}).

import { getJson } from "../api";
import { clear, fmtTime, h } from "../dom";
import { BasePage, Page } from "../page";
import { Worker } from "../types";

// Slots holding nothing, running or queued; a draining worker (0 slots) has none.
export function freeSlots(w: Worker): number {
  return Math.max(0, w.slots - w.running - w.queued);
}

function totals(workers: Worker[]): HTMLElement {
  let slots = 0, running = 0, queued = 0, free = 0, busy = 0;
  for (const w of workers) {
    slots += w.slots;
    running += w.running;
    queued += w.queued;
    free += freeSlots(w);
    if (w.running + w.queued > 0) busy++;
  }
  const figure = (id: string, n: number, text: string) => h("span", { id, "data-value": n }, `${n} ${text}`);
  return h("p", { id: "workers-totals" },
    figure("workers-count", workers.length, workers.length === 1 ? "worker" : "workers"), ` (${busy} busy) · `,
    figure("workers-slots", slots, "slots"), ": ", figure("workers-running", running, "executing"), ", ",
    figure("workers-free", free, "free"), " · ", figure("workers-queued", queued, "queued beyond their slots"));
}

export function workersPage(): Page {
  const page = new BasePage("workers");
  const list = h("div", { id: "workers-list" });
  page.root.append(h("h1", {}, "Workers"), list);
  page.live(async () => {
    const workers = await getJson<Worker[]>("/api/workers");
    clear(list);
    if (!workers.length) {
      list.append(h("p", { class: "muted" }, "No worker has joined."));
      return;
    }
    const head = (t: string, title?: string) => h("th", title ? { title } : {}, t);
    list.append(totals(workers), h("table", {},
      h("thead", {}, h("tr", {}, head("Worker"), head("State"), head("Group"), head("Labels"), head("Slots"),
        head("Executing", "Executions running now, at most its slots"),
        head("Queued", "Executions it holds beyond its slots (--prefetch), started as slots free up"),
        head("Free slots", "Slots holding no execution"),
        head("Credits", "Executions the coordinator may still send it, queue included"),
        head("Last heartbeat"), head("Losses"), head("Connected since"))),
      h("tbody", {}, ...workers.map((w) => h("tr", { "data-worker": w.id, class: w.losses > 2 ? "flapping" : "" },
        h("td", {}, w.id), h("td", {}, w.state), h("td", {}, w.group), h("td", {}, (w.labels ?? []).join(", ")),
        h("td", { class: "slots" }, w.slots), h("td", { class: "running" }, w.running),
        h("td", { class: "queued" }, w.queued), h("td", { class: "free" }, freeSlots(w)),
        h("td", {}, w.credits),
        h("td", {}, fmtTime(w.last_heartbeat)),
        h("td", {}, String(w.losses) + (w.losses > 2 ? " (flapping)" : "")),
        h("td", {}, fmtTime(w.connected_since)))))));
  }, { on: { workers: true }, fallbackMs: 2000 });
  return page;
}
