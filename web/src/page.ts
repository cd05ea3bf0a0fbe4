// What every page is: a root element and a stop() that ends its pollers and
// its live subscriptions.

import { Poller } from "./api";
import { h } from "./dom";
import { live, LiveEvent } from "./live";

export interface Page {
  root: HTMLElement;
  stop(): void;
}

// Which live events make a page read again: by event type, all of them
// (true) or those a filter accepts. `reset` (the page may have missed
// changes) always does.
export type LiveTriggers = Record<string, true | ((data: Record<string, unknown>) => boolean)>;

export interface LiveOptions {
  on: LiveTriggers;
  // Polls every fallbackMs (four times slower while the tab is hidden)
  // while the events are not live.
  fallbackMs: number;
  // At most one event-driven tick per throttleMs (0: as soon as the last ends).
  throttleMs?: number;
}

// Why a tick runs: the events since the last one began ([] for the first
// tick, a poll, or the events going live).
export interface TickCause {
  events: LiveEvent[];
  polled: boolean;
}

// Runs `tick` now, then again on the events it is given: never two at once,
// and one more after the current when events came meanwhile. While the
// events are not live it polls instead; when they come back it reads once
// more (what changed in between came with no event). A tick that fails is
// tried again after fallbackMs, live or not.
export class LiveTicker {
  private running = false;
  private pending = false;
  private pendingPoll = false;
  private stopped = false;
  private queued: LiveEvent[] = [];
  private pollTimer: number | undefined;
  private throttleTimer: number | undefined;
  private lastStart = -Infinity;
  private readonly offs: (() => void)[] = [];

  constructor(private readonly tick: (cause: TickCause) => Promise<void>, private options: LiveOptions) {
    this.offs.push(live.acquire());
    const types = new Set([...Object.keys(options.on), "reset"]);
    for (const type of types) {
      this.offs.push(live.on(type, (e) => {
        const want = type === "reset" ? true : this.options.on[type];
        const data = (e.data && typeof e.data === "object" ? e.data : {}) as Record<string, unknown>;
        if (want === true || (want && want(data))) this.trigger(e);
      }));
    }
    this.offs.push(live.onLive((isLive) => {
      if (isLive) {
        this.clearPoll();
        this.trigger();
      } else if (!this.running) {
        this.schedulePoll();
      }
    }));
    void this.run(false);
  }

  setFallback(ms: number): void {
    this.options = { ...this.options, fallbackMs: ms };
  }
  setThrottle(ms: number): void {
    this.options = { ...this.options, throttleMs: ms };
  }

  stop(): void {
    this.stopped = true;
    this.clearPoll();
    if (this.throttleTimer !== undefined) clearTimeout(this.throttleTimer);
    for (const off of this.offs) off();
    this.offs.length = 0;
  }

  // Runs the tick soon: now, or once the current one ends and (`throttle`,
  // an event's) the throttle allows.
  trigger(e?: LiveEvent, throttle = e !== undefined && e.type !== "reset"): void {
    if (this.stopped) return;
    if (e) this.queued.push(e);
    if (this.running) {
      this.pending = true;
      return;
    }
    const wait = this.lastStart + (this.options.throttleMs ?? 0) - performance.now();
    if (wait > 0 && throttle) {
      if (this.throttleTimer === undefined) {
        this.throttleTimer = window.setTimeout(() => {
          this.throttleTimer = undefined;
          if (this.running) this.pending = true;
          else void this.run(false);
        }, wait);
      }
      return;
    }
    void this.run(false);
  }

  private clearPoll(): void {
    if (this.pollTimer !== undefined) clearTimeout(this.pollTimer);
    this.pollTimer = undefined;
  }

  // Polls after fallbackMs while not live (`always`: live or not).
  private schedulePoll(always = false): void {
    if (this.stopped || (live.live && !always) || this.pollTimer !== undefined) return;
    const wait = document.hidden ? this.options.fallbackMs * 4 : this.options.fallbackMs;
    this.pollTimer = window.setTimeout(() => {
      this.pollTimer = undefined;
      if (this.running) this.pendingPoll = true;
      else void this.run(true);
    }, wait);
  }

  private async run(polled: boolean): Promise<void> {
    if (this.stopped) return;
    this.clearPoll();
    if (this.throttleTimer !== undefined) clearTimeout(this.throttleTimer);
    this.throttleTimer = undefined;
    this.running = true;
    this.pending = false;
    this.pendingPoll = false;
    this.lastStart = performance.now();
    const events = this.queued;
    this.queued = [];
    let failed = false;
    try {
      await this.tick({ events, polled });
    } catch (e) {
      console.warn("refresh failed", e);
      failed = true;
    }
    this.running = false;
    if (this.stopped) return;
    if (failed && !this.pending) {
      // What the event announced is not shown yet: tried again, live or not.
      this.schedulePoll(true);
      return;
    }
    if (this.pending || this.pendingPoll) {
      // Events came meanwhile: once more (throttled like any event).
      const polledAgain = this.pendingPoll && !this.pending;
      this.pending = this.pendingPoll = false;
      if (polledAgain) void this.run(true);
      else this.trigger(undefined, true);
      return;
    }
    this.schedulePoll();
  }
}

// A page whose pollers and live subscriptions are stopped together.
export class BasePage implements Page {
  readonly root: HTMLElement;
  private pollers: Poller[] = [];
  private tickers: LiveTicker[] = [];
  private stops: (() => void)[] = [];
  constructor(id: string) {
    this.root = h("section", { id: "page-" + id, class: "page" });
  }
  poll(tick: () => Promise<void>, everyMs: number): Poller {
    const p = new Poller(tick, everyMs).start();
    this.pollers.push(p);
    return p;
  }
  // Runs `tick` now and again on the live events `options.on` names (see
  // LiveTicker); polls every options.fallbackMs while they are not live.
  live(tick: (cause: TickCause) => Promise<void>, options: LiveOptions): LiveTicker {
    const t = new LiveTicker(tick, options);
    this.tickers.push(t);
    return t;
  }
  onStop(f: () => void): void {
    this.stops.push(f);
  }
  stop(): void {
    for (const p of this.pollers) p.stop();
    for (const t of this.tickers) t.stop();
    for (const f of this.stops) f();
  }
}
