// Moving around a graph's SVG: zoom (wheel, zoomBy, + and - keys), pan
// (drag, panBy, arrow keys), fit (0 key, and whenever the box resizes until
// the user moves the view) and a minimap of the scene's nodes in their
// state's colour, shown for a large scene while part of it is out of view,
// where a press or drag centres the view. Contract: GraphViewport owns the
// transform of `viewport` and the listeners it adds to `svg`, `minimap` and
// `box`; it knows nothing of tasks or groups. Call setScene() on every new
// scene (it fits it), paintMinimap(true) when node states change. A drag is
// not a click: the owner of the click handler asks takeDragClick() first.

import { Box, Scene } from "./graph_scene";
import { STATES } from "./types";

const MINIMAP_OVER = 40;  // nodes; smaller graphs fit their box readably
const MAX_SCALE = 2.5;

export class GraphViewport {
  private scene!: Scene;
  private tx = 0;
  private ty = 0;
  private k = 1;
  private moved = false;  // by the user: a resize then keeps the view
  private drag?: { x: number; y: number; id: number; on: boolean };
  private swallowClick = false;
  private minimapBase?: HTMLCanvasElement;
  private frame = 0;

  constructor(private readonly svg: SVGSVGElement, private readonly viewport: SVGElement,
    private readonly minimap: HTMLCanvasElement, private readonly box: HTMLElement) {
    this.listenWheelAndKeys();
    this.listenDrag();
    this.listenMinimap();
    // A box that changes size is fitted again until the user moves the view.
    new ResizeObserver(() => {
      if (!this.moved) this.fit();
    }).observe(this.box);
  }

  // Whether a drag is under way (hover highlights wait for its end).
  get dragging(): boolean {
    return this.drag?.on ?? false;
  }

  // True, once, for the click that ends a drag.
  takeDragClick(): boolean {
    const was = this.swallowClick;
    this.swallowClick = false;
    return was;
  }

