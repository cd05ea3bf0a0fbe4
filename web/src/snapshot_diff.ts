// Two versions of a pipeline side by side: each snapshot printed as
// indented JSON lines, with a text of several lines (a python task's code,
// SQL, a multi-line command) printed as its own lines, so that the diff
// names the line of code that changed, as `apollo11 pipelines diff` does.

import { clear, h } from "./dom";
import { diffLines, hunks } from "./linediff";

export interface SnapshotLine {
  text: string;
  // Where in the snapshot the line is: ".tasks.load.code", ".params".
  path: string;
}

// The snapshot as lines. Object keys keep their order (the snapshot's is
// canonical); a task in `tasks` is named by its id in the path.
export function snapshotLines(snapshot: unknown): SnapshotLine[] {
  const out: SnapshotLine[] = [];
  put(out, "", "", "", snapshot, "");
  return out;
}

function put(out: SnapshotLine[], pad: string, path: string, head: string, v: unknown, comma: string): void {
  if (Array.isArray(v)) {
    if (!v.length) return void out.push({ text: pad + head + "[]" + comma, path });
    out.push({ text: pad + head + "[", path });
    v.forEach((item, i) => {
      const id = item && typeof item === "object" && typeof (item as { id?: unknown }).id === "string"
        ? (item as { id: string }).id : String(i);
      put(out, pad + "  ", path + "." + id, "", item, i < v.length - 1 ? "," : "");
    });
    out.push({ text: pad + "]" + comma, path });
  } else if (v && typeof v === "object") {
    const entries = Object.entries(v as Record<string, unknown>);
    if (!entries.length) return void out.push({ text: pad + head + "{}" + comma, path });
    out.push({ text: pad + head + "{", path });
    entries.forEach(([k, item], i) => {
      put(out, pad + "  ", path + "." + k, JSON.stringify(k) + ": ", item, i < entries.length - 1 ? "," : "");
    });
    out.push({ text: pad + "}" + comma, path });
  } else if (typeof v === "string" && v.includes("\n")) {
    // A text of several lines: one diff line per line of it, numbered.
    const lines = v.split("\n");
    if (lines[lines.length - 1] === "") lines.pop();
    out.push({ text: `${pad}${head}|${comma}`, path });
    lines.forEach((line, i) => out.push({ text: `${pad}  ${String(i + 1).padStart(3)} │ ${line}`, path: `${path}:${i + 1}` }));
  } else {
    out.push({ text: pad + head + JSON.stringify(v) + comma, path });
  }
}

// "v2" for the label "2-000e491396f63399".
function short(label: string): string {
  const n = /^(\d+)-/.exec(label);
  return n ? "v" + n[1] : label;
}

// At most this many diff lines are drawn (the rest are counted).
const MAX_DRAWN = 4000;

// Draws the diff of snapshot `a` (version `nameA`) to `b` into `box`:
// hunks of changed lines with three lines of context, each hunk headed by
// where its first change is; removed lines marked "−" and added "+" as
// well as by colour.
export function drawSnapshotDiff(box: HTMLElement, a: unknown, b: unknown, nameA: string, nameB: string): void {
  clear(box);
  const la = snapshotLines(a), lb = snapshotLines(b);
  const diff = diffLines(la.map((l) => l.text), lb.map((l) => l.text));
  const removed = diff.lines.filter((l) => l.op === "-").length;
  const added = diff.lines.filter((l) => l.op === "+").length;
  box.append(h("p", { id: "diff-summary", role: "status" }, removed + added === 0
    ? `${nameA} and ${nameB} are the same snapshot.`
    : `${nameA} → ${nameB}: ${removed} line${removed === 1 ? "" : "s"} removed, ${added} added` +
      (diff.rough ? " (too many changes to line them up: the changed part is shown removed and added whole)" : "") + "."));
  if (removed + added === 0) return;
  const { hunks: parts, after } = hunks(diff.lines);
  const body = h("tbody");
  let drawn = 0;
  for (const part of parts) {
    if (drawn >= MAX_DRAWN) break;
    const first = part.lines.find((l) => l.op !== " ")!;
    const where = first.op === "+" ? lb[first.b].path : la[first.a].path;
    body.append(h("tr", { class: "diff-hunk" }, h("td", { colspan: 4 },
      (part.skipped ? `… ${part.skipped} unchanged line${part.skipped === 1 ? "" : "s"} · ` : "") + "at " + (where || "the top"))));
    for (const l of part.lines) {
      if (drawn++ >= MAX_DRAWN) break;
      const kind = l.op === "-" ? "del" : l.op === "+" ? "ins" : "same";
      body.append(h("tr", { class: "diff-" + kind, "data-op": kind },
        h("td", { class: "ln" }, l.a >= 0 ? l.a + 1 : ""),
        h("td", { class: "ln" }, l.b >= 0 ? l.b + 1 : ""),
        h("td", { class: "sign", "aria-label": l.op === "-" ? "removed" : l.op === "+" ? "added" : "unchanged" },
          l.op === "-" ? "−" : l.op === "+" ? "+" : ""),
        h("td", { class: "code" }, l.text)));
    }
  }
  if (drawn >= MAX_DRAWN) {
    body.append(h("tr", { class: "diff-hunk" }, h("td", { colspan: 4 }, `… the first ${MAX_DRAWN} lines are shown`)));
  } else if (after) {
    body.append(h("tr", { class: "diff-hunk" }, h("td", { colspan: 4 }, `… ${after} unchanged line${after === 1 ? "" : "s"}`)));
  }
  box.append(h("table", { class: "diff", id: "diff-table" },
    h("caption", { class: "sr-only" }, `Changes from ${nameA} to ${nameB}`),
    h("thead", {}, h("tr", {}, h("th", { scope: "col", title: nameA }, short(nameA)), h("th", { scope: "col", title: nameB }, short(nameB)),
      h("th", { scope: "col" }, h("span", { class: "sr-only" }, "change")), h("th", { scope: "col" }, "line"))),
    body));
}
