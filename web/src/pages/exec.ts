// An execution: its transitions (time to the millisecond, reason, actor),
// its attempts with how each ended (exit code or signal, and the reason),
// the stdout/stderr of any attempt (the latest, tailed live, by default)
// and its trace (the coordinator's lines).

import { getJson } from "../api";
import { appPath, BASE } from "../base";
import { clear, fmtExit, fmtTimeMs, h, link, stateBadge } from "../dom";
import { attemptsOf } from "../gantt";
import { STATE_GLYPH } from "../graph";
import { BasePage, Page } from "../page";
import { Execution, LogSlice, Transition } from "../types";

const MAX_SHOWN = 1 << 20;  // characters of output kept on the page

// A JSON log line as "time level actor: message"; other lines as they are.
function traceLine(line: string): string {
  try {
    const j = JSON.parse(line);
    return `${j.ts ?? ""} ${j.level ?? ""} ${j.actor ?? ""}${j.node ? "@" + j.node : ""}: ${j.msg ?? line}`;
  } catch {
    return line;
  }
}

// How attempt `n` ended, from the transition out of RUNNING: its state,
// the reason the scheduler journaled and the exit code or signal (the
// execution's own for the latest attempt, else read from the reason).
export interface AttemptEnd {
  state?: string;
  reason?: string;
  exit?: number;
  timedOut?: boolean;
}

export function attemptEnd(history: Transition[], n: number, exec?: Execution): AttemptEnd {
  const end = history.find((t) => t.attempt === n && t.from === "RUNNING" && !t.note);
  const out: AttemptEnd = { state: end?.to, reason: end?.reason };
  if (exec && n === exec.attempt && exec.exit_code !== undefined) {
    out.exit = exec.exit_code;
  } else if (end) {
    const code = /exit(?:ed with)? code (-?\d+)/.exec(end.reason);
    const sig = /signal (\d+)/.exec(end.reason);
    if (code) out.exit = Number(code[1]);
    else if (sig) out.exit = -Number(sig[1]);
    else if (/^exited 0\b/.test(end.reason)) out.exit = 0;
  }
  out.timedOut = end?.to === "TIMEOUT" || /timed out/.test(end?.reason ?? "");
  return out;
}

function endText(e: AttemptEnd): string {
  const parts: string[] = [];
  if (e.state) parts.push(`${STATE_GLYPH[e.state] ?? ""} ${e.state.toLowerCase()}`.trim());
  if (e.exit !== undefined) parts.push(fmtExit(e.exit));
  else if (e.timedOut) parts.push("timed out");
  return parts.join(", ");
}

