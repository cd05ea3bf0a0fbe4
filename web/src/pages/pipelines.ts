// Pipelines: those of the registry (with their active version, whether
// they are paused, the next fire of a schedule, and Trigger, Pause and
// Unpause for a principal that may), each linked to its page (pipeline.ts:
// versions and their diff, schedule and fires, the trigger form, backfill),
// and those seen in recent runs.

import { ApiError, getJson, post } from "../api";
import { clear, fmtTime, h, link, message, stateBadge } from "../dom";
import { BasePage, Page } from "../page";
import { PipelineLine } from "../types";
import { navigate } from "../main";

// The buttons of a registered pipeline, each shown only to a principal
// whose role allows it (data-needs, app.css).
function actions(p: PipelineLine, msg: HTMLElement, refresh: () => void): HTMLElement {
  const path = "/api/v1/pipelines/" + encodeURIComponent(p.name);
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

// A registered pipeline's state in words (and a glyph): removed, paused
// (by whom), or active; a schedule's cron beside it.
function registryState(p: PipelineLine): HTMLElement {
  const word = p.removed ? "removed" : p.paused ? "paused" : "active";
  const glyph = p.removed ? "⊘ " : p.paused ? "‖ " : "▶ ";
  return h("span", {}, h("span", { class: "pstate " + word, "data-state": word }, glyph + word),
    p.paused && p.paused_by ? ` by ${p.paused_by}` : "",
    p.schedule ? h("span", { class: "muted" }, " · ", h("code", {}, p.schedule.cron)) : "");
}

export function pipelinesPage(): Page {
  const page = new BasePage("pipelines");
  const list = h("div", { id: "pipelines-list" });
  const msg = h("span", { class: "msg", id: "pipelines-msg" });
  page.root.append(h("h1", {}, "Pipelines"),
    h("p", { class: "muted", id: "pipelines-about" },
      "Registered pipelines and those seen in recent runs. Open a registered one for its versions and their diff, " +
      "its schedule and fires, a trigger with params and backfill."),
    h("div", { class: "toolbar" }, msg), list);
  const draw = async () => {
    const pipes = await getJson<PipelineLine[]>("/api/v1/pipelines");
    clear(list);
    list.append(h("table", {},
      h("thead", {}, h("tr", {}, ...["Pipeline", "Version", "State", "Next fire", "Runs", "Last run", ""]
        .map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", {}, ...pipes.map((p) => h("tr", { "data-pipeline": p.name },
        h("td", {}, p.registered ? link("/pipelines?name=" + encodeURIComponent(p.name), p.name) : p.name),
        // A registered pipeline's active version; another's newest snapshot.
        h("td", {}, p.registered ? (p.removed ? "" : p.label ?? String(p.active_version ?? "")) : p.hash ?? ""),
        h("td", { class: "pipeline-state" }, p.registered ? registryState(p) : h("span", { class: "muted" }, "not registered")),
        h("td", { class: "next-fire" }, p.schedule?.next_fire
          ? h("time", { datetime: p.schedule.next_fire, title: `${p.schedule.cron} (${p.schedule.timezone})` }, fmtTime(p.schedule.next_fire))
          : p.schedule ? "—" : ""),
        h("td", {}, p.runs ? link("/runs?pipeline=" + encodeURIComponent(p.name), String(p.runs)) : "0"),
        h("td", {}, p.last_run_id ? link("/run/" + encodeURIComponent(p.last_run_id), p.last_run_id) : "",
          p.last_run_state ? " " : "", p.last_run_state ? stateBadge(p.last_run_state) : "",
          p.last_run_at ? h("span", { class: "muted small" }, " " + fmtTime(p.last_run_at)) : ""),
        p.registered ? actions(p, msg, () => void draw()) : h("td", {}))))));
  };
  page.poll(draw, 5000);
  return page;
}
