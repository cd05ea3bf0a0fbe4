// A small live line chart (uPlot) of one value sampled over time.

import uPlot from "uplot";
import { h } from "./dom";

export class LiveChart {
  readonly root: HTMLElement;
  private readonly xs: number[] = [];
  private readonly ys: number[] = [];
  private plot: uPlot | undefined;
  private readonly valueEl: HTMLElement;

  constructor(id: string, private readonly title: string, private readonly fmt: (v: number) => string,
              private readonly maxPoints = 150) {
    this.valueEl = h("span", { class: "big", id: id + "-value" }, "–");
    this.root = h("div", { class: "card", id }, h("h3", {}, title), this.valueEl, h("div", { class: "chart" }));
  }

  // Appends the points (time in seconds, value), oldest first, and draws.
  addAll(points: [number, number][]): void {
    if (!points.length) return;
    for (const [t, v] of points) {
      if (this.xs.length && t <= this.xs[this.xs.length - 1]) continue;  // times only grow
      this.xs.push(t);
      this.ys.push(v);
    }
    const over = this.xs.length - this.maxPoints;
    if (over > 0) {
      this.xs.splice(0, over);
      this.ys.splice(0, over);
    }
    this.root.dataset.points = String(this.xs.length);
    this.draw(points[points.length - 1][1]);
  }

  add(t: number, v: number): void {
    this.addAll([[t, v]]);
  }

  private draw(v: number): void {
    this.valueEl.textContent = this.fmt(v);
    const box = this.root.querySelector<HTMLElement>(".chart")!;
    const width = Math.max(200, box.clientWidth || 260);
    if (!this.plot) {
      this.plot = new uPlot({
        width, height: 100,
        legend: { show: false },
        cursor: { show: false },
        axes: [{ show: false }, { size: 40, font: "10px system-ui" }],
        scales: { x: { time: true } },
        series: [{}, { label: this.title, stroke: "#2f80ed", fill: "rgba(47,128,237,.12)", width: 1.5 }],
      }, [this.xs, this.ys], box);
    } else {
      this.plot.setData([this.xs, this.ys]);
    }
  }
}
