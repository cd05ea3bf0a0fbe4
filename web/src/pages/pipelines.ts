// Pipelines: those seen in recent runs (the API's list today). The registry
// of versions, schedules and pause/trigger come with issue 16.

import { getJson } from "../api";
import { clear, fmtTime, h, link, stateBadge } from "../dom";
import { BasePage, Page } from "../page";
import { PipelineLine } from "../types";

export function pipelinesPage(): Page {
  const page = new BasePage("pipelines");
  const list = h("div", { id: "pipelines-list" });
  page.root.append(h("h1", {}, "Pipelines"),
    h("p", { class: "muted", id: "pipelines-missing" },
      "Pipelines seen in recent runs. Not there yet: a registry of versions, schedules with their next fire, " +
      "and pause/trigger buttons (they come with the pipeline registry, issue 16)."),
    list);
  page.poll(async () => {
    const pipes = await getJson<PipelineLine[]>("/api/pipelines");
    clear(list);
    list.append(h("table", {},
      h("thead", {}, h("tr", {}, ...["Pipeline", "Snapshot", "Runs", "Last run", "State", "At"].map((t) => h("th", {}, t)))),
      h("tbody", {}, ...pipes.map((p) => h("tr", { "data-pipeline": p.name },
        h("td", {}, link("/runs?pipeline=" + encodeURIComponent(p.name), p.name)), h("td", {}, p.hash),
        h("td", {}, p.runs), h("td", {}, link("/run/" + encodeURIComponent(p.last_run_id), p.last_run_id)),
        h("td", {}, stateBadge(p.last_run_state)), h("td", {}, fmtTime(p.last_run_at)))))));
  }, 5000);
  return page;
}
