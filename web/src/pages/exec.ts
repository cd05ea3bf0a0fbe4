// An execution: its transitions (time, reason, actor), its attempts, its
// stdout/stderr with a live tail, and its trace (the coordinator's lines).

import { getJson } from "../api";
import { clear, fmtTime, h, link, stateBadge } from "../dom";
import { attemptsOf } from "../gantt";
import { BasePage, Page } from "../page";
import { Execution, LogSlice } from "../types";

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

export function execPage(execId: string): Page {
  const page = new BasePage("exec");
  const runId = execId.slice(0, execId.indexOf("."));
  const summary = h("div", { id: "exec-summary" });
  const historyBox = h("div", { id: "exec-history" });
  const attemptsBox = h("div", { id: "exec-attempts" });
  const streamSel = h("select", { id: "log-stream" }, h("option", { value: "out" }, "stdout"), h("option", { value: "err" }, "stderr")) as HTMLSelectElement;
  const logMeta = h("span", { class: "muted", id: "log-meta" });
  const logBox = h("pre", { class: "log", id: "log" });
  const traceBox = h("pre", { class: "log", id: "trace" });
  page.root.append(h("h1", {}, "Execution ", h("span", { id: "exec-id" }, execId)),
    h("p", {}, "Run ", link("/run/" + encodeURIComponent(runId), runId)), summary,
    h("h2", {}, "Transitions"), historyBox, h("h2", {}, "Attempts"), attemptsBox,
    h("h2", {}, "Output"), h("div", { class: "toolbar" }, streamSel, logMeta), logBox,
    h("h2", {}, "Trace (coordinator log lines)"), traceBox);

  let exec: Execution | undefined;
  let offset = 0, attempt = 0, done = false;
  const resetLog = () => {
    offset = 0;
    done = false;
    logBox.textContent = "";
  };
  streamSel.addEventListener("change", resetLog);

  page.poll(async () => {
    exec = await getJson<Execution>("/api/executions/" + encodeURIComponent(execId));
    clear(summary);
    summary.append(h("div", {}, stateBadge(String(exec.state ?? "?")), ` attempt ${exec.attempt}`,
      exec.exit_code !== undefined ? ` · exit ${exec.exit_code}` : "", exec.worker ? ` · worker ${exec.worker}` : ""));
    clear(historyBox);
    historyBox.append(h("table", {},
      h("thead", {}, h("tr", {}, ...["#", "Time", "Attempt", "From", "To", "Reason", "Actor"].map((t) => h("th", {}, t)))),
      h("tbody", {}, ...exec.history.map((t) => h("tr", { class: "transition" },
        h("td", {}, t.seq), h("td", {}, fmtTime(t.ts)), h("td", {}, t.attempt), h("td", {}, t.from),
        h("td", {}, stateBadge(t.to)), h("td", { class: "wrap" }, t.reason), h("td", {}, t.actor))))));
    clear(attemptsBox);
    attemptsBox.append(h("table", {},
      h("thead", {}, h("tr", {}, ...["Attempt", "Queued", "Started", "Ended", "Outcome"].map((t) => h("th", {}, t)))),
      h("tbody", {}, ...attemptsOf(exec.history).map((a) => h("tr", { class: "attempt" },
        h("td", {}, a.attempt), h("td", {}, a.readyAt ? new Date(a.readyAt / 1000).toLocaleTimeString() : ""),
        h("td", {}, a.runAt ? new Date(a.runAt / 1000).toLocaleTimeString() : ""),
        h("td", {}, a.endAt ? new Date(a.endAt / 1000).toLocaleTimeString() : ""),
        h("td", {}, a.end ? stateBadge(a.end) : "running"))))));
    if (exec.attempt !== attempt) {
      attempt = exec.attempt;
      resetLog();
    }
    await tail();
  }, 1000);

  // Appends what the log grew by since the last slice; follows while running.
  const tail = async () => {
    if (done || !exec || exec.attempt === 0) return;
    for (let i = 0; i < 8; i++) {
      let slice: LogSlice;
      try {
        slice = await getJson<LogSlice>(`/api/executions/${encodeURIComponent(execId)}/logs?stream=${streamSel.value}&attempt=${attempt}&offset=${offset}`);
      } catch (e) {
        logMeta.textContent = "output not available: " + (e as Error).message;
        return;
      }
      if (slice.data) {
        logBox.textContent += slice.data;
        if (logBox.textContent.length > MAX_SHOWN) logBox.textContent = logBox.textContent.slice(-MAX_SHOWN);
        logBox.scrollTop = logBox.scrollHeight;
      }
      offset = slice.next_offset;
      logMeta.textContent = `attempt ${slice.attempt}, ${slice.size} bytes` + (slice.worker ? ` on ${slice.worker}` : "") +
        (slice.running ? " (live)" : "");
      if (offset >= slice.size) {
        if (!slice.running) done = true;
        return;
      }
    }
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
