// One registered pipeline (/pipelines?name=NAME): its state, schedule and
// newest fires, its declared params, its versions and the diff between any
// two, and the actions a principal's role allows (pipeline_actions.ts).

import { ApiError, getJson } from "../api";
import { clear, fmtTime, h, link } from "../dom";
import { BasePage, Page } from "../page";
import { drawSnapshotDiff } from "../snapshot_diff";
import { Fire, PipelineLine, PipelineSnapshot, PipelineVersionDetail, PipelineVersions } from "../types";
import { backfillForm, paramType, pipelinePath, say, stateButtons, triggerForm } from "./pipeline_actions";

// "24h", "90m", "1h 30m", "45s".
function fmtDuration(ms: number | undefined): string {
  if (ms === undefined) return "";
  const s = Math.round(ms / 1000);
  const parts: string[] = [];
  if (s >= 86400 && s % 3600 === 0) return `${s / 3600}h`;
  if (s >= 3600) parts.push(`${Math.floor(s / 3600)}h`);
  if (s % 3600 >= 60) parts.push(`${Math.floor((s % 3600) / 60)}m`);
  if (s % 60 || !parts.length) parts.push(`${s % 60}s`);
  return parts.join(" ");
}

// "in 4 min", "12 s ago".
function fromNow(iso: string | null | undefined): string {
  if (!iso) return "";
  const d = (new Date(iso).getTime() - Date.now()) / 1000;
  if (isNaN(d)) return "";
  const a = Math.abs(d);
  const text = a < 90 ? `${Math.round(a)} s` : a < 5400 ? `${Math.round(a / 60)} min` : a < 172800 ? `${Math.round(a / 3600)} h` : `${Math.round(a / 86400)} days`;
  return d >= 0 ? `in ${text}` : `${text} ago`;
}

function when(iso: string | null | undefined): HTMLElement | string {
  if (!iso) return "—";
  return h("span", {}, h("time", { datetime: iso, title: iso }, fmtTime(iso)), h("span", { class: "muted" }, " (" + fromNow(iso) + ")"));
}

// A paused or active badge whose word says it (not only its colour).
function pausedBadge(paused: boolean, removed: boolean): HTMLElement {
  const word = removed ? "removed" : paused ? "paused" : "active";
  const glyph = removed ? "⊘ " : paused ? "‖ " : "▶ ";
  return h("span", { class: "pstate " + word, id: "pipeline-state", "data-state": word }, glyph + word);
}

function table(id: string, heads: string[], rows: HTMLElement[], empty: string): HTMLElement {
  if (!rows.length) return h("p", { class: "muted", id }, empty);
  return h("table", { id }, h("thead", {}, h("tr", {}, ...heads.map((t) => h("th", { scope: "col" }, t)))), h("tbody", {}, ...rows));
}

function firesTable(fires: Fire[] | undefined): HTMLElement {
  return table("fires", ["Scheduled for", "State", "Origin", "Decided", "Run", "Reason"], (fires ?? []).map((f) =>
    h("tr", { "data-fire": f.scheduled_at, "data-state": f.state },
      h("td", {}, h("time", { datetime: f.scheduled_at, title: f.scheduled_at }, fmtTime(f.scheduled_at))),
      h("td", {}, h("span", { class: "fire " + f.state }, f.state)),
      h("td", {}, f.origin),
      h("td", {}, fmtTime(f.decided_at)),
      h("td", {}, f.run_id ? link("/run/" + encodeURIComponent(f.run_id), f.run_id) : ""),
      h("td", { class: "wrap" }, f.reason ?? ""))), "No fires yet.");
}

