// The drawn scene of a task graph: taskScene() lays out tasks (all, or a
// drilled-down layer's with their faded neighbours) and draws them as SVG
// nodes and condition-styled edges, and can repaint their states in place.
// Contract: a Scene owns its `content` group; its `boxes` are keyed by task
// id (or group key, see graph_groups.ts) with centres in scene px, and its
// `edges` name those keys. update() changes only the nodes whose state
// changed. Edge ends refer to the arrow markers `arrow-<condition>` that
// the view defines once per SVG.

import { s } from "./dom";
import { edgePath, layered, Placed } from "./graph_layout";
import { Graph, TaskStatus } from "./types";

const W = 140, H = 24, GAP_X = 30, GAP_Y = 6;

// Edge conditions as the graph API gives them ("on" absent = success).
export const CONDITIONS = ["success", "failure", "timeout", "done"] as const;
export const CONDITION_TEXT: Record<string, string> = {
  success: "on success", failure: "on failure", timeout: "on timeout", done: "on done (any end)",
};

// A glyph beside each task's name, so that its state is not told by colour alone.
export const STATE_GLYPH: Record<string, string> = {
  PENDING: "○", READY: "◔", RUNNING: "▶", RETRYING: "↻", SUCCESS: "✓", FAILED: "✗",
  TIMEOUT: "◷", SKIPPED: "–", CANCELED: "⊘",
};

export interface Box {
  key: string;        // task id, or a group's "L<layer>" / "L<layer>.<part>"
  x: number;
  y: number;
  w: number;
  h: number;
  el: SVGElement;
  task?: string;      // set for a task node
  context?: boolean;  // a neighbour shown faded in a drilled-down layer
}

export interface Edge {
  from: string;
  to: string;
  on: string;
  el: SVGElement;
}

// One laid-out scene: the nodes and edges drawn into `content`.
export interface Scene {
  content: SVGElement;
  width: number;
  height: number;
  boxes: Map<string, Box>;
  edges: Edge[];
  update(tasks: Record<string, TaskStatus>): void;
}

function condition(on: string | undefined): string {
  return on && (CONDITIONS as readonly string[]).includes(on) ? on : "success";
}

function edgeEl(from: string, to: string, on: string, d: string): SVGElement {
  return s("path", {
    class: "edge edge-" + on, "data-on": on, "data-from": from, "data-to": to,
    d, "marker-end": `url(#arrow-${on})`,
  }, s("title", {}, `${from} → ${to} (${CONDITION_TEXT[on]})`));
}

// The scene's group with its edge layer (drawn, from `ups`) under an empty
// node layer; `on` gives an edge's condition, `w` the nodes' width.
export function sceneFrame(ups: Map<string, string[]>, pos: Map<string, Placed>, w: number,
  on: (from: string, to: string) => string): { content: SVGElement; nodeLayer: SVGElement; edges: Edge[] } {
  const content = s("g", { class: "scene" });
  const edgeLayer = s("g", { class: "edges" });
  const nodeLayer = s("g", { class: "nodes" });
  content.append(edgeLayer, nodeLayer);
  const edges: Edge[] = [];
  for (const [to, froms] of ups) {
    for (const from of froms) {
      const cond = on(from, to);
      const el = edgeEl(from, to, cond, edgePath(pos.get(from)!, pos.get(to)!, w, w));
      edges.push({ from, to, on: cond, el });
      edgeLayer.append(el);
    }
  }
  return { content, nodeLayer, edges };
}

function shortName(id: string, max: number): string {
  return id.length > max ? id.slice(0, max - 1) + "…" : id;
}

// Each task's upstream tasks among `tasks` (one entry per pair) and the
// condition of each pair's edge, keyed "from\nto".
function taskEdges(tasks: Graph["tasks"]): { ups: Map<string, string[]>; conditions: Map<string, string> } {
  const present = new Set(tasks.map((t) => t.id));
  const ups = new Map<string, string[]>();
  const conditions = new Map<string, string>();
  for (const t of tasks) {
    const mine: string[] = [];
    for (const d of t.deps) {
      if (!present.has(d.task)) continue;
      if (!conditions.has(d.task + "\n" + t.id)) mine.push(d.task);
      conditions.set(d.task + "\n" + t.id, condition(d.on));
    }
    ups.set(t.id, mine);
  }
  return { ups, conditions };
}

interface TaskParts {
  rect: SVGElement;
  glyph: SVGElement;
  title: SVGElement;
  type: string;
}

// One task's node, centred on `n`, with the parts that update() repaints.
function taskNode(t: Graph["tasks"][number], n: Placed, state: string, isContext: boolean):
  { el: SVGElement; parts: TaskParts } {
  const rect = s("rect", { class: "st-" + state, x: -W / 2, y: -H / 2, width: W, height: H, rx: 4 });
  const glyph = s("text", { class: "glyph", x: W / 2 - 6, y: 4, "text-anchor": "end", "aria-hidden": "true" },
    STATE_GLYPH[state] ?? "");
  const title = s("title", {}, `${t.id} (${t.type}): ${state}`);
  const el = s("g", {
    class: "node" + (isContext ? " context" : ""), "data-task": t.id, "data-state": state,
    transform: `translate(${n.x},${n.y})`, tabindex: 0, role: "link",
    "aria-label": `task ${t.id}, ${state.toLowerCase()}`,
  }, rect, s("text", { x: -W / 2 + 5, y: 4 }, shortName(t.id, 20)), glyph, title);
  return { el, parts: { rect, glyph, title, type: t.type } };
}

// The tasks of `graph` whose ids are in `only` (all when absent), one node
// each; `context` ones are drawn faded (a drilled-down layer's neighbours).
export function taskScene(graph: Graph, status: Record<string, TaskStatus>, only?: Set<string>,
  context?: Set<string>): Scene {
  const tasks = only ? graph.tasks.filter((t) => only.has(t.id)) : graph.tasks;
  const { ups, conditions } = taskEdges(tasks);
  const laid = layered(tasks.map((t) => t.id), ups, W, H, GAP_X, GAP_Y);
  const { content, nodeLayer, edges } = sceneFrame(ups, laid.pos, W,
    (from, to) => conditions.get(from + "\n" + to) ?? "success");
  const boxes = new Map<string, Box>();
  const parts = new Map<string, TaskParts>();
  for (const t of tasks) {
    const n = laid.pos.get(t.id)!;
    const isContext = context?.has(t.id) ?? false;
    const node = taskNode(t, n, status[t.id]?.state ?? "PENDING", isContext);
    boxes.set(t.id, { key: t.id, x: n.x, y: n.y, w: W, h: H, el: node.el, task: t.id, context: isContext });
    parts.set(t.id, node.parts);
    nodeLayer.append(node.el);
  }
  return {
    content, width: laid.width, height: laid.height, boxes, edges,
    update(now) {
      for (const [id, p] of parts) {
        const state = now[id]?.state ?? "PENDING";
        const el = boxes.get(id)!.el;
        if (el.getAttribute("data-state") === state) continue;
        el.setAttribute("data-state", state);
        el.setAttribute("aria-label", `task ${id}, ${state.toLowerCase()}`);
        p.rect.setAttribute("class", "st-" + state);
        p.glyph.textContent = STATE_GLYPH[state] ?? "";
        p.title.textContent = `${id} (${p.type}): ${state}`;
      }
    },
  };
}
