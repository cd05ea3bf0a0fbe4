// Workers: every worker the coordinator knows, live.

import { getJson } from "../api";
import { clear, fmtTime, h } from "../dom";
import { BasePage, Page } from "../page";
import { Worker } from "../types";

export function workersPage(): Page {
  const page = new BasePage("workers");
  const list = h("div", { id: "workers-list" });
  page.root.append(h("h1", {}, "Workers"), list);
  page.poll(async () => {
    const workers = await getJson<Worker[]>("/api/workers");
    clear(list);
    if (!workers.length) {
      list.append(h("p", { class: "muted" }, "No worker has joined."));
      return;
    }
    list.append(h("table", {},
      h("thead", {}, h("tr", {}, ...["Worker", "State", "Group", "Labels", "Slots", "Running", "Queued", "Credits",
        "Last heartbeat", "Losses", "Connected since"].map((t) => h("th", {}, t)))),
      h("tbody", {}, ...workers.map((w) => h("tr", { "data-worker": w.id, class: w.losses > 2 ? "flapping" : "" },
        h("td", {}, w.id), h("td", {}, w.state), h("td", {}, w.group), h("td", {}, (w.labels ?? []).join(", ")),
        h("td", {}, w.slots), h("td", {}, w.running), h("td", {}, w.queued ?? ""), h("td", {}, w.credits),
        h("td", {}, fmtTime(w.last_heartbeat)),
        h("td", {}, String(w.losses) + (w.losses > 2 ? " (flapping)" : "")),
        h("td", {}, fmtTime(w.connected_since)))))));
  }, 2000);
  return page;
}
