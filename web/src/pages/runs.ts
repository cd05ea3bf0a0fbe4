// Runs: the whole run history, newest first, a page at a time from
// GET /api/v1/runs, filtered on the server by state, pipeline and pipeline
// name prefix (a domain: "etl."). "Older" follows the page's next_cursor;
// "Newer" goes back to the page before. The page shown is read again on
// the live events about runs (at most once a second), else polled.

import { getJson } from "../api";
import { clear, h } from "../dom";
import { BasePage, Page } from "../page";
import { PipelineLine, RunLine } from "../types";
import { runTable } from "./overview";

const PAGE = 50;

interface RunsPage {
  runs: RunLine[];
  next_cursor: string | null;
  complete: boolean;
}

export function runsPage(): Page {
  const page = new BasePage("runs");
  const params = new URLSearchParams(location.search);
  const state = h("select", { id: "f-state", "aria-label": "State" },
    ...["", "RUNNING", "SUCCESS", "FAILED", "CANCELED"].map((s) => h("option", { value: s }, s || "any state"))) as HTMLSelectElement;
  const pipeline = h("select", { id: "f-pipeline", "aria-label": "Pipeline" }, h("option", { value: "" }, "any pipeline")) as HTMLSelectElement;
  const domain = h("input", { id: "f-domain", "aria-label": "Domain (pipeline name prefix)", placeholder: "domain prefix (e.g. etl.)" }) as HTMLInputElement;
  state.value = params.get("state") ?? "";
  domain.value = params.get("domain") ?? "";
  const list = h("div", { id: "runs-list" });
  const pager = h("div", { class: "pager" });
  page.root.append(h("h1", {}, "Runs"), h("div", { class: "toolbar" }, state, pipeline, domain), list, pager);

  // cursors[i] is where page i starts ("" = the newest run).
  let cursors = [""];
  let shown: RunsPage = { runs: [], next_cursor: null, complete: true };
  let asked = 0;  // answers to older requests are dropped

  const query = () => {
    const q = new URLSearchParams({ limit: String(PAGE) });
    if (state.value) q.set("state", state.value);
    if (pipeline.value) q.set("pipeline", pipeline.value);
    if (domain.value) q.set("prefix", domain.value);
    const cursor = cursors[cursors.length - 1];
    if (cursor) q.set("cursor", cursor);
    return `/api/v1/runs?${q}`;
  };
  const render = () => {
    clear(list);
    list.append(shown.runs.length ? runTable(shown.runs) : h("p", { class: "muted" },
      shown.complete ? "No run matches." : "No run matches among the runs read; older ones may."));
    const first = (cursors.length - 1) * PAGE;
    clear(pager);
    pager.append(
      h("button", { id: "prev", disabled: cursors.length === 1, onclick: () => { cursors.pop(); void load(); } }, "Newer"),
      h("span", {}, shown.runs.length ? `runs ${first + 1}–${first + shown.runs.length}` : ""),
      h("button", {
        id: "next", disabled: shown.complete || !shown.next_cursor,
        onclick: () => { if (shown.next_cursor) { cursors.push(shown.next_cursor); void load(); } },
      }, "Older"));
  };
  const load = async () => {
    const mine = ++asked;
    const got = await getJson<RunsPage>(query());
    if (mine !== asked) return;
    shown = got;
    render();
  };
  for (const el of [state, pipeline, domain]) el.addEventListener("input", () => { cursors = [""]; void load(); });

  const fillPipelines = async () => {
    const names = (await getJson<PipelineLine[]>("/api/pipelines")).map((p) => p.name).sort();
    if (pipeline.options.length === names.length + 1) return;
    const keep = pipeline.value || params.get("pipeline") || "";
    while (pipeline.options.length > 1) pipeline.remove(1);
    for (const n of names) pipeline.append(h("option", { value: n }, n));
    const changed = pipeline.value !== keep;
    pipeline.value = keep;
    if (changed && keep) { cursors = [""]; await load(); }
  };
  // The pipelines are read again when a run of one not listed changes, and
  // whenever the whole page is read (the first time, a poll, a reset).
  page.live(async ({ events }) => {
    const runs = events.filter((e) => e.type === "run");
    const known = new Set([...pipeline.options].map((o) => o.value));
    if (runs.length < events.length || !runs.length ||
        runs.some((e) => !known.has(String((e.data as { pipeline?: string }).pipeline ?? "")))) {
      await fillPipelines();
    }
    await load();
  }, { on: { run: true }, fallbackMs: 3000, throttleMs: 1000 });
  return page;
}