  // Shows `scene` (already appended to the viewport) and fits it.
  setScene(scene: Scene): void {
    this.scene = scene;
    this.minimap.dataset.large = String(scene.boxes.size > MINIMAP_OVER);
    // A small scene's box is only as tall as the scene (CSS caps it).
    this.box.style.setProperty("--scene-h", Math.ceil(scene.height + 16) + "px");
    this.minimapBase = undefined;
    this.fit();
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

  // Zoom by `factor` keeping the point (cx, cy) of the view where it is
  // (the view's centre by default).
  zoomBy(factor: number, cx = this.svg.clientWidth / 2, cy = this.svg.clientHeight / 2): void {
    const k = Math.max(0.02, Math.min(MAX_SCALE, this.k * factor));
    this.tx = cx - ((cx - this.tx) * k) / this.k;
    this.ty = cy - ((cy - this.ty) * k) / this.k;
    this.k = k;
    this.moved = true;
    this.apply();
  }

  panBy(dx: number, dy: number): void {
    this.tx += dx;
    this.ty += dy;
    this.moved = true;
    this.apply();
  }

  // Centres the scene point (x, y), zoomed in to at least `scale`.
  centreOn(x: number, y: number, scale = 0): void {
    this.k = Math.max(this.k, scale);
    this.tx = this.svg.clientWidth / 2 - x * this.k;
    this.ty = this.svg.clientHeight / 2 - y * this.k;
    this.moved = true;
    this.apply();
  }

  // Pans just enough to bring a focused node into view.
  reveal(box: Box): void {
    const w = this.svg.clientWidth, hgt = this.svg.clientHeight;
    const x = this.tx + box.x * this.k, y = this.ty + box.y * this.k;
    const mx = (box.w / 2) * this.k + 8, my = (box.h / 2) * this.k + 8;
    let dx = 0, dy = 0;
    if (x - mx < 0) dx = mx - x; else if (x + mx > w) dx = w - x - mx;
    if (y - my < 0) dy = my - y; else if (y + my > hgt) dy = hgt - y - my;
    if (dx || dy) this.panBy(dx, dy);
  }

  // Where the scene point (x, y) is drawn, in px from the view's corner.
  toView(x: number, y: number): { x: number; y: number } {
    return { x: this.tx + x * this.k, y: this.ty + y * this.k };
  }

  private apply(): void {
    this.viewport.setAttribute("transform", `translate(${this.tx.toFixed(1)},${this.ty.toFixed(1)}) scale(${this.k.toFixed(4)})`);
    this.svg.dataset.zoom = this.k.toFixed(4);
    this.svg.classList.toggle("far", this.k < 0.4);
    this.paintMinimap(false);
  }

  private listenWheelAndKeys(): void {
    const svg = this.svg;
    svg.addEventListener("wheel", (e) => {
      e.preventDefault();
      const r = svg.getBoundingClientRect();
      this.zoomBy(Math.exp(-e.deltaY * 0.0015), e.clientX - r.left, e.clientY - r.top);
    }, { passive: false });
    svg.addEventListener("keydown", (e) => {
      const step = 60;
      switch (e.key) {
        case "+": case "=": this.zoomBy(1.25); break;
        case "-": case "_": this.zoomBy(0.8); break;
        case "0": this.fit(); break;
        case "ArrowLeft": this.panBy(step, 0); break;
        case "ArrowRight": this.panBy(-step, 0); break;
        case "ArrowUp": this.panBy(0, step); break;
        case "ArrowDown": this.panBy(0, -step); break;
        default: return;
      }
      e.preventDefault();
    });
  }

  // Drag to pan; a drag is not a click on the node it started on.
  private listenDrag(): void {
    const svg = this.svg;
    svg.addEventListener("pointerdown", (e) => {
      if (e.button !== 0) return;
      this.drag = { x: e.clientX, y: e.clientY, id: e.pointerId, on: false };
    });
    svg.addEventListener("pointermove", (e) => {
      const drag = this.drag;
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
      if (!this.drag || e.pointerId !== this.drag.id) return;
      this.swallowClick = this.drag.on;
      this.drag = undefined;
      svg.classList.remove("dragging");
    };
    svg.addEventListener("pointerup", end);
    svg.addEventListener("pointercancel", end);
  }

  // The minimap: press or drag to centre the view there.
  private listenMinimap(): void {
    let mapping = false;
    const centre = (e: PointerEvent) => {
      const r = this.minimap.getBoundingClientRect();
      const scale = this.minimapScale();
      this.centreOn((e.clientX - r.left) / scale, (e.clientY - r.top) / scale);
    };
    this.minimap.addEventListener("pointerdown", (e) => {
      mapping = true;
      this.minimap.setPointerCapture(e.pointerId);
      centre(e);
    });
    this.minimap.addEventListener("pointermove", (e) => { if (mapping) centre(e); });
    this.minimap.addEventListener("pointerup", () => { mapping = false; });
  }

  private minimapScale(): number {
    return Math.min(180 / this.scene.width, 120 / this.scene.height);
  }

  // The scene's nodes in their state's colour (redrawn when `nodes`
  // changed), and the part in view as a rectangle; at most once a frame.
  paintMinimap(nodes: boolean): void {
    // Shown for a large scene only while part of it is out of view.
    const whole = this.tx >= -1 && this.ty >= -1 && this.tx + this.scene.width * this.k <= this.svg.clientWidth + 1 &&
      this.ty + this.scene.height * this.k <= this.svg.clientHeight + 1;
    this.minimap.hidden = this.minimap.dataset.large !== "true" || whole;
    if (this.minimap.hidden) return;
    if (nodes) this.minimapBase = undefined;
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      this.drawMinimap();
    });
  }

  private drawMinimap(): void {
    const scale = this.minimapScale();
    const w = Math.max(1, Math.ceil(this.scene.width * scale)), hgt = Math.max(1, Math.ceil(this.scene.height * scale));
    this.minimapBase ??= this.minimapNodes(w, hgt, scale);
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
  }

  // The scene's nodes drawn once into a w × hgt canvas, in their state's colour.
  private minimapNodes(w: number, hgt: number, scale: number): HTMLCanvasElement {
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
    return base;
  }
}
