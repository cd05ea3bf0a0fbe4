// A run: its DAG (live), the Gantt of its attempts, the task table and the
// actions the API has (cancel, rerun of what did not succeed, slow-task
// answers).

import { ApiError, getJson, post, token } from "../api";
import { clear, fmtMs, fmtTime, h, link, message, runStateBadge } from "../dom";
import { attemptsOf, drawGantt, drawGanttCanvas } from "../gantt";
import { GraphView, GROUP_OVER } from "../graph";
import { BasePage, Page } from "../page";
import { FINISHED_RUN, Graph, RunStatus, Transition } from "../types";
import { TaskTable } from "../vtable";
import { navigate } from "../main";

export function runPage(runId: string): Page {
  const page = new BasePage("run");
  const t0 = performance.now();
  const head = h("div", { id: "run-head" });
  const msg = h("span", { class: "msg", id: "action-msg" });
  const cancel = h("button", { id: "cancel", class: "danger", "data-needs": "cancel" }, "Cancel run") as HTMLButtonElement;
  const rerun = h("button", {
    id: "rerun-failed", disabled: true, "data-needs": "rerun",
    title: "A new run of this run's snapshot that reuses what succeeded (apollo11 rerun --failed)",
  }, "Rerun failed tasks") as HTMLButtonElement;
  const slowBox = h("div", { id: "slow-tasks" });
  const graphBox = h("div", { class: "graph-box", id: "graph-box" }, h("p", { class: "muted" }, "Laying out…"));
  const graphNote = h("p", { class: "muted", id: "graph-note" });
  const ganttBox = h("div", { class: "gantt-box", id: "gantt-box" });
  const table = new TaskTable();
  page.root.append(h("h1", {}, "Run ", h("span", { id: "run-id" }, runId)), head,
    h("div", { class: "toolbar" }, cancel, rerun, msg),
    slowBox,
    h("h2", {}, "Graph"), graphNote, graphBox,
    h("h2", {}, "Timeline"), ganttBox,
    h("h2", {}, "Tasks"), table.root);

  cancel.addEventListener("click", async () => {
    if (!confirm("Cancel run " + runId + "?")) return;
    try {
      await post("/api/runs/" + encodeURIComponent(runId) + "/cancel");
      message(msg, "cancel requested", true);
    } catch (e) {
      const err = e as ApiError;
      message(msg, `cancel refused (${err.status}): ${err.message}` + (token() ? "" : " — sign in with the node's token"), false);
    }
  });

  rerun.addEventListener("click", async () => {
    if (!confirm("Rerun what did not succeed in run " + runId + "?")) return;
    try {
      const started = await post<{ run_id: string }>("/api/runs/" + encodeURIComponent(runId) + "/rerun", { failed: true });
      navigate("/run/" + encodeURIComponent(started.run_id));
    } catch (e) {
      const err = e as ApiError;
      message(msg, `rerun refused (${err.status}): ${err.message}` + (token() ? "" : " — sign in with the node's token"), false);
    }
  });

  let drawn: GraphView | undefined;
  let graph: Graph | undefined;
  let status: RunStatus | undefined;
  let loaded = false;
  let historyAt = -Infinity;
  const open = (task: string) => {
    const t = status?.tasks[task];
    if (t) navigate("/exec/" + encodeURIComponent(t.exec_id));
  };

  // The timeline: from the status alone over 1500 tasks, else from the
  // run's history, read at most every 2 s (a change within the 2 s is drawn
  // when they are up). Never two at once; a call meanwhile runs after.
  let ganttTimer: number | undefined;
  let ganttBusy = false, ganttAgain = false;
  page.onStop(() => clearTimeout(ganttTimer));
  const refreshGantt = async (force: boolean): Promise<void> => {
    if (!status) return;
    if (ganttBusy) {
      ganttAgain = true;
      return;
    }
    const n = Object.keys(status.tasks).length;
    if (n > GROUP_OVER) {
      drawGanttCanvas(ganttBox, status.tasks, Date.now() * 1000);
      return;
    }
    const since = performance.now() - historyAt;
    if (!force && since < 2000) {
      if (ganttTimer === undefined) {
        ganttTimer = window.setTimeout(() => {
          ganttTimer = undefined;
          void refreshGantt(false).catch((e) => console.warn("timeline refresh failed", e));
        }, 2000 - since);
      }
      return;
    }
    clearTimeout(ganttTimer);
    ganttTimer = undefined;
    historyAt = performance.now();
    ganttBusy = true;
    try {
      const history = await getJson<Transition[]>("/api/runs/" + encodeURIComponent(runId) + "/history");
      drawGantt(ganttBox, attemptsOf(history), Date.now() * 1000, status.tasks);
    } finally {
      ganttBusy = false;
    }
    if (ganttAgain) {
      ganttAgain = false;
      await refreshGantt(FINISHED_RUN.has(status.state));
    }
  };

  const phases: string[] = [];
  const mark = (what: string) => {
    if (!loaded) phases.push(`${what} ${Math.round(performance.now() - t0)}`);
  };
  // Read again on each live event about this run (every commit that
  // changed it or one of its tasks), else polled.
  const ticker = page.live(async () => {
    const got = await getJson<RunStatus>("/api/runs/" + encodeURIComponent(runId));
    if (loaded && got === status) return;  // 304: nothing changed since it was drawn
    status = got;
    mark("status");
    const n = Object.keys(status.tasks).length;
    const finished = FINISHED_RUN.has(status.state);
    clear(head);
    head.append(h("div", {}, runStateBadge(status.state, status.handled_failures), " ", status.pipeline, ` · ${n} tasks · started `,
      fmtTime(status.created_at), status.duration_ms !== undefined ? " · " + fmtMs(status.duration_ms) : "",
      status.reason ? " · " + status.reason : "",
      status.rerun_of ? h("span", { id: "rerun-of" }, " · rerun of ", link("/run/" + encodeURIComponent(status.rerun_of), status.rerun_of)) : ""));
    cancel.disabled = finished;
    // A SUCCESS with handled failures has failed tasks to rerun too.
    rerun.disabled = !finished || (status.state === "SUCCESS" && !status.handled_failures);
    if (!graph) {
      try {
        graph = await getJson<Graph>("/api/runs/" + encodeURIComponent(runId) + "/graph");
      } catch (e) {
        // No snapshot to draw from: the tasks alone, without edges.
        graph = { pipeline: status.pipeline, hash: "", tasks: Object.keys(status.tasks).map((id) => ({ id, type: "", deps: [] })) };
        graphNote.textContent = "No pipeline snapshot to draw the edges from: " + (e as Error).message;
      }
      mark("graph");
      drawn = new GraphView(graph, status.tasks, open);
      mark("layout");
      clear(graphBox);
      graphBox.append(drawn.root);
      drawn.fit();
      const notes: string[] = [];
      if (graph.tasks.length > GROUP_OVER) notes.push(`${graph.tasks.length} tasks: grouped by layer (longest path from a root), each bar shows its tasks' states; open a layer to see its tasks, or find a task by name.`);
      if (status.pipeline_hash && graph.hash && graph.hash !== status.pipeline_hash) {
        notes.push(`Drawn from the pipeline's newest snapshot (${graph.hash}); this run used ${status.pipeline_hash}.`);
      }
      if (notes.length) graphNote.textContent = notes.join(" ");
    } else {
      drawn?.update(status.tasks);
    }
    table.set(status.tasks);
    mark("table");
    renderSlow(slowBox, status);
    // The first drawing and the last wait for the timeline; the others
    // leave it to come after, so that the next change is not held up.
    if (!loaded || finished) await refreshGantt(finished);
    else void refreshGantt(false).catch((e) => console.warn("timeline refresh failed", e));
    mark("gantt");
    if (!loaded) {
      page.root.dataset.phases = phases.join(", ");
      loaded = true;
      page.root.dataset.loadedMs = String(Math.round(performance.now() - t0));
      page.root.classList.add("loaded");
    }
    // Large runs are read less often; a finished run no more.
    ticker.setFallback(n > GROUP_OVER ? 3000 : 1000);
    // A large run changes all the time: read it at most as often as it was polled.
    ticker.setThrottle(n > GROUP_OVER ? 3000 : 0);
    if (finished) ticker.stop();
  }, { on: { run: (d) => d.run_id === runId }, fallbackMs: 1000 });
  return page;
}

// The tasks flagged slow, each with Kill and Keep (POST .../confirm, token).
function renderSlow(box: HTMLElement, status: RunStatus): void {
  const flagged = Object.entries(status.tasks).filter(([, t]) => t.slow === "flagged");
  clear(box);
  if (!flagged.length) return;
  box.append(h("h2", {}, "Slow tasks waiting for an answer"));
  for (const [id, t] of flagged) {
    const msg = h("span", { class: "msg" });
    const answer = async (action: string) => {
      try {
        await post("/api/executions/" + encodeURIComponent(t.exec_id) + "/confirm", { action });
        message(msg, action === "kill" ? "kill requested" : "kept running", true);
      } catch (e) {
        const err = e as ApiError;
        message(msg, `refused (${err.status}): ${err.message}`, false);
      }
    };
    box.append(h("div", { class: "toolbar", "data-slow": id }, h("strong", {}, id), t.slow_reason ?? "",
      h("button", { class: "danger", "data-needs": "confirm", onclick: () => void answer("kill") }, "Kill"),
      h("button", { "data-needs": "confirm", onclick: () => void answer("keep") }, "Keep running"), msg));
  }
}
