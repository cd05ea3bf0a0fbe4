// The pipeline page's actions, each shown only to a principal whose role
// allows it (data-needs, app.css) and each answered with what the API said:
// the trigger form (built from the version's declared params), the
// backfill form with its preview, Pause/Unpause and Remove.

import { ApiError, post } from "../api";
import { clear, fmtTime, h, link } from "../dom";
import { Backfilled, PipelineSnapshot, PipelineState, PipelineVersion, Triggered } from "../types";

// A param's type, read from its default as the node reads it
// (dsl/param_values.cc): "10" integer, "0.5" number, "true" boolean.
export function paramType(def: string): "integer" | "number" | "boolean" | "string" {
  if (/^[+-]?[0-9]{1,18}$/.test(def)) return "integer";
  if (def.length <= 64 && /^[0-9+\-.eE]+$/.test(def) && def.trim() !== "" && !isNaN(Number(def))) return "number";
  if (def === "true" || def === "false") return "boolean";
  return "string";
}

// Says the API's answer in `el`: text and links, green or red, with a
// word that says which (colour is not the only sign).
export function say(el: HTMLElement, ok: boolean, ...parts: (string | Node)[]): void {
  el.className = "msg " + (ok ? "ok" : "error");
  el.dataset.ok = String(ok);
  clear(el);
  el.append(ok ? "✓ " : "✗ ", ...parts);
}

function refusal(what: string, e: unknown): string {
  if (e instanceof ApiError) return `${what} refused (${e.status}): ${e.message}`;
  return `${what} failed: ${String(e)}`;
}

export function pipelinePath(name: string): string {
  return "/api/v1/pipelines/" + encodeURIComponent(name);
}

// The trigger form. `snapshotOf(version)` gives a version's snapshot ("" =
// the active one) so that the params shown are those of the version
// chosen. Navigation is left to the run's link in the answer.
export function triggerForm(name: string, versions: PipelineVersion[],
                            snapshotOf: (version: string) => Promise<PipelineSnapshot>): HTMLElement {
  const params = h("div", { id: "trigger-params", class: "fields-part" });
  const active = versions.find((v) => v.active);
  const version = h("select", { id: "trigger-version", name: "version" },
    h("option", { value: "" }, active ? `the active one (${active.label})` : "the active one"),
    ...[...versions].reverse().map((v) => h("option", { value: String(v.version) }, v.label + (v.active ? " (active)" : "")))) as HTMLSelectElement;
  const key = h("input", { id: "trigger-key", name: "idempotency_key", type: "text", maxlength: 256, autocomplete: "off",
    "aria-describedby": "trigger-key-help" }) as HTMLInputElement;
  const msg = h("p", { id: "trigger-msg", class: "msg", role: "status", "aria-live": "polite" });
  const submit = h("button", { type: "submit", id: "trigger-submit" }, "Trigger") as HTMLButtonElement;
  // novalidate: a value that is not of its param's type is answered by the
  // node, which says what it expects.
  const form = h("form", { id: "trigger-form", class: "action-form", "data-needs": "trigger", "aria-labelledby": "trigger-title", novalidate: true },
    h("h2", { id: "trigger-title" }, "Trigger a run"),
    h("div", { class: "fields" }, params,
      h("label", { for: "trigger-version" }, "Version"), version,
      h("label", { for: "trigger-key" }, "Idempotency key"),
      h("span", {}, key, " ", h("span", { id: "trigger-key-help", class: "muted small" },
        "optional: the same key again answers the run it started"))),
    h("div", { class: "toolbar" }, submit), msg) as HTMLFormElement;

  const fill = (snapshot: PipelineSnapshot) => {
    clear(params);
    const declared = Object.entries(snapshot.params ?? {});
    if (!declared.length) {
      params.append(h("p", { class: "muted", id: "trigger-no-params" }, "This version declares no params."));
      return;
    }
    for (const [p, def] of declared) {
      const type = paramType(def);
      const id = "param-" + p;
      const attrs = { id, name: p, "data-param": p, "data-type": type, "aria-describedby": id + "-help" };
      const input = type === "boolean"
        ? h("select", attrs, h("option", { value: "true", selected: def === "true" }, "true"),
          h("option", { value: "false", selected: def === "false" }, "false"))
        : h("input", { ...attrs, value: def, autocomplete: "off",
          type: type === "string" ? "text" : "number", step: type === "integer" ? "1" : type === "number" ? "any" : undefined });
      params.append(h("label", { for: id }, p), h("span", {}, input, " ",
        h("span", { id: id + "-help", class: "muted small" }, `${type}, default ${def === "" ? "empty" : def}`)));
    }
  };
  const load = async () => {
    try {
      fill(await snapshotOf(version.value));
    } catch (e) {
      clear(params);
      say(msg, false, refusal("reading version " + (version.value || "active"), e));
    }
  };
  version.addEventListener("change", () => void load());
  void load();

  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const values: Record<string, string> = {};
    for (const el of params.querySelectorAll<HTMLInputElement | HTMLSelectElement>("[data-param]")) {
      values[el.dataset.param!] = el.value;
    }
    const body: Record<string, unknown> = { params: values };
    if (version.value) body.version = version.value;
    if (key.value.trim()) body.idempotency_key = key.value.trim();
    submit.disabled = true;
    try {
      const run = await post<Triggered>(pipelinePath(name) + "/runs", body);
      const to = link("/run/" + encodeURIComponent(run.run_id), run.run_id);
      to.id = "trigger-run";
      if (run.existing) say(msg, true, "the key's run already exists: ", to, ` (version ${run.version})`);
      else say(msg, true, "started run ", to, ` of version ${run.version}`);
    } catch (err) {
      say(msg, false, refusal("trigger", err));
    } finally {
      submit.disabled = false;
    }
  });
  return form;
}

