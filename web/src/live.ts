// The node's live events (GET /api/v1/events, Server-Sent Events): one
// stream per tab, shared by every page, read with fetch() so that it
// carries the same Authorization header as every other request (an
// EventSource cannot send one; the sign-in cookie goes either way).
//
// The stream reconnects by itself, 0.5 s after it ends and then twice as
// long after each failure up to 15 s, sending Last-Event-ID: the node
// replays what was missed, or sends `reset` (reread everything shown) when
// it no longer has it. A node that refuses the stream (503: it keeps no
// room, or serves no events) is asked again every 15 s; meanwhile the pages
// poll. `live` is true while the stream is open and the node's last `hello`
// or `status` said it hears the coordinator: only then may a page stop
// polling. The stream closes 10 s after the last page that needs it left.
//
// window.apollo11Live is a debug hook (the browser tests use it): `log`,
// the events received lately ({t: Date.now() on arrival, type, id, data});
// `drop(holdMs)`,
// which cuts the stream as a network failure would and reconnects after
// holdMs; `state()`.

import { BASE } from "./base";
import { authHeaders, countRequest, onTokenChange } from "./api";

export interface LiveEvent {
  type: string;
  id: string;  // "HUB.SEQ"; "" when the event has none (hello)
  data: unknown;
}
type Listener = (e: LiveEvent) => void;

const FIRST_RETRY_MS = 500;
const MAX_RETRY_MS = 15000;
const REFUSED_RETRY_MS = 15000;
const SILENT_MS = 40000;  // no byte for this long (keepalives come every 15 s): reconnect
const IDLE_CLOSE_MS = 10000;
const LOG_SIZE = 20000;

// Server-Sent Events as the HTML standard reads them: lines end in CRLF,
// LF or CR; a blank line ends an event; `:` starts a comment; a field's
// value loses one leading space; data lines are joined with "\n"; an id
// stays until another is given. Chunks may end anywhere, even between a CR
// and its LF.
export class SseParser {
  private buffer = "";
  private data: string[] = [];
  private type = "";
  private id = "";
  private idGiven = false;  // the event being read has an id line
  private pendingCR = false;

  // `emit` gets each event's type, data and id: its own id line's, or ""
  // when it has none (the stream's last id is `lastId`).
  constructor(private readonly emit: (type: string, data: string, id: string) => void,
              private readonly comment: (text: string) => void = () => {}) {}

  // The last id the stream gave (kept across events, as the standard says).
  get lastId(): string {
    return this.id;
  }

  push(chunk: string): void {
    let text = chunk;
    if (this.pendingCR) {
      this.pendingCR = false;
      if (text.startsWith("\n")) text = text.slice(1);
    }
    this.buffer += text;
    let start = 0;
    for (;;) {
      const cr = this.buffer.indexOf("\r", start), lf = this.buffer.indexOf("\n", start);
      if (cr < 0 && lf < 0) break;
      const end = cr < 0 ? lf : lf < 0 ? cr : Math.min(cr, lf);
      let next = end + 1;
      if (this.buffer[end] === "\r") {
        if (next === this.buffer.length) this.pendingCR = true;  // its LF may come next chunk
        else if (this.buffer[next] === "\n") next++;
      }
      this.line(this.buffer.slice(start, end));
      start = next;
    }
    this.buffer = this.buffer.slice(start);
  }

  private line(line: string): void {
    if (line === "") return this.dispatch();
    if (line.startsWith(":")) return this.comment(line.slice(1).trim());
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    switch (field) {
      case "event": this.type = value; break;
      case "data": this.data.push(value); break;
      case "id":
        if (!value.includes("\0")) {
          this.id = value;
          this.idGiven = true;
        }
        break;
      default: break;  // retry and unknown fields: ignored (our own backoff)
    }
  }

  private dispatch(): void {
    const type = this.type || "message", data = this.data.join("\n"), had = this.data.length > 0;
    const id = this.idGiven ? this.id : "";
    this.type = "";
    this.data = [];
    this.idGiven = false;
    if (had) this.emit(type, data, id);
  }
}

export class LiveStream {
  private readonly listeners = new Map<string, Set<Listener>>();
  private readonly liveListeners = new Set<(live: boolean) => void>();
  private readonly stateListeners = new Set<() => void>();
  private users = 0;
  private abort: AbortController | undefined;
  private retryTimer: number | undefined;  // the next connect
  private idleTimer: number | undefined;  // the close once no page needs the stream
  private watchdog: number | undefined;
  private connected = false;
  private serverLive = false;
  private lastId = "";
  private retryMs = FIRST_RETRY_MS;
  private why = "connecting";
  readonly log: { t: number; type: string; id: string; data: unknown }[] = [];

  constructor() {
    // Signed in or out: the stream is asked again with the new credentials.
    onTokenChange(() => {
      if (this.users) this.retryLater(0, "signed in or out");
    });
  }

  get live(): boolean {
    return this.connected && this.serverLive;
  }
  // Why the stream is not live ("" when it is).
  get reason(): string {
    return this.live ? "" : this.why;
  }

  // Calls `f` on every event of `type`; returns the unsubscribe.
  on(type: string, f: Listener): () => void {
    let set = this.listeners.get(type);
    if (!set) this.listeners.set(type, (set = new Set()));
    set.add(f);
    return () => set!.delete(f);
  }
  // Calls `f` whenever `live` changes.
  onLive(f: (live: boolean) => void): () => void {
    this.liveListeners.add(f);
    return () => this.liveListeners.delete(f);
  }

  // Calls `f` whenever `live` or `reason` may have changed.
  onState(f: () => void): () => void {
    this.stateListeners.add(f);
    return () => this.stateListeners.delete(f);
  }

