// Pipelines: those of the registry (with their active version, whether
// they are paused, and Trigger, Pause and Unpause for a principal that may)
// and those seen in recent runs. Schedules, versions, diffs and backfill on
// this page come with issue 40.

import { ApiError, getJson, post } from "../api";
import { clear, fmtTime, h, link, message, stateBadge } from "../dom";
import { BasePage, Page } from "../page";
import { PipelineLine } from "../types";
import { navigate } from "../main";

// The buttons of a registered pipeline, each shown only to a principal
// whose role allows it (data-needs, app.css).
function actions(p: PipelineLine, msg: HTMLElement, refresh: () => void): HTMLElement {
  const path = "/api/pipelines/" + encodeURIComponent(p.name);
  const act = async (what: string, run: () => Promise<void>) => {
    try {
      await run();
    } catch (e) {
      const err = e as ApiError;
      message(msg, `${what} refused (${err.status}): ${err.message}`, false);
    }
  };
  const trigger = h("button", {
    class: "trigger", "data-needs": "trigger", disabled: p.removed === true,
    title: "Start a run of the active version now (POST " + path + "/runs)",
    onclick: () => void act("trigger", async () => {
      const run = await post<{ run_id: string }>(path + "/runs", {});
      navigate("/run/" + encodeURIComponent(run.run_id));
    }),
  }, "Trigger");
  const change = p.paused ? "unpause" : "pause";
  const toggle = h("button", {
    class: change, "data-needs": change, disabled: p.removed === true,
    onclick: () => void act(change, async () => {
      await post(path + "/" + change);
      message(msg, `${p.name}: ${change}d`, true);
      refresh();
    }),
  }, p.paused ? "Unpause" : "Pause");
  return h("td", { class: "actions" }, trigger, " ", toggle);
}

export function pipelinesPage(): Page {
  const page = new BasePage("pipelines");
  const list = h("div", { id: "pipelines-list" });
  const msg = h("span", { class: "msg", id: "pipelines-msg" });
  page.root.append(h("h1", {}, "Pipelines"),
    h("p", { class: "muted", id: "pipelines-missing" },
      "Registered pipelines and those seen in recent runs. Not there yet: schedules with their next fire, " +
      "versions and their diff, backfill (issue 40)."),
    h("div", { class: "toolbar" }, msg), list);
  const draw = async () => {
    const pipes = await getJson<PipelineLine[]>("/api/pipelines");
    clear(list);
    list.append(h("table", {},
      h("thead", {}, h("tr", {}, ...["Pipeline", "Version", "Snapshot", "Runs", "Last run", "State", "At", ""]
        .map((t) => h("th", {}, t)))),
      h("tbody", {}, ...pipes.map((p) => h("tr", { "data-pipeline": p.name },
        h("td", {}, link("/runs?pipeline=" + encodeURIComponent(p.name), p.name)),
        h("td", {}, p.registered ? (p.removed ? "removed" : p.label ?? String(p.active_version ?? "")) +
          (p.paused ? " · paused" + (p.paused_by ? " by " + p.paused_by : "") : "") : ""),
        h("td", {}, p.hash ?? ""), h("td", {}, p.runs),
        h("td", {}, p.last_run_id ? link("/run/" + encodeURIComponent(p.last_run_id), p.last_run_id) : ""),
        h("td", {}, p.last_run_state ? stateBadge(p.last_run_state) : ""),
        h("td", {}, p.last_run_at ? fmtTime(p.last_run_at) : ""),
        p.registered ? actions(p, msg, () => void draw()) : h("td", {}))))));
  };
  page.poll(draw, 5000);
  return page;
}
