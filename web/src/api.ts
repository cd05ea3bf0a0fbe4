// The JSON API client: GETs revalidated with ETags (a 304 reuses the last
// body), the signed-in principal's API token from sessionStorage on every
// request (a node with a tokens file answers nothing without one; a user
// signed in through the provider is known by the node's HttpOnly session
// cookie instead, which the browser sends by itself), and
// pollers that stop when their page is left and slow down while the tab is
// hidden.

import { BASE } from "./base";

export class ApiError extends Error {
  constructor(public status: number, message: string) {
    super(message);
  }
}

const TOKEN_KEY = "apollo11.token";
const lastBodies = new Map<string, { etag: string; value: unknown }>();
let requestCount = 0;

export function token(): string {
  return sessionStorage.getItem(TOKEN_KEY) ?? "";
}
export function setToken(value: string): void {
  const before = token();
  if (value) sessionStorage.setItem(TOKEN_KEY, value);
  else sessionStorage.removeItem(TOKEN_KEY);
  if (value !== before) credentialsChanged();
}
// Who the requests speak for changed (a token kept or dropped, a session
// ended): what holds a request open (the live events) asks again.
const credentialListeners: (() => void)[] = [];
export function onTokenChange(f: () => void): void {
  credentialListeners.push(f);
}
export function credentialsChanged(): void {
  for (const f of credentialListeners) f();
}
// How many API requests this page made (for the performance measurements).
export function requestsMade(): number {
  return requestCount;
}
export function countRequest(): void {
  requestCount++;
}

async function errorOf(res: Response): Promise<ApiError> {
  let message = res.statusText;
  try {
    const body = await res.json();
    if (body && typeof body.error === "string") message = body.error;
  } catch {
    /* not JSON */
  }
  return new ApiError(res.status, message);
}

export function authHeaders(t: string = token()): Record<string, string> {
  return t ? { Authorization: "Bearer " + t } : {};
}

// Who the node says the caller is: its name and roles, how it proved it
// ("token", "sso", "session": the sign-in cookie, or "anonymous"), the
// actions its roles allow, and whether the node offers "Sign in with SSO".
export interface Who {
  name: string;
  roles: string;
  via: string;
  may: string[];
  sign_in: boolean;
}

// Who the node says `candidate` (a token; "" = none, the session cookie
// if any) is. Throws the node's refusal (401: the token matches no
// principal).
export async function whoami(candidate: string): Promise<Who> {
  return limited(async () => {
    requestCount++;
    const res = await fetch(BASE + "/api/whoami", { headers: authHeaders(candidate), cache: "no-store" });
    if (!res.ok) throw await errorOf(res);
    return (await res.json()) as Who;
  });
}

// At most MAX_IN_FLIGHT requests of this tab at once (the live events'
// stream aside, which the node stops counting once it is taken): the node
// refuses (503) a fifth connection from one address while four are still
// being read or answered (observability/http_limits.h), and a page that
// reads several things at once (the overview on opening, every page after
// a `reset` event) must not be refused its own reads.
const MAX_IN_FLIGHT = 3;
let inFlight = 0;
const queue: (() => void)[] = [];
async function limited<T>(f: () => Promise<T>): Promise<T> {
  if (inFlight < MAX_IN_FLIGHT) inFlight++;
  else await new Promise<void>((resolve) => queue.push(resolve));  // handed a slot
  try {
    return await f();
  } finally {
    const next = queue.shift();
    if (next) next();
    else inFlight--;
  }
}

export async function getJson<T>(path: string): Promise<T> {
  return limited(() => fetchJson<T>(path));
}

async function fetchJson<T>(path: string): Promise<T> {
  const kept = lastBodies.get(path);
  const headers: Record<string, string> = authHeaders();
  if (kept) headers["If-None-Match"] = kept.etag;
  requestCount++;
  const res = await fetch(BASE + path, { headers, cache: "no-store" });
  if (res.status === 304 && kept) return kept.value as T;
  if (!res.ok) throw await errorOf(res);
  const value = (await res.json()) as T;
  const etag = res.headers.get("ETag");
  if (etag) lastBodies.set(path, { etag, value });
  if (lastBodies.size > 64) lastBodies.delete(lastBodies.keys().next().value as string);
  return value;
}

export async function getText(path: string): Promise<string> {
  return limited(async () => {
    requestCount++;
    const res = await fetch(BASE + path, { headers: authHeaders(), cache: "no-store" });
    if (!res.ok) throw await errorOf(res);
    return res.text();
  });
}

export async function post<T>(path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { "Content-Type": "application/json", ...authHeaders() };
  return limited(async () => {
    requestCount++;
    const res = await fetch(BASE + path, {
      method: "POST",
      headers,
      body: body === undefined ? "" : JSON.stringify(body),
    });
    if (!res.ok) throw await errorOf(res);
    return (await res.json()) as T;
  });
}

// Calls `tick` now and then every `everyMs` (four times slower while the tab
// is hidden) until `stop`. A tick never overlaps the previous one.
export class Poller {
  private timer: number | undefined;
  private stopped = false;
  constructor(private readonly tick: () => Promise<void>, private everyMs: number) {}
  start(): this {
    void this.run();
    return this;
  }
  setInterval(ms: number): void {
    this.everyMs = ms;
  }
  stop(): void {
    this.stopped = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
  }
  private async run(): Promise<void> {
    if (this.stopped) return;
    try {
      await this.tick();
    } catch (e) {
      console.warn("poll failed", e);
    }
    if (this.stopped) return;
    const wait = document.hidden ? this.everyMs * 4 : this.everyMs;
    this.timer = window.setTimeout(() => void this.run(), wait);
  }
}
