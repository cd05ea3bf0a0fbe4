// The run's DAG: a layered layout (left to right) in an SVG that can
// be zoomed (wheel, buttons, + and -), panned (drag, arrow keys) and is fit
// to its box when it opens, with a minimap for large graphs. Edges end in
// arrowheads and are styled by their condition (on: success, failure,
// timeout, done); hovering or focusing a task highlights what it waits for
// and what waits for it; a task is found by name. Beyond GROUP_OVER tasks
// it draws one node per layer (longest path from a root; a layer of more
// than PART tasks in parts) with a bar of its tasks' states, so a
// 10,000-task run lays out in milliseconds; a click on a layer drills down
// into its tasks and their direct neighbours.

import { clear, h, s } from "./dom";
import { Graph, STATES, TaskStatus } from "./types";

export const GROUP_OVER = 1500;
const PART = 500;
const W = 140, H = 24, GAP_X = 30, GAP_Y = 6, GW = 180, GH = 40;
const MINIMAP_OVER = 40;  // nodes; smaller graphs fit their box readably
const MAX_SCALE = 2.5;
const WRAP_OVER = 2600;  // px: a wider chain of layers is wrapped into rows

// Edge conditions as the graph API gives them ("on" absent = success).
export const CONDITIONS = ["success", "failure", "timeout", "done"] as const;
const CONDITION_TEXT: Record<string, string> = {
  success: "on success", failure: "on failure", timeout: "on timeout", done: "on done (any end)",
};

// A glyph beside each task's name, so that its state is not told by colour alone.
export const STATE_GLYPH: Record<string, string> = {
  PENDING: "○", READY: "◔", RUNNING: "▶", RETRYING: "↻", SUCCESS: "✓", FAILED: "✗",
  TIMEOUT: "◷", SKIPPED: "–", CANCELED: "⊘",
};

interface Box {
  key: string;        // task id, or a group's "L<layer>" / "L<layer>.<part>"
  x: number;
  y: number;
  w: number;
  h: number;
  el: SVGElement;
  task?: string;      // set for a task node
  context?: boolean;  // a neighbour shown faded in a drilled-down layer
}

interface Edge {
  from: string;
  to: string;
  on: string;
  el: SVGElement;
}

// One laid-out scene: the nodes and edges drawn into `content`.
interface Scene {
  content: SVGElement;
  width: number;
  height: number;
  boxes: Map<string, Box>;
  edges: Edge[];
  update(tasks: Record<string, TaskStatus>): void;
}

// A task's longest-path depth from a root.
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
  // The recursion depth is the DAG's depth, not its size.
  for (const t of graph.tasks) visit(t.id, new Set());
  return depth;
}

// A curve from the right side of one node to the left side of the next.
function edgePath(a: Placed, b: Placed, aw: number, bw: number): string {
  const x1 = a.x + aw / 2, x2 = b.x - bw / 2;
  const c = Math.max(12, (x2 - x1) / 2);
  const f = (n: number) => n.toFixed(1);
  return `M${f(x1)} ${f(a.y)} C${f(x1 + c)} ${f(a.y)} ${f(x2 - c)} ${f(b.y)} ${f(x2)} ${f(b.y)}`;
}

interface Placed {
  x: number;
  y: number;
}