// The backfill form: from, to and max active; Preview asks the node which
// times a backfill would queue (dry_run) and lists them, Start queues them
// and calls `changed` (the page shows the new fires).
export function backfillForm(name: string, maxActiveRuns: number | undefined, changed: () => void): HTMLElement {
  const field = (id: string, label: string, help: string, attrs: Record<string, string | number>) => [
    h("label", { for: id }, label),
    h("span", {}, h("input", { id, autocomplete: "off", "aria-describedby": id + "-help", ...attrs }), " ",
      h("span", { id: id + "-help", class: "muted small" }, help)),
  ];
  const msg = h("p", { id: "backfill-msg", class: "msg", role: "status", "aria-live": "polite" });
  const times = h("div", { id: "backfill-times" });
  const preview = h("button", { type: "button", id: "backfill-preview" }, "Preview") as HTMLButtonElement;
  const start = h("button", { type: "submit", id: "backfill-start" }, "Start") as HTMLButtonElement;
  const form = h("form", { id: "backfill-form", class: "action-form", "data-needs": "backfill", "aria-labelledby": "backfill-title" },
    h("h2", { id: "backfill-title" }, "Backfill"),
    h("p", { class: "muted small" }, "One run for every time the schedule would have fired from From to To (both included); " +
      "times as 2026-11-01 or 2026-11-01T06:00:00Z, To not in the future. Preview lists them; Start queues them."),
    h("div", { class: "fields" },
      ...field("backfill-from", "From", "a time", { type: "text", required: "", placeholder: "2026-11-01" }),
      ...field("backfill-to", "To", "a time, not in the future", { type: "text", required: "", placeholder: "2026-11-07T00:00:00Z" }),
      ...field("backfill-max", "Max active", `runs at once (1 to 1000; default the schedule's max_active_runs${maxActiveRuns ? ", " + maxActiveRuns : ""})`,
        { type: "number", min: 1, max: 1000, step: 1 })),
    h("div", { class: "toolbar" }, preview, start), msg, times) as HTMLFormElement;
  const value = (id: string) => (form.querySelector("#" + id) as HTMLInputElement).value.trim();
  const body = (): Record<string, unknown> => {
    const b: Record<string, unknown> = { from: value("backfill-from"), to: value("backfill-to") };
    if (value("backfill-max")) b.max_active = Number(value("backfill-max"));
    return b;
  };
  let previewed = "";  // the body the list of times is for

  preview.addEventListener("click", async () => {
    if (!form.reportValidity()) return;
    const asked = body();
    preview.disabled = true;
    clear(times);
    try {
      const answer = await post<Backfilled>(pipelinePath(name) + "/backfill", { ...asked, dry_run: true });
      previewed = JSON.stringify(asked);
      const listed = answer.times ?? [];
      const n = answer.would_queue ?? listed.length;
      say(msg, true, `a backfill would queue ${n} run${n === 1 ? "" : "s"}` + (n ? ", starting at:" : ""));
      times.append(h("ol", { id: "backfill-list", class: "times", "aria-label": "the times a backfill would start" },
        ...listed.map((t) => h("li", { "data-time": t }, h("time", { datetime: t }, t), h("span", { class: "muted" }, " · " + fmtTime(t))))));
      if (n > listed.length) times.append(h("p", { class: "muted" }, `… and ${n - listed.length} more (the preview lists the first ${listed.length})`));
    } catch (e) {
      const old = e instanceof ApiError && e.status === 400 && e.message.includes("dry_run");
      say(msg, false, refusal("preview", e) + (old ? " (this node cannot preview a backfill yet; Start still queues)" : ""));
    } finally {
      preview.disabled = false;
    }
  });

  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const asked = body();
    if (JSON.stringify(asked) !== previewed &&
        !confirm(`Queue a run of ${name} for every scheduled time from ${asked.from} to ${asked.to}? (Preview lists them.)`)) return;
    start.disabled = true;
    try {
      const answer = await post<Backfilled>(pipelinePath(name) + "/backfill", asked);
      const n = answer.queued ?? 0;
      say(msg, true, `queued ${n} run${n === 1 ? "" : "s"} of ${answer.name}; they start as the schedule's room allows (see Recent fires, `,
        link("/runs?pipeline=" + encodeURIComponent(name), "its runs"), ")");
      msg.dataset.queued = String(n);
      changed();
    } catch (err) {
      say(msg, false, refusal("backfill", err));
    } finally {
      start.disabled = false;
    }
  });
  return form;
}