export function execPage(execId: string): Page {
  const page = new BasePage("exec");
  const runId = execId.slice(0, execId.indexOf("."));
  const wanted = new URLSearchParams(location.search);
  const summary = h("div", { id: "exec-summary" });
  const historyBox = h("div", { id: "exec-history" });
  const attemptsBox = h("div", { id: "exec-attempts" });
  const attemptSel = h("select", { id: "log-attempt", "aria-label": "Attempt whose output is shown" }) as HTMLSelectElement;
  const streamSel = h("select", { id: "log-stream", "aria-label": "Output stream" },
    h("option", { value: "out" }, "stdout"), h("option", { value: "err" }, "stderr")) as HTMLSelectElement;
  if (wanted.get("stream") === "err") streamSel.value = "err";
  const outcome = h("span", { id: "attempt-outcome", role: "status" });
  const logMeta = h("span", { class: "muted", id: "log-meta" });
  const logBox = h("pre", { class: "log", id: "log", tabindex: 0, "aria-label": "Output of the chosen attempt" });
  const traceBox = h("pre", { class: "log", id: "trace", tabindex: 0, "aria-label": "Trace" });
  page.root.append(h("h1", {}, "Execution ", h("span", { id: "exec-id" }, execId)),
    h("p", {}, "Run ", link("/run/" + encodeURIComponent(runId), runId)), summary,
    h("h2", {}, "Transitions"), historyBox, h("h2", {}, "Attempts"), attemptsBox,
    h("h2", {}, "Output"),
    h("div", { class: "toolbar" }, h("label", {}, "Attempt ", attemptSel), h("label", {}, "Stream ", streamSel), outcome),
    h("div", { class: "toolbar" }, logMeta), logBox,
    h("h2", {}, "Trace (coordinator log lines)"), traceBox);

  let exec: Execution | undefined;
  // The attempt asked for (?attempt=N or the selector); 0 follows the latest.
  let chosen = Number(wanted.get("attempt") ?? 0) || 0;
  let offset = 0, shown = 0, done = false;
  const resetLog = () => {
    offset = 0;
    done = false;
    logBox.textContent = "";
    logMeta.textContent = "";
  };
  // The choice is kept in the address, so that it can be shared.
  const remember = () => {
    const q = new URLSearchParams();
    if (chosen) q.set("attempt", String(chosen));
    if (streamSel.value === "err") q.set("stream", "err");
    const search = q.toString();
    history.replaceState(null, "", BASE + appPath(location.pathname) + (search ? "?" + search : ""));
  };
  const choose = (n: number) => {
    chosen = exec && n === exec.attempt ? 0 : n;
    resetLog();
    remember();
    render();
    void tail();
  };
  attemptSel.addEventListener("change", () => choose(Number(attemptSel.value)));
  streamSel.addEventListener("change", () => {
    resetLog();
    remember();
    void tail();
  });

  // The attempt selector and the outcome of the attempt shown.
  const render = () => {
    if (!exec) return;
    const latest = exec.attempt;
    shown = chosen && chosen <= latest ? chosen : latest;
    if (attemptSel.options.length !== latest) {
      clear(attemptSel);
      for (let n = 1; n <= latest; n++) attemptSel.append(h("option", { value: n }, `attempt ${n}`));
    }
    for (let n = 1; n <= latest; n++) {
      const e = attemptEnd(exec.history, n, exec);
      const o = attemptSel.options[n - 1];
      o.textContent = `attempt ${n}${n === latest ? " (latest)" : ""}` + (e.state ? ` · ${endText(e)}` : n === latest ? ` · ${String(exec.state ?? "").toLowerCase()}` : "");
    }
    if (latest) attemptSel.value = String(shown);
    attemptSel.disabled = latest <= 1;
    const e = attemptEnd(exec.history, shown, exec);
    clear(outcome);
    outcome.dataset.attempt = String(shown);
    if (e.state) {
      outcome.append(stateBadge(e.state), e.exit !== undefined ? h("span", { class: "exit", "data-exit": e.exit }, " " + fmtExit(e.exit)) : "",
        e.reason ? h("span", { class: "reason" }, " · " + e.reason) : "");
    } else if (shown) {
      outcome.append(stateBadge(String(exec.state ?? "RUNNING")), " not ended yet");
    }
  };

  // Read again on each live event about its run, else polled every second.
  page.live(async () => {
    exec = await getJson<Execution>("/api/executions/" + encodeURIComponent(execId));
    const ex = exec;
    clear(summary);
    const stamp = (key: string) => (typeof ex[key] === "string" ? fmtTimeMs(ex[key] as string) : "");
    summary.append(h("div", {}, stateBadge(String(ex.state ?? "?")), ` attempt ${ex.attempt}`,
      ex.exit_code !== undefined ? ` · ${fmtExit(ex.exit_code)}` : "", ex.worker ? ` · worker ${ex.worker}` : ""),
    h("div", { class: "muted small", id: "exec-times" },
      ["ready_at", "started_at", "finished_at", "next_retry_at"].filter((k) => ex[k])
        .map((k) => `${k.replace(/_at$/, "").replace(/_/g, " ")} ${stamp(k)}`).join(" · ")),
    typeof ex.error === "string" && ex.error ? h("div", { class: "small", id: "exec-error" }, "error: " + ex.error) : "");
    clear(historyBox);
    historyBox.append(h("table", {},
      h("thead", {}, h("tr", {}, ...["#", "Time", "Attempt", "From", "To", "Reason", "Actor"].map((t) => h("th", {}, t)))),
      h("tbody", {}, ...ex.history.map((t) => h("tr", { class: "transition" },
        h("td", {}, t.seq), h("td", { class: "time" }, fmtTimeMs(t.ts_us || t.ts)), h("td", {}, t.attempt), h("td", {}, t.from),
        h("td", {}, stateBadge(t.to)), h("td", { class: "wrap" }, t.reason), h("td", {}, t.actor))))));
    clear(attemptsBox);
    attemptsBox.append(h("table", {},
      h("thead", {}, h("tr", {}, ...["Attempt", "Queued", "Dispatched", "Ended", "Outcome", "Exit", "Reason", ""].map((t) => h("th", {}, t)))),
      h("tbody", {}, ...attemptsOf(ex.history).map((a) => {
        const e = attemptEnd(ex.history, a.attempt, ex);
        return h("tr", { class: "attempt", "data-attempt": a.attempt },
          h("td", {}, a.attempt), h("td", { class: "time" }, fmtTimeMs(a.readyAt)),
          h("td", { class: "time" }, fmtTimeMs(a.runAt)), h("td", { class: "time" }, fmtTimeMs(a.endAt)),
          h("td", {}, a.end ? stateBadge(a.end) : "running"),
          h("td", {}, e.exit !== undefined ? fmtExit(e.exit) : e.timedOut ? "timed out" : ""),
          h("td", { class: "wrap" }, e.reason ?? ""),
          h("td", {}, h("button", {
            type: "button", class: "show-attempt", "data-attempt": a.attempt,
            "aria-label": `Show the output of attempt ${a.attempt}`, onclick: () => choose(a.attempt),
          }, "Output")));
      }))));
    const before = shown;
    render();
    if (shown !== before) resetLog();
    await tail();
  }, { on: { run: (d) => d.run_id === runId }, fallbackMs: 1000 });

  // A running attempt's output grows with no event (it is not journaled):
  // its tail is read every second until the attempt ends.
  let tailTimer: number | undefined;
  page.onStop(() => clearTimeout(tailTimer));
  const followLater = () => {
    clearTimeout(tailTimer);
    tailTimer = window.setTimeout(() => void tail().catch((e) => console.warn("log tail failed", e)), 1000);
  };

  // Appends what the log grew by since the last slice; follows while running.
  // Never two at once: a call meanwhile (another attempt or stream chosen)
  // runs right after.
  let tailing = false, tailAgain = false;
  const tail = async (): Promise<void> => {
    if (tailing) {
      tailAgain = true;
      return;
    }
    if (done || !exec || !shown) return;
    tailing = true;
    let follow = false;
    try {
      follow = await tailSlices();
    } finally {
      tailing = false;
    }
    if (tailAgain) {
      tailAgain = false;
      return tail();
    }
    if (follow) followLater();
  };
  // Reads slices until the end of what the log holds now (8 at most); true
  // while the attempt is still writing to it.
  const tailSlices = async (): Promise<boolean> => {
    const attempt = shown, stream = streamSel.value;
    for (let i = 0; i < 8; i++) {
      let slice: LogSlice;
      try {
        slice = await getJson<LogSlice>(`/api/executions/${encodeURIComponent(execId)}/logs?stream=${stream}&attempt=${attempt}&offset=${offset}`);
      } catch (e) {
        if (attempt !== shown || stream !== streamSel.value) return false;
        logMeta.textContent = `attempt ${attempt}'s ${stream === "err" ? "stderr" : "stdout"} is not available: ` + (e as Error).message;
        return false;
      }
      // The choice changed while the slice was on its way.
      if (attempt !== shown || stream !== streamSel.value || slice.offset !== offset) return false;
      if (slice.data) {
        logBox.textContent += slice.data;
        if (logBox.textContent.length > MAX_SHOWN) logBox.textContent = logBox.textContent.slice(-MAX_SHOWN);
        logBox.scrollTop = logBox.scrollHeight;
      }
      offset = slice.next_offset;
      logMeta.textContent = `attempt ${slice.attempt}, ${stream === "err" ? "stderr" : "stdout"}, ${slice.size} bytes` +
        (slice.worker ? ` on ${slice.worker}` : "") + (slice.running ? " (live)" : "");
      logMeta.dataset.attempt = String(slice.attempt);
      if (offset >= slice.size) {
        if (!slice.running) done = true;
        return slice.running === true;
      }
    }
    return true;
  };

  void (async () => {
    try {
      const trace = await getJson<{ lines?: string[] }>("/api/executions/" + encodeURIComponent(execId) + "/trace");
      traceBox.textContent = (trace.lines ?? []).map(traceLine).join("\n") || "(no coordinator lines about it)";
    } catch (e) {
      traceBox.textContent = "trace not available: " + (e as Error).message;
    }
  })();
  return page;
}