// Places `keys` in layers by longest path from a root, left to right;
// within a layer, orders them to cross fewer edges (barycentre sweeps) and
// puts each near the mean height of what it depends on, one row apart.
// Linear in the graph's size, unlike a full Sugiyama layout, and as
// compact as the widest layer.
function layered(keys: string[], ups: Map<string, string[]>, w: number, h: number, gapX: number, gapY: number):
  { pos: Map<string, Placed>; width: number; height: number } {
  const known = new Set(keys);
  const depth = new Map<string, number>();
  const visit = (k: string, seen: Set<string>): number => {
    const d0 = depth.get(k);
    if (d0 !== undefined) return d0;
    if (seen.has(k)) return 0;
    seen.add(k);
    let d = 0;
    for (const u of ups.get(k) ?? []) if (known.has(u)) d = Math.max(d, visit(u, seen) + 1);
    depth.set(k, d);
    return d;
  };
  for (const k of keys) visit(k, new Set());
  const rows: string[][] = [];
  for (const k of keys) (rows[depth.get(k)!] ??= []).push(k);
  for (let i = 0; i < rows.length; i++) rows[i] ??= [];
  const downs = new Map<string, string[]>();
  for (const k of keys) for (const u of ups.get(k) ?? []) if (known.has(u)) (downs.get(u) ?? downs.set(u, []).get(u)!).push(k);
  // A node's place in its layer, centred on 0 so that layers compare.
  const at = new Map<string, number>();
  const number = (row: string[]) => row.forEach((k, i) => at.set(k, i - (row.length - 1) / 2));
  rows.forEach(number);
  const sortBy = (row: string[], next: Map<string, string[]>) => {
    const bary = new Map<string, number>();
    for (const k of row) {
      const ns = (next.get(k) ?? []).filter((n) => at.has(n));
      bary.set(k, ns.length ? ns.reduce((sum, n) => sum + at.get(n)!, 0) / ns.length : at.get(k)!);
    }
    row.sort((a, b) => bary.get(a)! - bary.get(b)!);
    number(row);
  };
  for (let sweep = 0; sweep < 4; sweep++) {
    for (let i = 1; i < rows.length; i++) sortBy(rows[i], ups);
    for (let i = rows.length - 2; i >= 0; i--) sortBy(rows[i], downs);
  }
  // Heights: each node wants the mean height of its neighbours on one side;
  // a forward pass keeps them a row apart, then the layer moves as a block.
  const step = h + gapY;
  const y = new Map<string, number>();
  const place = (row: string[], next: Map<string, string[]>) => {
    const want = row.map((k) => {
      const ns = (next.get(k) ?? []).filter((n) => y.has(n));
      return ns.length ? ns.reduce((sum, n) => sum + y.get(n)!, 0) / ns.length : NaN;
    });
    const base = row.map((_, i) => (i - (row.length - 1) / 2) * step);
    const desired = want.map((v, i) => (isNaN(v) ? base[i] : v));
    const got: number[] = [];
    desired.forEach((d, i) => got.push(i ? Math.max(d, got[i - 1] + step) : d));
    const shift = desired.reduce((sum, d, i) => sum + d - got[i], 0) / Math.max(1, row.length);
    row.forEach((k, i) => y.set(k, got[i] + shift));
  };
  rows[0].forEach((k, i) => y.set(k, (i - (rows[0].length - 1) / 2) * step));
  for (let i = 1; i < rows.length; i++) place(rows[i], ups);
  if (rows.length > 1) {
    for (const k of rows[0]) y.delete(k);
    place(rows[0], downs);
  }
  let top = Infinity, bottom = -Infinity;
  for (const v of y.values()) {
    top = Math.min(top, v);
    bottom = Math.max(bottom, v);
  }
  const margin = 10;
  const pos = new Map<string, Placed>();
  for (const k of keys) pos.set(k, { x: margin + depth.get(k)! * (w + gapX) + w / 2, y: margin + h / 2 + y.get(k)! - top });
  return { pos, width: 2 * margin + rows.length * w + (rows.length - 1) * gapX, height: 2 * margin + h + bottom - top };
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

function shortName(id: string, max: number): string {
  return id.length > max ? id.slice(0, max - 1) + "…" : id;
}

// The tasks of `graph` whose ids are in `only` (all when absent), one node
// each; `context` ones are drawn faded (a drilled-down layer's neighbours).
function taskScene(graph: Graph, status: Record<string, TaskStatus>, only?: Set<string>,
  context?: Set<string>): Scene {
  const tasks = only ? graph.tasks.filter((t) => only.has(t.id)) : graph.tasks;
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
  const laid = layered(tasks.map((t) => t.id), ups, W, H, GAP_X, GAP_Y);
  const content = s("g", { class: "scene" });
  const edgeLayer = s("g", { class: "edges" });
  const nodeLayer = s("g", { class: "nodes" });
  content.append(edgeLayer, nodeLayer);
  const edges: Edge[] = [];
  for (const [to, froms] of ups) {
    for (const from of froms) {
      const on = conditions.get(from + "\n" + to) ?? "success";
      const el = edgeEl(from, to, on, edgePath(laid.pos.get(from)!, laid.pos.get(to)!, W, W));
      edges.push({ from, to, on, el });
      edgeLayer.append(el);
    }
  }
  const boxes = new Map<string, Box>();
  const parts = new Map<string, { rect: SVGElement; glyph: SVGElement; title: SVGElement; type: string }>();
  for (const t of tasks) {
    const n = laid.pos.get(t.id)!;
    const state = status[t.id]?.state ?? "PENDING";
    const rect = s("rect", { class: "st-" + state, x: -W / 2, y: -H / 2, width: W, height: H, rx: 4 });
    const glyph = s("text", { class: "glyph", x: W / 2 - 6, y: 4, "text-anchor": "end", "aria-hidden": "true" },
      STATE_GLYPH[state] ?? "");
    const title = s("title", {}, `${t.id} (${t.type}): ${state}`);
    const isContext = context?.has(t.id) ?? false;
    const el = s("g", {
      class: "node" + (isContext ? " context" : ""), "data-task": t.id, "data-state": state,
      transform: `translate(${n.x},${n.y})`, tabindex: 0, role: "link",
      "aria-label": `task ${t.id}, ${state.toLowerCase()}`,
    }, rect, s("text", { x: -W / 2 + 5, y: 4 }, shortName(t.id, 20)), glyph, title);
    boxes.set(t.id, { key: t.id, x: n.x, y: n.y, w: W, h: H, el, task: t.id, context: isContext });
    parts.set(t.id, { rect, glyph, title, type: t.type });
    nodeLayer.append(el);
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

interface Group {
  key: string;
  layer: number;
  part: number;   // 0 when the layer is drawn whole
  parts: number;
  ids: string[];
}

function groupsOf(graph: Graph): { groups: Group[]; groupOf: Map<string, string> } {
  const depth = layers(graph);
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

function groupName(g: Group): string {
  return g.part ? `layer ${g.layer} (part ${g.part} of ${g.parts})` : `layer ${g.layer}`;
}

function groupScene(graph: Graph, status: Record<string, TaskStatus>, groups: Group[],
  groupOf: Map<string, string>): Scene {
  const ups = new Map<string, Set<string>>(groups.map((grp) => [grp.key, new Set<string>()]));
  for (const t of graph.tasks) {
    for (const dep of t.deps) {
      const a = groupOf.get(dep.task), b = groupOf.get(t.id);
      if (a !== undefined && b !== undefined && a !== b) ups.get(b)!.add(a);
    }
  }
  let upLists = new Map([...ups].map(([k, v]) => [k, [...v]]));
  let laid = layered(groups.map((grp) => grp.key), upLists, GW, GH, 50, 12);
  if (laid.width > WRAP_OVER && laid.width > 3 * laid.height) {
    // A long chain of layers, wrapped into rows read left to right; only
    // the edges between neighbours in a row are drawn (a layer always
    // depends on the one before it).
    // Rows about as many as fit a wide screen's aspect (2.4:1).
    const perRow = Math.max(2, Math.ceil(Math.sqrt((groups.length * 2.4 * (GH + 24)) / (GW + 40))));
    const pos = new Map<string, Placed>();
    groups.forEach((grp, i) => pos.set(grp.key, { x: 10 + (i % perRow) * (GW + 40) + GW / 2, y: 10 + Math.floor(i / perRow) * (GH + 24) + GH / 2 }));
    const rows = Math.ceil(groups.length / perRow);
    upLists = new Map(groups.map((grp, i) => [grp.key, (upLists.get(grp.key) ?? []).filter((u) => {
      const j = groups.findIndex((g) => g.key === u);
      return Math.floor(j / perRow) === Math.floor(i / perRow) && i - j === 1;
    })]));
    laid = { pos, width: 20 + perRow * (GW + 40) - 40, height: 20 + rows * (GH + 24) - 24 };
  }
  const content = s("g", { class: "scene" });
  const edgeLayer = s("g", { class: "edges" });
  const nodeLayer = s("g", { class: "nodes" });
  content.append(edgeLayer, nodeLayer);
  const edges: Edge[] = [];
  for (const [to, froms] of upLists) {
    for (const from of froms) {
      const el = edgeEl(from, to, "success", edgePath(laid.pos.get(from)!, laid.pos.get(to)!, GW, GW));
      edges.push({ from, to, on: "success", el });
      edgeLayer.append(el);
    }
  }
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
    for (const grp of groups) {
      const counts = new Map<string, number>();
      for (const id of grp.ids) {
        const st = tasks[id]?.state ?? "PENDING";
        counts.set(st, (counts.get(st) ?? 0) + 1);
      }
      const bar = bars.get(grp.key)!;
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
      labels.get(grp.key)!.textContent = `${grp.part ? `L${grp.layer}.${grp.part}` : `layer ${grp.layer}`}: ${grp.ids.length} tasks, ${done} ✓`;
      boxes.get(grp.key)!.el.setAttribute("aria-label",
        `${groupName(grp)}, ${grp.ids.length} tasks: ${told.join(", ")}. Open to see its tasks`);
    }
  };
  update(status);
  return { content, width: laid.width, height: laid.height, boxes, edges, update };
}

// The graph with its toolbar, legend, minimap and the live state of its
// tasks. Call fit() once `root` is in the document (it needs its size).
export class GraphView {
  readonly root: HTMLElement;
  readonly grouped: boolean;
  private readonly svg: SVGSVGElement;
  private readonly viewport: SVGElement;
  private readonly view: HTMLElement;
  private readonly minimap: HTMLCanvasElement;
  private readonly search: HTMLInputElement;
  private readonly findMsg: HTMLElement;
  private readonly crumb: HTMLElement;
  private readonly card: HTMLElement;
  private scene!: Scene;
  private groupSceneKept?: Scene;
  private groups: Group[] = [];
  private groupOf = new Map<string, string>();
  private drilled?: Group;
  private tx = 0;
  private ty = 0;
  private k = 1;
  private moved = false;  // by the user: a resize then keeps the view
  private lit: Element[] = [];
  private ups = new Map<string, string[]>();
  private downs = new Map<string, string[]>();
  private found = { query: "", index: 0 };
  private minimapBase?: HTMLCanvasElement;
  private frame = 0;

  constructor(private readonly graph: Graph, private status: Record<string, TaskStatus>,
    private readonly open: (task: string) => void) {
    this.grouped = graph.tasks.length > GROUP_OVER;
    const button = (id: string, label: string, text: string, onclick: () => void) =>
      h("button", { id, type: "button", class: "tool", "aria-label": label, title: label, onclick }, text);
    this.search = h("input", {
      id: "graph-search", type: "search", placeholder: "Find a task…", "aria-label": "Find a task by name",
      autocomplete: "off", list: this.grouped ? undefined : "graph-task-names",
    }) as HTMLInputElement;
    this.findMsg = h("span", { id: "graph-find-msg", class: "muted small", role: "status" });
    this.crumb = h("span", { id: "graph-crumb", class: "small" });
    const names = this.grouped ? "" : h("datalist", { id: "graph-task-names" },
      ...graph.tasks.map((t) => h("option", { value: t.id })));
    const tools = h("div", { class: "graph-tools", role: "toolbar", "aria-label": "Graph view" },
      button("graph-zoom-in", "Zoom in (+)", "+", () => this.zoomBy(1.25)),
      button("graph-zoom-out", "Zoom out (−)", "−", () => this.zoomBy(0.8)),
      button("graph-fit", "Fit the whole graph in view (0)", "Fit", () => this.fit()),
      this.search, names, this.findMsg, this.crumb);
    this.svg = s("svg", {
      id: "dag", tabindex: 0, role: "group", class: "dag",
      "aria-label": "Task graph: drag or use the arrow keys to pan, the wheel or + and - to zoom, 0 to fit; Tab moves between tasks",
    }) as SVGSVGElement;
    this.svg.append(this.markers());
    this.viewport = s("g", { class: "viewport" });
    this.svg.append(this.viewport);
    this.minimap = h("canvas", { class: "graph-minimap", id: "graph-minimap", "aria-hidden": "true" }) as HTMLCanvasElement;
    this.card = h("div", { class: "graph-card hidden", id: "graph-card", "aria-hidden": "true" });
    this.view = h("div", { class: "graph-view" }, this.svg, this.minimap, this.card);
    this.root = h("div", { class: "graph" }, tools, legend(this.grouped), this.view);

    this.search.addEventListener("keydown", (e) => {
      if (e.key === "Enter") {
        e.preventDefault();
        this.find(this.search.value);
      }
    });
    this.search.addEventListener("change", () => this.find(this.search.value));
    this.listen();

    if (this.grouped) {
      ({ groups: this.groups, groupOf: this.groupOf } = groupsOf(graph));
      this.show(groupScene(graph, status, this.groups, this.groupOf));
      this.groupSceneKept = this.scene;
    } else {
      this.show(taskScene(graph, status));
    }
  }

  update(tasks: Record<string, TaskStatus>): void {
    this.status = tasks;
    this.scene.update(tasks);
    this.paintMinimap(true);
  }

  // The whole scene in view, centred; never enlarged past 1.
  fit(): void {
    const w = this.svg.clientWidth, hgt = this.svg.clientHeight;
    if (!w || !hgt) return;
    const pad = 8;
    this.k = Math.min(1, (w - 2 * pad) / this.scene.width, (hgt - 2 * pad) / this.scene.height);
    this.tx = (w - this.scene.width * this.k) / 2;
    this.ty = (hgt - this.scene.height * this.k) / 2;
    this.moved = false;
    this.apply();
  }

  // Finds a task by name (exact, else the first, then the next, whose id
  // contains `query`), drilling into its layer in a grouped graph, and
  // zooms to it. Returns whether one was found.
  find(query: string): boolean {
    const q = query.trim().toLowerCase();
    if (!q) return false;
    const exact = this.graph.tasks.find((t) => t.id.toLowerCase() === q);
    const matches = exact ? [exact.id] : this.graph.tasks.filter((t) => t.id.toLowerCase().includes(q)).map((t) => t.id);
    if (!matches.length) {
      this.findMsg.textContent = `no task matches “${query.trim()}”`;
      return false;
    }
    this.found.index = this.found.query === q ? (this.found.index + 1) % matches.length : 0;
    this.found.query = q;
    const id = matches[this.found.index];
    this.findMsg.textContent = matches.length > 1
      ? `${this.found.index + 1} of ${matches.length} matches (Enter for the next): ${id}` : id;
    if (this.grouped) {
      const key = this.groupOf.get(id);
      const grp = this.groups.find((g) => g.key === key);
      if (grp && this.drilled !== grp) this.drill(grp);
    }
    this.focusOn(id);
    return true;
  }

  private show(scene: Scene): void {
    this.scene = scene;
    clear(this.viewport);
    this.viewport.append(scene.content);
    this.ups.clear();
    this.downs.clear();
    for (const e of scene.edges) {
      if (!this.ups.has(e.to)) this.ups.set(e.to, []);
      this.ups.get(e.to)!.push(e.from);
      if (!this.downs.has(e.from)) this.downs.set(e.from, []);
      this.downs.get(e.from)!.push(e.to);
    }
    this.lit = [];
    this.svg.classList.remove("focusing");
    this.svg.setAttribute("data-scene", this.drilled ? this.drilled.key : this.grouped ? "layers" : "tasks");
    this.minimap.dataset.large = String(scene.boxes.size > MINIMAP_OVER);
    // A small scene's box is only as tall as the scene (CSS caps it).
    this.view.style.setProperty("--scene-h", Math.ceil(scene.height + 16) + "px");
    this.minimapBase = undefined;
    this.fit();
  }

  // A grouped graph's layer: its tasks, with their direct upstream and
  // downstream tasks faded beside them while that stays under GROUP_OVER.
  private drill(grp: Group): void {
    const only = new Set(grp.ids);
    const context = new Set<string>();
    const byId = new Map(this.graph.tasks.map((t) => [t.id, t]));
    const downstream = new Map<string, string[]>();
    for (const t of this.graph.tasks) {
      for (const d of t.deps) {
        if (!downstream.has(d.task)) downstream.set(d.task, []);
        downstream.get(d.task)!.push(t.id);
      }
    }
    for (const id of grp.ids) {
      for (const d of byId.get(id)?.deps ?? []) if (!only.has(d.task)) context.add(d.task);
      for (const down of downstream.get(id) ?? []) if (!only.has(down)) context.add(down);
    }
    if (only.size + context.size <= GROUP_OVER) for (const id of context) only.add(id);
    else context.clear();
    this.drilled = grp;
    clear(this.crumb);
    this.crumb.append(
      h("button", { id: "graph-back", type: "button", class: "tool", onclick: () => this.undrill() }, "← All layers"),
      ` ${groupName(grp)}: ${grp.ids.length} tasks` + (context.size ? `, with their ${context.size} direct neighbours (faded)` : ""));
    this.show(taskScene(this.graph, this.status, only, context));
  }

  private undrill(): void {
    if (!this.groupSceneKept) return;
    this.drilled = undefined;
    clear(this.crumb);
    this.groupSceneKept.update(this.status);
    this.show(this.groupSceneKept);
    this.svg.focus({ preventScroll: true });
  }

  private markers(): SVGElement {
    const defs = s("defs");
    for (const on of CONDITIONS) {
      defs.append(s("marker", {
        id: "arrow-" + on, class: "arrow arrow-" + on, viewBox: "0 0 10 10", refX: 10, refY: 5,
        markerWidth: 8, markerHeight: 8, markerUnits: "userSpaceOnUse", orient: "auto",
      }, s("path", { d: "M0,0 L10,5 L0,10 z" })));
    }
    return defs;
  }

  private apply(): void {
    this.viewport.setAttribute("transform", `translate(${this.tx.toFixed(1)},${this.ty.toFixed(1)}) scale(${this.k.toFixed(4)})`);
    this.svg.dataset.zoom = this.k.toFixed(4);
    this.svg.classList.toggle("far", this.k < 0.4);
    this.paintMinimap(false);
  }

  // Zoom by `factor` keeping the point (cx, cy) of the view where it is
  // (the view's centre by default).
  private zoomBy(factor: number, cx = this.svg.clientWidth / 2, cy = this.svg.clientHeight / 2): void {
    const k = Math.max(0.02, Math.min(MAX_SCALE, this.k * factor));
    this.tx = cx - ((cx - this.tx) * k) / this.k;
    this.ty = cy - ((cy - this.ty) * k) / this.k;
    this.k = k;
    this.moved = true;
    this.apply();
  }

  private panBy(dx: number, dy: number): void {
    this.tx += dx;
    this.ty += dy;
    this.moved = true;
    this.apply();
  }

  // Centres the node `key`, zoomed in at least to a readable scale, focuses
  // it and highlights its neighbours.
  private focusOn(key: string): void {
    const box = this.scene.boxes.get(key);
    if (!box) return;
    this.k = Math.max(this.k, 1);
    this.tx = this.svg.clientWidth / 2 - box.x * this.k;
    this.ty = this.svg.clientHeight / 2 - box.y * this.k;
    this.moved = true;
    this.apply();
    for (const el of this.svg.querySelectorAll(".found")) el.classList.remove("found");
    box.el.classList.add("found");
    this.svg.dataset.found = key;
    (box.el as SVGGElement).focus({ preventScroll: true });
    this.highlight(key);
  }

  // Pans just enough to bring a focused node into view.
  private reveal(box: Box): void {
    const w = this.svg.clientWidth, hgt = this.svg.clientHeight;
    const x = this.tx + box.x * this.k, y = this.ty + box.y * this.k;
    const mx = (box.w / 2) * this.k + 8, my = (box.h / 2) * this.k + 8;
    let dx = 0, dy = 0;
    if (x - mx < 0) dx = mx - x; else if (x + mx > w) dx = w - x - mx;
    if (y - my < 0) dy = my - y; else if (y + my > hgt) dy = hgt - y - my;
    if (dx || dy) this.panBy(dx, dy);
  }

  // Lights `key`, everything upstream of it and everything downstream.
  private highlight(key: string | undefined): void {
    for (const el of this.lit) el.classList.remove("hl", "hl-up", "hl-down", "hl-self");
    this.lit = [];
    if (key === undefined || !this.scene.boxes.has(key)) {
      this.svg.classList.remove("focusing");
      this.card.classList.add("hidden");
      return;
    }
    const walk = (from: string, next: Map<string, string[]>): Set<string> => {
      const seen = new Set<string>();
      const todo = [from];
      while (todo.length) {
        for (const n of next.get(todo.pop()!) ?? []) {
          if (!seen.has(n)) {
            seen.add(n);
            todo.push(n);
          }
        }
      }
      return seen;
    };
    const up = walk(key, this.ups), down = walk(key, this.downs);
    const light = (el: Element, cls: string) => {
      el.classList.add("hl", cls);
      this.lit.push(el);
    };
    light(this.scene.boxes.get(key)!.el, "hl-self");
    for (const id of up) light(this.scene.boxes.get(id)!.el, "hl-up");
    for (const id of down) light(this.scene.boxes.get(id)!.el, "hl-down");
    for (const e of this.scene.edges) {
      if ((e.to === key || up.has(e.to)) && up.has(e.from)) light(e.el, "hl-up");
      else if ((e.from === key || down.has(e.from)) && down.has(e.to)) light(e.el, "hl-down");
    }
    this.svg.classList.add("focusing");
    this.showCard(this.scene.boxes.get(key)!, up.size, down.size);
  }

  // The name and state of the node lit, beside it: what is too small to
  // read in a fitted large graph is read here.
  private showCard(box: Box, up: number, down: number): void {
    clear(this.card);
    if (box.task) {
      const t = this.status[box.task];
      const state = t?.state ?? "PENDING";
      const type = this.graph.tasks.find((g) => g.id === box.task)?.type;
      const ran = t?.started_at_us && t.finished_at_us ? ` · ran ${Math.round((t.finished_at_us - t.started_at_us) / 1000)} ms` : "";
      this.card.append(h("strong", {}, box.task), h("div", {}, `${STATE_GLYPH[state] ?? ""} ${state.toLowerCase()}` +
        (type ? ` · ${type}` : "") + (t?.attempts ? ` · attempt ${t.attempts}` : "") + ran),
      h("div", { class: "muted" }, `${up} upstream · ${down} downstream`));
    } else {
      this.card.append(h("strong", {}, box.el.getAttribute("aria-label") ?? box.key));
    }
    this.card.classList.remove("hidden");
    const w = this.svg.clientWidth;
    const left = this.tx + (box.x + box.w / 2) * this.k + 8;
    const top = this.ty + (box.y - box.h / 2) * this.k;
    this.card.style.left = Math.max(4, Math.min(left, w - this.card.offsetWidth - 4)) + "px";
    this.card.style.top = Math.max(4, Math.min(top, this.svg.clientHeight - this.card.offsetHeight - 4)) + "px";
  }

  private activate(node: Element): void {
    const task = node.getAttribute("data-task");
    const group = node.getAttribute("data-group");
    if (group) {
      const grp = this.groups.find((g) => g.key === group);
      if (grp) this.drill(grp);
    } else if (task) {
      this.open(task);
    }
  }

  private keyOf(node: Element): string {
    return node.getAttribute("data-group") ?? node.getAttribute("data-task") ?? "";
  }

  private listen(): void {
    const svg = this.svg;
    const nodeAt = (t: EventTarget | null) => (t instanceof Element ? t.closest(".node") : null);
    svg.addEventListener("wheel", (e) => {
      e.preventDefault();
      const r = svg.getBoundingClientRect();
      this.zoomBy(Math.exp(-e.deltaY * 0.0015), e.clientX - r.left, e.clientY - r.top);
    }, { passive: false });
    // Drag to pan; a drag is not a click on the node it started on.
    let drag: { x: number; y: number; id: number; on: boolean } | undefined;
    let swallowClick = false;
    svg.addEventListener("pointerdown", (e) => {
      if (e.button !== 0) return;
      drag = { x: e.clientX, y: e.clientY, id: e.pointerId, on: false };
    });
    svg.addEventListener("pointermove", (e) => {
      if (!drag || e.pointerId !== drag.id) return;
      const dx = e.clientX - drag.x, dy = e.clientY - drag.y;
      if (!drag.on && Math.hypot(dx, dy) < 4) return;
      if (!drag.on) {
        drag.on = true;
        svg.setPointerCapture(e.pointerId);
        svg.classList.add("dragging");
      }
      drag.x = e.clientX;
      drag.y = e.clientY;
      this.panBy(dx, dy);
    });
    const end = (e: PointerEvent) => {
      if (!drag || e.pointerId !== drag.id) return;
      swallowClick = drag.on;
      drag = undefined;
      svg.classList.remove("dragging");
    };
    svg.addEventListener("pointerup", end);
    svg.addEventListener("pointercancel", end);
    svg.addEventListener("click", (e) => {
      if (swallowClick) {
        swallowClick = false;
        return;
      }
      const node = nodeAt(e.target);
      if (node) this.activate(node);
    });
    svg.addEventListener("keydown", (e) => {
      const node = nodeAt(e.target);
      const step = 60;
      switch (e.key) {
        case "+": case "=": this.zoomBy(1.25); break;
        case "-": case "_": this.zoomBy(0.8); break;
        case "0": this.fit(); break;
        case "ArrowLeft": this.panBy(step, 0); break;
        case "ArrowRight": this.panBy(-step, 0); break;
        case "ArrowUp": this.panBy(0, step); break;
        case "ArrowDown": this.panBy(0, -step); break;
        case "Enter": case " ":
          if (!node) return;
          this.activate(node);
          break;
        case "Escape":
          if (!this.drilled) return;
          this.undrill();
          break;
        default: return;
      }
      e.preventDefault();
    });
    // Hover lights a node's neighbourhood; off the nodes, the focused one's.
    const focusedKey = () => {
      const node = nodeAt(document.activeElement);
      return node && svg.contains(node) ? this.keyOf(node) : undefined;
    };
    svg.addEventListener("mouseover", (e) => {
      if (drag?.on) return;
      const node = nodeAt(e.target);
      this.highlight(node ? this.keyOf(node) : focusedKey());
    });
    svg.addEventListener("mouseleave", () => this.highlight(focusedKey()));
    svg.addEventListener("focusin", (e) => {
      const node = nodeAt(e.target);
      if (!node) return;
      const box = this.scene.boxes.get(this.keyOf(node));
      if (box) this.reveal(box);
      this.highlight(this.keyOf(node));
    });
    svg.addEventListener("focusout", () => this.highlight(undefined));
    // The minimap: press or drag to centre the view there.
    let mapping = false;
    const centre = (e: PointerEvent) => {
      const r = this.minimap.getBoundingClientRect();
      const scale = this.minimapScale();
      const gx = (e.clientX - r.left) / scale, gy = (e.clientY - r.top) / scale;
      this.tx = svg.clientWidth / 2 - gx * this.k;
      this.ty = svg.clientHeight / 2 - gy * this.k;
      this.moved = true;
      this.apply();
    };
    this.minimap.addEventListener("pointerdown", (e) => {
      mapping = true;
      this.minimap.setPointerCapture(e.pointerId);
      centre(e);
    });
    this.minimap.addEventListener("pointermove", (e) => { if (mapping) centre(e); });
    this.minimap.addEventListener("pointerup", () => { mapping = false; });
    // A box that changes size is fitted again until the user moves the view.
    new ResizeObserver(() => {
      if (!this.moved) this.fit();
    }).observe(this.view);
  }

  private minimapScale(): number {
    return Math.min(180 / this.scene.width, 120 / this.scene.height);
  }

  // The scene's nodes in their state's colour (redrawn when `nodes`
  // changed), and the part in view as a rectangle; at most once a frame.
  private paintMinimap(nodes: boolean): void {
    // Shown for a large scene only while part of it is out of view.
    const whole = this.tx >= -1 && this.ty >= -1 && this.tx + this.scene.width * this.k <= this.svg.clientWidth + 1 &&
      this.ty + this.scene.height * this.k <= this.svg.clientHeight + 1;
    this.minimap.hidden = this.minimap.dataset.large !== "true" || whole;
    if (this.minimap.hidden) return;
    if (nodes) this.minimapBase = undefined;
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      const scale = this.minimapScale();
      const w = Math.max(1, Math.ceil(this.scene.width * scale)), hgt = Math.max(1, Math.ceil(this.scene.height * scale));
      if (!this.minimapBase) {
        const base = document.createElement("canvas");
        base.width = w;
        base.height = hgt;
        const ctx = base.getContext("2d")!;
        const css = getComputedStyle(document.documentElement);
        const colours = new Map(STATES.map((st) => [st, css.getPropertyValue("--" + st).trim() || "#888"]));
        for (const b of this.scene.boxes.values()) {
          const st = b.el.getAttribute("data-state");
          ctx.fillStyle = st ? colours.get(st as typeof STATES[number]) ?? "#888" : "#98a2b3";
          ctx.fillRect((b.x - b.w / 2) * scale, (b.y - b.h / 2) * scale, Math.max(1, b.w * scale), Math.max(1, b.h * scale));
        }
        this.minimapBase = base;
      }
      if (this.minimap.width !== w || this.minimap.height !== hgt) {
        this.minimap.width = w;
        this.minimap.height = hgt;
      }
      const ctx = this.minimap.getContext("2d")!;
      ctx.clearRect(0, 0, w, hgt);
      ctx.drawImage(this.minimapBase, 0, 0);
      ctx.strokeStyle = "#1f4e79";
      ctx.lineWidth = 1.5;
      const vx = (-this.tx / this.k) * scale, vy = (-this.ty / this.k) * scale;
      const vw = (this.svg.clientWidth / this.k) * scale, vh = (this.svg.clientHeight / this.k) * scale;
      ctx.strokeRect(vx, vy, vw, vh);
    });
  }
}

// What the line styles and glyphs mean; each is told by its shape and
// text, not by colour alone.
function legend(grouped: boolean): HTMLElement {
  const line = (on: string) => s("svg", { width: 34, height: 10, "aria-hidden": "true", class: "legend-line" },
    s("line", { class: "edge edge-" + on, x1: 1, y1: 5, x2: 26, y2: 5 }),
    s("path", { class: "arrow-" + on, d: "M26,1 L33,5 L26,9 z" }));
  const states = STATES.map((st) => h("span", { class: "legend-state" },
    h("span", { class: "state " + st }, STATE_GLYPH[st] + " " + st.toLowerCase())));
  return h("div", { class: "legend graph-legend", id: "graph-legend" },
    ...(grouped ? [] : CONDITIONS.map((on) => h("span", { class: "legend-edge", "data-on": on }, line(on), " " + CONDITION_TEXT[on]))),
    ...states,
    grouped ? h("span", { class: "muted" }, "Click a layer (or Enter) to see its tasks.") : "");
}