// Pause or Unpause (whichever applies) and Remove, answering in `msg`;
// `changed` refreshes the page.
export function stateButtons(name: string, paused: boolean, removed: boolean, msg: HTMLElement,
                             changed: () => void): HTMLElement[] {
  const change = paused ? "unpause" : "pause";
  const toggle = h("button", {
    id: "pipeline-" + change, class: change, "data-needs": change, disabled: removed,
    title: paused ? "Let the schedule fire and triggers start runs again" : "Stop the schedule's fires and refuse triggers until unpaused",
    onclick: async () => {
      try {
        const s = await post<PipelineState>(pipelinePath(name) + "/" + change);
        say(msg, true, `${s.name} ${s.paused ? "paused" : "unpaused"} (active version ${s.active ?? "?"})`);
      } catch (e) {
        say(msg, false, refusal(change, e));
      }
      changed();
    },
  }, paused ? "Unpause" : "Pause");
  const remove = h("button", {
    id: "pipeline-remove", class: "danger", "data-needs": "remove", disabled: removed,
    title: "Take the pipeline out of the registry: no more fires or triggers (its versions stay listed)",
    onclick: async () => {
      if (!confirm(`Remove ${name} from the registry? Its schedule stops and it can no longer be triggered.`)) return;
      try {
        const s = await post<PipelineState>(pipelinePath(name) + "/remove");
        say(msg, true, `${s.name} removed (active version ${s.active ?? 0})`);
      } catch (e) {
        say(msg, false, refusal("remove", e));
      }
      changed();
    },
  }, "Remove");
  return [toggle, remove];
}
