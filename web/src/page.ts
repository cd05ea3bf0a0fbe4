// What every page is: a root element and a stop() that ends its pollers.

import { Poller } from "./api";
import { h } from "./dom";

export interface Page {
  root: HTMLElement;
  stop(): void;
}

// A page whose pollers are stopped together.
export class BasePage implements Page {
  readonly root: HTMLElement;
  private pollers: Poller[] = [];
  private stops: (() => void)[] = [];
  constructor(id: string) {
    this.root = h("section", { id: "page-" + id, class: "page" });
  }
  poll(tick: () => Promise<void>, everyMs: number): Poller {
    const p = new Poller(tick, everyMs).start();
    this.pollers.push(p);
    return p;
  }
  onStop(f: () => void): void {
    this.stops.push(f);
  }
  stop(): void {
    for (const p of this.pollers) p.stop();
    for (const f of this.stops) f();
  }
}
