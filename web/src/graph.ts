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
//
// This file holds GraphView (toolbar, legend, search, highlight, drill-down)
// and what other pages import; the layout is in graph_layout.ts, the
// drawing in graph_scene.ts and graph_groups.ts, zoom/pan/fit/minimap in
// graph_view.ts.

import { clear, h, s } from "./dom";
import { groupName, groupScene, groupsOf, Group } from "./graph_groups";
import { Box, CONDITION_TEXT, CONDITIONS, Scene, STATE_GLYPH, taskScene } from "./graph_scene";
import { GraphViewport } from "./graph_view";
import { Graph, STATES, TaskStatus } from "./types";

export { CONDITIONS, STATE_GLYPH } from "./graph_scene";

export const GROUP_OVER = 1500;

// Every node reachable from `from` along `next`, `from` itself excluded.
function reach(from: string, next: Map<string, string[]>): Set<string> {
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
}

// The graph with its toolbar, legend, minimap and the live state of its
// tasks. Call fit() once `root` is in the document (it needs its size).
export class GraphView {
  readonly root: HTMLElement;
  readonly grouped: boolean;
  private readonly svg: SVGSVGElement;
  private readonly viewport: SVGElement;
  private readonly pan: GraphViewport;
  private readonly search: HTMLInputElement;
  private readonly findMsg: HTMLElement;
  private readonly crumb: HTMLElement;
  private readonly card: HTMLElement;
  private scene!: Scene;
  private groupSceneKept?: Scene;
  private groups: Group[] = [];
  private groupOf = new Map<string, string>();
  private drilled?: Group;
  private lit: Element[] = [];
  private ups = new Map<string, string[]>();
  private downs = new Map<string, string[]>();
  private found = { query: "", index: 0 };

  constructor(private readonly graph: Graph, private status: Record<string, TaskStatus>,
    private readonly open: (task: string) => void) {
    this.grouped = graph.tasks.length > GROUP_OVER;
    this.search = h("input", {
      id: "graph-search", type: "search", placeholder: "Find a task…", "aria-label": "Find a task by name",
      autocomplete: "off", list: this.grouped ? undefined : "graph-task-names",
    }) as HTMLInputElement;
    this.findMsg = h("span", { id: "graph-find-msg", class: "muted small", role: "status" });
    this.crumb = h("span", { id: "graph-crumb", class: "small" });
    const tools = this.toolbar();
    this.svg = s("svg", {
      id: "dag", tabindex: 0, role: "group", class: "dag",
      "aria-label": "Task graph: drag or use the arrow keys to pan, the wheel or + and - to zoom, 0 to fit; Tab moves between tasks",
    }) as SVGSVGElement;
    this.svg.append(markers());
    this.viewport = s("g", { class: "viewport" });
    this.svg.append(this.viewport);
    const minimap = h("canvas", { class: "graph-minimap", id: "graph-minimap", "aria-hidden": "true" }) as HTMLCanvasElement;
    this.card = h("div", { class: "graph-card hidden", id: "graph-card", "aria-hidden": "true" });
    const view = h("div", { class: "graph-view" }, this.svg, minimap, this.card);
    this.root = h("div", { class: "graph" }, tools, legend(this.grouped), view);

    this.search.addEventListener("keydown", (e) => {
      if (e.key === "Enter") {
        e.preventDefault();
        this.find(this.search.value);
      }
    });
    this.search.addEventListener("change", () => this.find(this.search.value));
    this.pan = new GraphViewport(this.svg, this.viewport, minimap, view);
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
    this.pan.paintMinimap(true);
  }

  // The whole scene in view, centred; never enlarged past 1.
  fit(): void {
    this.pan.fit();
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

  // The zoom buttons, the search box (with the task names to complete
  // from, in a graph drawn task by task), its message and the crumb.
  private toolbar(): HTMLElement {
    const button = (id: string, label: string, text: string, onclick: () => void) =>
      h("button", { id, type: "button", class: "tool", "aria-label": label, title: label, onclick }, text);
    const names = this.grouped ? "" : h("datalist", { id: "graph-task-names" },
      ...this.graph.tasks.map((t) => h("option", { value: t.id })));
    return h("div", { class: "graph-tools", role: "toolbar", "aria-label": "Graph view" },
      button("graph-zoom-in", "Zoom in (+)", "+", () => this.pan.zoomBy(1.25)),
      button("graph-zoom-out", "Zoom out (−)", "−", () => this.pan.zoomBy(0.8)),
      button("graph-fit", "Fit the whole graph in view (0)", "Fit", () => this.fit()),
      this.search, names, this.findMsg, this.crumb);
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
    this.pan.setScene(scene);
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

  // Centres the node `key`, zoomed in at least to a readable scale, focuses
  // it and highlights its neighbours.
  private focusOn(key: string): void {
    const box = this.scene.boxes.get(key);
    if (!box) return;
    this.pan.centreOn(box.x, box.y, 1);
    for (const el of this.svg.querySelectorAll(".found")) el.classList.remove("found");
    box.el.classList.add("found");
    this.svg.dataset.found = key;
    (box.el as SVGGElement).focus({ preventScroll: true });
    this.highlight(key);
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
    const up = reach(key, this.ups), down = reach(key, this.downs);
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
    const at = this.pan.toView(box.x + box.w / 2, box.y - box.h / 2);
    const left = at.x + 8;
    const top = at.y;
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

  // Clicks and Enter open a node, Escape leaves a drilled-down layer; hover
  // and focus light a node's neighbourhood (zoom and pan: GraphViewport).
  private listen(): void {
    const svg = this.svg;
    const nodeAt = (t: EventTarget | null) => (t instanceof Element ? t.closest(".node") : null);
    svg.addEventListener("click", (e) => {
      if (this.pan.takeDragClick()) return;
      const node = nodeAt(e.target);
      if (node) this.activate(node);
    });
    svg.addEventListener("keydown", (e) => {
      const node = nodeAt(e.target);
      switch (e.key) {
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
      if (this.pan.dragging) return;
      const node = nodeAt(e.target);
      this.highlight(node ? this.keyOf(node) : focusedKey());
    });
    svg.addEventListener("mouseleave", () => this.highlight(focusedKey()));
    svg.addEventListener("focusin", (e) => {
      const node = nodeAt(e.target);
      if (!node) return;
      const box = this.scene.boxes.get(this.keyOf(node));
      if (box) this.pan.reveal(box);
      this.highlight(this.keyOf(node));
    });
    svg.addEventListener("focusout", () => this.highlight(undefined));
  }
}

// The arrowheads of the edges, one per condition.
function markers(): SVGElement {
  const defs = s("defs");
  for (const on of CONDITIONS) {
    defs.append(s("marker", {
      id: "arrow-" + on, class: "arrow arrow-" + on, viewBox: "0 0 10 10", refX: 10, refY: 5,
      markerWidth: 8, markerHeight: 8, markerUnits: "userSpaceOnUse", orient: "auto",
    }, s("path", { d: "M0,0 L10,5 L0,10 z" })));
  }
  return defs;
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