  // A page that needs the stream; call what it returns when it no longer does.
  acquire(): () => void {
    this.users++;
    if (this.idleTimer !== undefined) clearTimeout(this.idleTimer);
    this.idleTimer = undefined;
    if (!this.abort && this.retryTimer === undefined) this.connect();
    let released = false;
    return () => {
      if (released) return;
      released = true;
      if (--this.users > 0) return;
      this.idleTimer = window.setTimeout(() => {
        this.idleTimer = undefined;
        if (this.retryTimer !== undefined) clearTimeout(this.retryTimer);
        this.retryTimer = undefined;
        this.stopStream("no page needs the live events");
      }, IDLE_CLOSE_MS);
    };
  }

  // Cuts the stream (as a network failure would) and connects again after
  // `holdMs`: the debug hook's drop().
  drop(holdMs = 0): void {
    if (this.users) this.retryLater(holdMs, "dropped");
  }

  private stopStream(why: string): void {
    this.abort?.abort();
    this.abort = undefined;
    if (this.watchdog !== undefined) clearTimeout(this.watchdog);
    this.watchdog = undefined;
    this.why = why;
    this.setState(false, this.serverLive);
  }

  private setState(connected: boolean, serverLive: boolean): void {
    const was = this.live;
    this.connected = connected;
    this.serverLive = serverLive;
    if (was !== this.live) for (const f of [...this.liveListeners]) f(this.live);
    for (const f of [...this.stateListeners]) f();
  }

  // Ends the stream (if open) and connects again after `ms`.
  private retryLater(ms: number, why: string): void {
    this.stopStream(why);
    if (this.retryTimer !== undefined) clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    if (!this.users) return;
    this.retryTimer = window.setTimeout(() => {
      this.retryTimer = undefined;
      this.connect();
    }, ms);
  }

  private connect(): void {
    if (!this.users || this.abort) return;
    const abort = new AbortController();
    this.abort = abort;
    void this.read(abort).catch((e) => {
      if (this.abort !== abort) return;  // dropped on purpose
      const wait = this.retryMs;
      this.retryMs = Math.min(MAX_RETRY_MS, this.retryMs * 2);
      this.retryLater(wait, "the event stream broke: " + String(e));
    });
  }

  private async read(abort: AbortController): Promise<void> {
    const headers: Record<string, string> = { Accept: "text/event-stream", ...authHeaders() };
    if (this.lastId) headers["Last-Event-ID"] = this.lastId;
    countRequest();
    const res = await fetch(BASE + "/api/v1/events", { headers, cache: "no-store", signal: abort.signal });
    if (this.abort !== abort) return;
    const type = res.headers.get("Content-Type") ?? "";
    if (!res.ok || !res.body || !type.startsWith("text/event-stream")) {
      let message = `${res.status} ${res.statusText}`;
      try {
        const body = await res.json();
        if (body && typeof body.error === "string") message = `${res.status}: ${body.error}`;
      } catch {
        /* not JSON */
      }
      // Refused (no room, no events here, not allowed): polling, and asked again later.
      return this.retryLater(REFUSED_RETRY_MS, "the node refused the event stream (" + message + ")");
    }
    this.why = "connected; waiting for the node's hello";
    this.setState(true, false);  // live once hello says so
    const parser = new SseParser((type, data, id) => this.event(type, data, id), () => {});
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    const arm = () => {
      if (this.watchdog !== undefined) clearTimeout(this.watchdog);
      this.watchdog = window.setTimeout(() => {
        if (this.abort === abort) this.retryLater(0, "the event stream went silent");
      }, SILENT_MS);
    };
    arm();
    for (;;) {
      const { done, value } = await reader.read();
      if (this.abort !== abort) return;
      if (done) break;
      arm();
      parser.push(decoder.decode(value, { stream: true }));
    }
    // The node ended the stream (restart, too slow a reader): again soon.
    this.retryLater(this.retryMs, "the node closed the event stream");
  }

  private event(type: string, text: string, id: string): void {
    let data: unknown = text;
    try {
      data = JSON.parse(text);
    } catch {
      /* kept as text */
    }
    if (id) this.lastId = id;
    const t = Date.now();
    this.log.push({ t, type, id, data });
    if (this.log.length > LOG_SIZE) this.log.splice(0, this.log.length - LOG_SIZE);
    const obj = (data && typeof data === "object" ? data : {}) as Record<string, unknown>;
    if (type === "hello") {
      // Where the stream stands: a reconnect resumes from here even when
      // no event came since.
      if (typeof obj.id === "string") this.lastId = obj.id;
      this.retryMs = FIRST_RETRY_MS;
      this.why = obj.live ? "" : "the node does not hear the coordinator now";
      this.setState(true, obj.live === true);
    } else if (type === "status") {
      this.why = obj.live ? "" : "the node lost the coordinator" + (obj.error ? ": " + String(obj.error) : "");
      this.setState(this.connected, obj.live === true);
    }
    for (const f of [...(this.listeners.get(type) ?? [])]) {
      try {
        f({ type, id, data });
      } catch (e) {
        console.warn("a live event's listener failed", e);  // the stream goes on
      }
    }
  }
}

// The tab's one stream.
export const live = new LiveStream();

declare global {
  interface Window {
    apollo11Live?: { log: LiveStream["log"]; drop(holdMs?: number): void; state(): { live: boolean; reason: string } };
  }
}
window.apollo11Live = {
  log: live.log,
  drop: (holdMs = 0) => live.drop(holdMs),
  state: () => ({ live: live.live, reason: live.reason }),
};
