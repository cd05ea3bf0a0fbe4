// The grouped view of a large task graph: groupsOf() puts each task in its
// layer (longest path from a root), splitting a layer of more than PART
// tasks into parts, and groupScene() draws one node per group with a bar of
// its tasks' states and the edges between groups. Contract: every task is in
// exactly one group; group keys are "L<layer>" or "L<layer>.<part>" and are
// the keys of the scene's boxes (which carry `data-group`, not `data-task`).
// A very long chain of layers is wrapped into rows, and then only the edges
// between neighbours in a row are drawn. update() redraws every bar.

import { clear, s } from "./dom";
import { Laid, layered, longestPath, Placed } from "./graph_layout";
import { Box, Scene, sceneFrame } from "./graph_scene";
import { Graph, STATES, TaskStatus } from "./types";

const PART = 500;
const GW = 180, GH = 40;
const WRAP_OVER = 2600;  // px: a wider chain of layers is wrapped into rows

export interface Group {
  key: string;
  layer: number;
  part: number;   // 0 when the layer is drawn whole
  parts: number;
  ids: string[];
}

export function groupsOf(graph: Graph): { groups: Group[]; groupOf: Map<string, string> } {
  const depth = longestPath(graph.tasks.map((t) => t.id),
    new Map(graph.tasks.map((t) => [t.id, t.deps.map((d) => d.task)])));
  const byLayer = new Map<number, string[]>();
  for (const t of graph.tasks) {
    const d = depth.get(t.id) ?? 0;
    if (!byLayer.has(d)) byLayer.set(d, []);
    byLayer.get(d)!.push(t.id);
  }
  const groups: Group[] = [];
  const groupOf = new Map<string, string>();
  for (const [layer, ids] of [...byLayer].sort((a, b) => a[0] - b[0])) {
    const parts = Math.ceil(ids.length / PART);
    for (let p = 0; p < parts; p++) {
      const key = parts > 1 ? `L${layer}.${p + 1}` : `L${layer}`;
      const mine = ids.slice(p * PART, (p + 1) * PART);
      groups.push({ key, layer, part: parts > 1 ? p + 1 : 0, parts, ids: mine });
      for (const id of mine) groupOf.set(id, key);
    }
  }
  return { groups, groupOf };
}

export function groupName(g: Group): string {
  return g.part ? `layer ${g.layer} (part ${g.part} of ${g.parts})` : `layer ${g.layer}`;
}

// A long chain of layers, wrapped into rows read left to right; only the
// edges between neighbours in a row are kept (a layer always depends on
// the one before it). Rows about as many as fit a wide screen's aspect (2.4:1).
function wrapped(groups: Group[], upLists: Map<string, string[]>): { laid: Laid; upLists: Map<string, string[]> } {
  const perRow = Math.max(2, Math.ceil(Math.sqrt((groups.length * 2.4 * (GH + 24)) / (GW + 40))));
  const pos = new Map<string, Placed>();
  groups.forEach((grp, i) => pos.set(grp.key, { x: 10 + (i % perRow) * (GW + 40) + GW / 2, y: 10 + Math.floor(i / perRow) * (GH + 24) + GH / 2 }));
  const rows = Math.ceil(groups.length / perRow);
  const kept = new Map(groups.map((grp, i) => [grp.key, (upLists.get(grp.key) ?? []).filter((u) => {
    const j = groups.findIndex((g) => g.key === u);
    return Math.floor(j / perRow) === Math.floor(i / perRow) && i - j === 1;
  })]));
  return { laid: { pos, width: 20 + perRow * (GW + 40) - 40, height: 20 + rows * (GH + 24) - 24 }, upLists: kept };
}

// The groups each group depends on (through any of its tasks' deps).
function groupUps(graph: Graph, groups: Group[], groupOf: Map<string, string>): Map<string, string[]> {
  const ups = new Map<string, Set<string>>(groups.map((grp) => [grp.key, new Set<string>()]));
  for (const t of graph.tasks) {
    for (const dep of t.deps) {
      const a = groupOf.get(dep.task), b = groupOf.get(t.id);
      if (a !== undefined && b !== undefined && a !== b) ups.get(b)!.add(a);
    }
  }
  return new Map([...ups].map(([k, v]) => [k, [...v]]));
}

// Redraws `grp`'s bar of its tasks' states and its label and aria-label.
function paintGroup(grp: Group, tasks: Record<string, TaskStatus>, bar: SVGElement, label: SVGElement,
  el: SVGElement): void {
  const counts = new Map<string, number>();
  for (const id of grp.ids) {
    const st = tasks[id]?.state ?? "PENDING";
    counts.set(st, (counts.get(st) ?? 0) + 1);
  }
  clear(bar);
  let x = -GW / 2 + 6;
  const width = GW - 12;
  const told: string[] = [];
  for (const st of STATES) {
    const c = counts.get(st) ?? 0;
    if (!c) continue;
    told.push(`${c} ${st.toLowerCase()}`);
    const w = (width * c) / grp.ids.length;
    bar.append(s("rect", { class: "st-" + st, x, y: 4, width: Math.max(w, 0.5), height: 12 },
      s("title", {}, `${st}: ${c}`)));
    x += w;
  }
  const done = counts.get("SUCCESS") ?? 0;
  label.textContent = `${grp.part ? `L${grp.layer}.${grp.part}` : `layer ${grp.layer}`}: ${grp.ids.length} tasks, ${done} ✓`;
  el.setAttribute("aria-label", `${groupName(grp)}, ${grp.ids.length} tasks: ${told.join(", ")}. Open to see its tasks`);
}

// One node per group, laid out in layers like tasks (or wrapped into rows).
export function groupScene(graph: Graph, status: Record<string, TaskStatus>, groups: Group[],
  groupOf: Map<string, string>): Scene {
  let upLists = groupUps(graph, groups, groupOf);
  let laid = layered(groups.map((grp) => grp.key), upLists, GW, GH, 50, 12);
  if (laid.width > WRAP_OVER && laid.width > 3 * laid.height) ({ laid, upLists } = wrapped(groups, upLists));
  const { content, nodeLayer, edges } = sceneFrame(upLists, laid.pos, GW, () => "success");
  const boxes = new Map<string, Box>();
  const bars = new Map<string, SVGElement>();
  const labels = new Map<string, SVGElement>();
  for (const grp of groups) {
    const n = laid.pos.get(grp.key)!;
    const bar = s("g", { class: "bar" });
    const label = s("text", { x: -GW / 2 + 6, y: -4 });
    bars.set(grp.key, bar);
    labels.set(grp.key, label);
    const el = s("g", {
      class: "node group", "data-group": grp.key, transform: `translate(${n.x},${n.y})`,
      tabindex: 0, role: "button",
    }, s("rect", { class: "group-box", x: -GW / 2, y: -GH / 2, width: GW, height: GH, rx: 4 }), label, bar);
    boxes.set(grp.key, { key: grp.key, x: n.x, y: n.y, w: GW, h: GH, el });
    nodeLayer.append(el);
  }
  const update = (tasks: Record<string, TaskStatus>) => {
    for (const grp of groups) paintGroup(grp, tasks, bars.get(grp.key)!, labels.get(grp.key)!, boxes.get(grp.key)!.el);
  };
  update(status);
  return { content, width: laid.width, height: laid.height, boxes, edges, update };
}
