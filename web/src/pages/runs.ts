// Runs: the newest runs the API lists (up to 1000), filtered by state,
// pipeline and domain prefix (the pipeline name up to its first '.'), paged.

import { getJson } from "../api";
import { clear, h } from "../dom";
import { BasePage, Page } from "../page";
import { RunLine } from "../types";
import { runTable } from "./overview";

const PAGE = 50;

export function runsPage(): Page {
  const page = new BasePage("runs");
  const params = new URLSearchParams(location.search);
  const state = h("select", { id: "f-state" },
    ...["", "RUNNING", "SUCCESS", "FAILED", "CANCELED"].map((s) => h("option", { value: s }, s || "any state"))) as HTMLSelectElement;
  const pipeline = h("select", { id: "f-pipeline" }, h("option", { value: "" }, "any pipeline")) as HTMLSelectElement;
  const domain = h("input", { id: "f-domain", placeholder: "domain prefix (e.g. etl.)" }) as HTMLInputElement;
  state.value = params.get("state") ?? "";
  domain.value = params.get("domain") ?? "";
  const list = h("div", { id: "runs-list" });
  const pager = h("div", { class: "pager" });
  page.root.append(h("h1", {}, "Runs"), h("div", { class: "toolbar" }, state, pipeline, domain), list, pager);

  let runs: RunLine[] = [];
  let offset = 0;
  const render = () => {
    const filtered = runs.filter((r) =>
      (!state.value || r.state === state.value) &&
      (!pipeline.value || r.pipeline === pipeline.value) &&
      (!domain.value || r.pipeline.startsWith(domain.value)));
    if (offset >= filtered.length) offset = Math.max(0, filtered.length - (filtered.length % PAGE || PAGE));
    clear(list);
    list.append(filtered.length ? runTable(filtered.slice(offset, offset + PAGE)) : h("p", { class: "muted" }, "No run matches."));
    clear(pager);
    pager.append(
      h("button", { id: "prev", disabled: offset === 0, onclick: () => { offset -= PAGE; render(); } }, "Newer"),
      h("span", {}, `${filtered.length ? offset + 1 : 0}–${Math.min(offset + PAGE, filtered.length)} of ${filtered.length}`),
      h("button", { id: "next", disabled: offset + PAGE >= filtered.length, onclick: () => { offset += PAGE; render(); } }, "Older"));
  };
  for (const el of [state, pipeline, domain]) el.addEventListener("input", () => { offset = 0; render(); });

  page.poll(async () => {
    runs = await getJson<RunLine[]>("/api/runs?limit=1000");
    const names = [...new Set(runs.map((r) => r.pipeline))].sort();
    if (pipeline.options.length !== names.length + 1) {
      const keep = pipeline.value || params.get("pipeline") || "";
      while (pipeline.options.length > 1) pipeline.remove(1);
      for (const n of names) pipeline.append(h("option", { value: n }, n));
      pipeline.value = keep;
    }
    render();
  }, 3000);
  return page;
}