export function pipelinePage(name: string): Page {
  const page = new BasePage("pipeline");
  page.root.dataset.pipeline = name;
  const head = h("div", { id: "pipeline-head" });
  const msg = h("span", { class: "msg", id: "pipeline-msg", role: "status", "aria-live": "polite" });
  const buttons = h("span", { class: "toolbar", id: "pipeline-buttons" });
  const schedule = h("section", { id: "pipeline-schedule", "aria-labelledby": "schedule-title" });
  const params = h("section", { id: "pipeline-params", "aria-labelledby": "params-title" });
  const forms = h("div", { id: "pipeline-forms", class: "forms" });
  const versionsBox = h("div", { id: "versions-box" });
  const diffFrom = h("select", { id: "diff-from" }) as HTMLSelectElement;
  const diffTo = h("select", { id: "diff-to" }) as HTMLSelectElement;
  const diffBox = h("div", { id: "diff-box", "aria-live": "polite" });
  const diffButton = h("button", { type: "submit", id: "diff-show" }, "Show the diff") as HTMLButtonElement;
  const diffForm = h("form", { id: "diff-form", class: "toolbar", "aria-label": "compare two versions" },
    h("label", { for: "diff-from" }, "Compare"), diffFrom, h("label", { for: "diff-to" }, "with"), diffTo, diffButton);
  page.root.append(
    h("p", { class: "small" }, link("/pipelines", "← Pipelines")),
    h("h1", {}, "Pipeline ", h("span", { id: "pipeline-name" }, name)),
    head, h("div", { class: "toolbar" }, buttons, msg),
    schedule, params, forms,
    h("section", { id: "pipeline-versions", "aria-labelledby": "versions-title" },
      h("h2", { id: "versions-title" }, "Versions"), versionsBox, diffForm, diffBox));

  // Snapshots of versions, for the trigger form's params and the diff
  // (a version's snapshot never changes).
  const snapshots = new Map<string, Promise<PipelineVersionDetail>>();
  const version = (v: string) => {
    let got = snapshots.get(v);
    if (!got) {
      got = getJson<PipelineVersionDetail>(pipelinePath(name) + "@" + encodeURIComponent(v) + "?limit=1");
      got.catch(() => snapshots.delete(v));
      snapshots.set(v, got);
    }
    return got;
  };
  let current: PipelineVersionDetail | undefined;
  const snapshotOf = async (v: string): Promise<PipelineSnapshot> => (v ? (await version(v)).snapshot : current?.snapshot ?? {});

  diffForm.addEventListener("submit", async (e) => {
    e.preventDefault();
    const [a, b] = [diffFrom.value, diffTo.value];
    clear(diffBox);
    diffBox.append(h("p", { class: "muted" }, "Reading both versions…"));
    diffButton.disabled = true;
    try {
      const [va, vb] = await Promise.all([version(a), version(b)]);
      drawSnapshotDiff(diffBox, va.snapshot, vb.snapshot, va.label, vb.label);
    } catch (err) {
      clear(diffBox);
      const m = h("p", { id: "diff-summary" });
      say(m, false, err instanceof ApiError ? `reading the versions refused (${err.status}): ${err.message}` : String(err));
      diffBox.append(m);
    } finally {
      diffButton.disabled = false;
    }
  });

  let formsFor = "";  // the versions the forms were built for
  let shownVersions = "";
  const draw = async () => {
    const [list, versions] = await Promise.all([
      getJson<PipelineLine[]>("/api/v1/pipelines"),
      getJson<PipelineVersions>(pipelinePath(name) + "/versions").catch((e) => e as ApiError),
    ]);
    const entry = list.find((p) => p.name === name);
    if (versions instanceof ApiError) {
      clear(head);
      head.append(h("p", { id: "pipeline-unregistered" }, versions.status === 404
        ? `${name} is not in the registry` + (entry ? ` (it was submitted: ${entry.runs} recent runs, ` : " (") : versions.message,
        versions.status === 404 ? link("/runs?pipeline=" + encodeURIComponent(name), "its runs") : "", versions.status === 404 ? ")." : ""));
      return;
    }
    const removed = versions.active_version === 0;
    let detailError = "";
    if (!removed) {
      try {
        current = await getJson<PipelineVersionDetail>(pipelinePath(name) + "?limit=20");
      } catch (e) {
        detailError = (e as Error).message;
      }
    }
    const paused = versions.paused;
    const snap = removed ? undefined : current?.snapshot;
    const sched = entry?.schedule;

    clear(head);
    head.append(h("p", {}, pausedBadge(paused, removed), " ",
      removed ? "No version is active (removed); the versions stay readable."
        : h("span", {}, "active version ", h("strong", { id: "pipeline-active" }, current?.label ?? String(versions.active_version)),
          current ? ` · added by ${current.added_by} at ${fmtTime(current.added_at)}` : "",
          snap?.tasks ? ` · ${snap.tasks.length} task${snap.tasks.length === 1 ? "" : "s"}` : "",
          paused && entry?.paused_by ? ` · paused by ${entry.paused_by}` : ""),
      " · ", link("/runs?pipeline=" + encodeURIComponent(name), `runs (${entry?.runs ?? 0} recent)`),
      detailError ? h("span", { class: "msg error" }, " ✗ " + detailError) : ""));

    clear(buttons);
    buttons.append(...stateButtons(name, paused, removed, msg, () => void draw()));

    clear(schedule);
    if (sched || snap?.schedule) {
      const row = (label: string, ...value: (string | Node)[]) => h("tr", {}, h("th", { scope: "row" }, label), h("td", { class: "wrap" }, ...value));
      schedule.append(h("h2", { id: "schedule-title" }, "Schedule"),
        h("table", { class: "kv", id: "schedule-table" }, h("tbody", {},
          row("Cron", h("code", {}, sched?.cron ?? snap?.schedule ?? ""), " in " + (sched?.timezone || snap?.timezone || "UTC")),
          h("tr", { id: "schedule-next" }, h("th", { scope: "row" }, "Next fire"), h("td", {}, when(sched?.next_fire),
            paused ? h("span", { class: "muted" }, " · paused: it is journaled as skipped, no run starts") : "")),
          h("tr", { id: "schedule-last" }, h("th", { scope: "row" }, "Last fire"), h("td", {}, when(sched?.last_fire))),
          row("Catch-up", (snap?.catchup ?? "latest") + (snap?.catchup === "none" ? "" : ` within ${fmtDuration(snap?.catchup_window_ms)}`)),
          row("Overlap", snap?.overlap ?? "skip"),
          row("Max active runs", String(snap?.max_active_runs ?? 1)),
          row("Now", `${sched?.active_runs ?? 0} run(s) active, ${sched?.queued_fires ?? 0} fire(s) queued`))),
        h("h2", {}, "Recent fires"), firesTable(current?.fires));
    }

    clear(params);
    const declared = Object.entries(snap?.params ?? {});
    params.append(h("h2", { id: "params-title" }, "Params"), table("params-table", ["Name", "Type", "Default"],
      declared.map(([p, def]) => h("tr", { "data-param": p }, h("td", {}, p), h("td", {}, paramType(def)), h("td", {}, def))),
      "The active version declares no params."));

    const key = versions.versions.map((v) => v.label + (v.active ? "*" : "")).join(" ");
    if (key !== shownVersions) {
      shownVersions = key;
      clear(versionsBox);
      versionsBox.append(table("versions-table", ["Version", "Label", "Added by", "Added at", "Active"],
        [...versions.versions].reverse().map((v) => h("tr", { "data-version": v.version, class: v.active ? "active-version" : "" },
          h("td", {}, String(v.version)), h("td", {}, h("code", {}, v.label)), h("td", {}, v.added_by),
          h("td", {}, fmtTime(v.added_at)), h("td", {}, v.active ? "✓ active" : ""))), "No versions."));
      const keep = [diffFrom.value, diffTo.value];
      for (const [sel, fallback] of [[diffFrom, versions.versions.length - 2], [diffTo, versions.versions.length - 1]] as const) {
        clear(sel);
        for (const v of versions.versions) sel.append(h("option", { value: String(v.version) }, v.label + (v.active ? " (active)" : "")));
        const was = sel === diffFrom ? keep[0] : keep[1];
        sel.value = was || String(versions.versions[Math.max(0, fallback)]?.version ?? "");
      }
      diffForm.hidden = versions.versions.length < 2;
    }

    // The forms are built once per set of versions, not on every poll (what
    // is typed in them stays).
    if (formsFor !== key && !removed) {
      formsFor = key;
      clear(forms);
      forms.append(triggerForm(name, versions.versions, snapshotOf));
      if (snap?.schedule) forms.append(backfillForm(name, snap.max_active_runs, () => void draw()));
    } else if (removed) {
      clear(forms);
    }
    page.root.classList.add("loaded");
  };
  page.poll(draw, 5000);
  return page;
}
