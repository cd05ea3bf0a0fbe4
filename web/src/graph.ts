// The run's DAG drawn with dagre's layered layout, one SVG node per task
// coloured by state. Beyond GROUP_OVER tasks it draws one node per layer
// (longest path from a root) with a bar of its tasks' states, so that a
// 10,000-task run lays out in milliseconds and stays readable.

import { Graph as DagreGraph, layout } from "@dagrejs/dagre";
import { clear, s } from "./dom";
import { Graph, STATES, TaskStatus } from "./types";

export const GROUP_OVER = 1500;
const W = 150, H = 26, GW = 220, GH = 44;

interface Drawn {
  svg: SVGSVGElement;
  update(tasks: Record<string, TaskStatus>): void;
}

function layers(graph: Graph): Map<string, number> {
  const deps = new Map(graph.tasks.map((t) => [t.id, t.deps.map((d) => d.task)]));
  const depth = new Map<string, number>();
  const visit = (id: string, seen: Set<string>): number => {
    const known = depth.get(id);
    if (known !== undefined) return known;
    if (seen.has(id)) return 0;  // a cycle cannot be journaled; stay safe anyway
    seen.add(id);
    let d = 0;
    for (const up of deps.get(id) ?? []) if (deps.has(up)) d = Math.max(d, visit(up, seen) + 1);
    depth.set(id, d);
    return d;
  };
  // Iterative-enough: the recursion depth is the DAG's depth, not its size.
  for (const t of graph.tasks) visit(t.id, new Set());
  return depth;
}

function edgePath(points: { x: number; y: number }[]): string {
  return points.map((p, i) => (i ? "L" : "M") + p.x.toFixed(1) + " " + p.y.toFixed(1)).join(" ");
}

function svgOf(g: DagreGraph, drawEdges: (root: SVGElement) => void): SVGSVGElement {
  const label = g.graph() as { width?: number; height?: number };
  const svg = s("svg", {
    id: "dag", width: (label.width ?? 100) + 20, height: (label.height ?? 100) + 20,
  }) as SVGSVGElement;
  const root = s("g", { transform: "translate(10,10)" });
  drawEdges(root);
  svg.append(root);
  return svg;
}

export function drawGraph(graph: Graph, status: Record<string, TaskStatus>, open: (task: string) => void): Drawn {
  return graph.tasks.length > GROUP_OVER ? drawGrouped(graph, status) : drawTasks(graph, status, open);
}

function drawTasks(graph: Graph, status: Record<string, TaskStatus>, open: (task: string) => void): Drawn {
  const g = new DagreGraph();
  g.setGraph({ rankdir: "LR", nodesep: 8, ranksep: 40 });
  g.setDefaultEdgeLabel(() => ({}));
  for (const t of graph.tasks) g.setNode(t.id, { width: W, height: H });
  for (const t of graph.tasks) for (const d of t.deps) if (g.hasNode(d.task)) g.setEdge(d.task, t.id);
  layout(g);
  const rects = new Map<string, SVGElement>();
  const svg = svgOf(g, (root) => {
    for (const e of g.edges()) {
      root.append(s("path", { class: "edge", d: edgePath(g.edge(e).points ?? []) }));
    }
    for (const t of graph.tasks) {
      const n = g.node(t.id) as { x: number; y: number };
      const state = status[t.id]?.state ?? "PENDING";
      const rect = s("rect", { class: "st-" + state, x: -W / 2, y: -H / 2, width: W, height: H, rx: 4 });
      const node = s("g", {
        class: "node", "data-task": t.id, "data-state": state, transform: `translate(${n.x},${n.y})`,
        onclick: () => open(t.id),
      }, rect, s("text", { x: -W / 2 + 6, y: 4 }, t.id.length > 22 ? t.id.slice(0, 21) + "…" : t.id),
        s("title", {}, `${t.id} (${t.type}): ${state}`));
      rects.set(t.id, rect);
      root.append(node);
    }
  });
  return {
    svg,
    update(tasks) {
      for (const [id, rect] of rects) {
        const state = tasks[id]?.state ?? "PENDING";
        const node = rect.parentNode as SVGElement;
        if (node.getAttribute("data-state") === state) continue;
        node.setAttribute("data-state", state);
        rect.setAttribute("class", "st-" + state);
      }
    },
  };
}

function drawGrouped(graph: Graph, status: Record<string, TaskStatus>): Drawn {
  const depth = layers(graph);
  const members = new Map<number, string[]>();
  for (const t of graph.tasks) {
    const d = depth.get(t.id) ?? 0;
    if (!members.has(d)) members.set(d, []);
    members.get(d)!.push(t.id);
  }
  const g = new DagreGraph();
  g.setGraph({ rankdir: "LR", nodesep: 12, ranksep: 50 });
  g.setDefaultEdgeLabel(() => ({}));
  for (const d of members.keys()) g.setNode("L" + d, { width: GW, height: GH });
  for (const t of graph.tasks) {
    for (const dep of t.deps) {
      const a = depth.get(dep.task), b = depth.get(t.id);
      if (a !== undefined && b !== undefined && a !== b) g.setEdge("L" + a, "L" + b);
    }
  }
  layout(g);
  const bars = new Map<number, SVGElement>();
  const labels = new Map<number, SVGElement>();
  const svg = svgOf(g, (root) => {
    for (const e of g.edges()) root.append(s("path", { class: "edge", d: edgePath(g.edge(e).points ?? []) }));
    for (const [d, ids] of members) {
      const n = g.node("L" + d) as { x: number; y: number };
      const bar = s("g", { class: "bar" });
      const label = s("text", { x: -GW / 2 + 6, y: -4 }, `layer ${d}: ${ids.length} tasks`);
      bars.set(d, bar);
      labels.set(d, label);
      root.append(s("g", { class: "node group", "data-group": "L" + d, transform: `translate(${n.x},${n.y})` },
        s("rect", { class: "st-SKIPPED", x: -GW / 2, y: -GH / 2, width: GW, height: GH, rx: 4 }), label, bar));
    }
  });
  const update = (tasks: Record<string, TaskStatus>) => {
    for (const [d, ids] of members) {
      const counts = new Map<string, number>();
      for (const id of ids) {
        const st = tasks[id]?.state ?? "PENDING";
        counts.set(st, (counts.get(st) ?? 0) + 1);
      }
      const bar = bars.get(d)!;
      clear(bar);
      let x = -GW / 2 + 6;
      const width = GW - 12;
      for (const st of STATES) {
        const c = counts.get(st) ?? 0;
        if (!c) continue;
        const w = (width * c) / ids.length;
        bar.append(s("rect", { class: "st-" + st, x, y: 4, width: Math.max(w, 0.5), height: 12 },
          s("title", {}, `${st}: ${c}`)));
        x += w;
      }
      labels.get(d)!.textContent = `layer ${d}: ${ids.length} tasks, ${counts.get("SUCCESS") ?? 0} done`;
    }
  };
  update(status);
  return { svg, update };
}
