// The overview: recent runs, runs by state over time, the brief's four key
// metrics as live charts (the node's last hour, then its live samples), the
// backlog against its cap, alert signals and the alerts the node delivered
// lately.

import uPlot from "uplot";
import { AlertsPanel } from "../alerts";
import { getJson, getText } from "../api";
import { LiveChart } from "../chart";
import { clear, fmtMs, fmtTime, h, link, runStateBadge } from "../dom";
import { parseMetrics, total } from "../metrics";
import { live } from "../live";
import { BasePage, Page } from "../page";
import { AlertLine, RunLine } from "../types";

const RUN_STATES = ["RUNNING", "SUCCESS", "FAILED", "CANCELED"];
const COLORS: Record<string, string> = {
  RUNNING: "#2f80ed", SUCCESS: "#27ae60", FAILED: "#d64541", CANCELED: "#8a8f98",
};

// The columns of GET /api/v1/overview/history's samples and of the live
// `sample` events, as the node names them (its answer's `columns` win).
const COLUMNS = ["time_ms", "apollo11_tasks_waiting", "apollo11_retry_ratio", "apollo11_timeouts_total",
  "apollo11_heartbeat_losses_total", "apollo11_backlog", "apollo11_backlog_cap",
  "apollo11_journal_commit_failures_total"];
const CHART_POINTS = 720;  // an hour of the node's 5 s samples

interface OverviewHistory {
  interval_ms: number;
  columns: string[];
  samples: number[][];
}

export function overviewPage(): Page {
  const page = new BasePage("overview");
  const waiting = new LiveChart("m-waiting", "Tasks waiting to be scheduled", (v) => String(v), CHART_POINTS);
  const retry = new LiveChart("m-retry", "Retry ratio", (v) => (v * 100).toFixed(1) + " %", CHART_POINTS);
  const timeouts = new LiveChart("m-timeouts", "Timeouts (total)", (v) => String(v), CHART_POINTS);
  const losses = new LiveChart("m-losses", "Heartbeat losses (total)", (v) => String(v), CHART_POINTS);
  const backlogText = h("span", { class: "big", id: "backlog-value" }, "–");
  const meter = h("div", { class: "meter" }, h("div"));
  const alerts = h("div", { id: "alerts" });
  const byState = h("div", { id: "runs-by-state", class: "card" }, h("h3", {}, "Runs by state (started per interval)"));
  const recent = h("div", { id: "recent-runs" });
  const recentAlerts = new AlertsPanel();
  page.root.append(
    h("h1", {}, "Overview"),
    h("div", { class: "grid" }, waiting.root, retry.root, timeouts.root, losses.root,
      h("div", { class: "card", id: "backlog" }, h("h3", {}, "Backlog (READY+RUNNING) against its cap"), backlogText, meter),
      h("div", { class: "card" }, h("h3", {}, "Alerts and warnings"), alerts)),
    byState,
    h("h2", {}, "Recent alerts"), recentAlerts.root,
    h("h2", {}, "Recent runs"), recent,
  );

  // The charts and the backlog: the node's last hour of samples when the
  // page opens (and again after a reset), then each live `sample` event;
  // /metrics every 2 s while the events are not live.
  let columns = COLUMNS;
  let previous: number[] | undefined;  // the last row applied
  const col = (row: number[], name: string) => {
    const i = columns.indexOf(name);
    return i >= 0 ? Number(row[i]) || 0 : 0;
  };
  // `rows` oldest first; `fresh`: samples that came now (their increases
  // are reported), not the history read on opening.
  const apply = (rows: number[][], fresh: boolean, paused?: boolean) => {
    rows = rows.filter((r) => Array.isArray(r) && r.length >= 2 && (!previous || r[0] > previous[0]));
    if (!rows.length) return;
    const series = (name: string) => rows.map((r) => [r[0] / 1000, col(r, name)] as [number, number]);
    waiting.addAll(series("apollo11_tasks_waiting"));
    retry.addAll(series("apollo11_retry_ratio"));
    timeouts.addAll(series("apollo11_timeouts_total"));
    losses.addAll(series("apollo11_heartbeat_losses_total"));
    const last = rows[rows.length - 1];
    const backlog = col(last, "apollo11_backlog"), cap = col(last, "apollo11_backlog_cap");
    if (paused === undefined && columns.includes("apollo11_backlog_paused")) paused = col(last, "apollo11_backlog_paused") > 0;
    backlogText.textContent = `${backlog} / ${cap}` + (paused ? " (promotion paused)" : "");
    const ratio = cap > 0 ? Math.min(1, backlog / cap) : 0;
    (meter.firstChild as HTMLElement).style.width = (ratio * 100).toFixed(1) + "%";
    meter.classList.toggle("warn", ratio >= 0.8);
    const lines: HTMLElement[] = [];
    if (fresh && previous) {
      const before = previous;
      const grew = (name: string) => col(last, name) - col(before, name);
      if (grew("apollo11_timeouts_total") > 0) lines.push(h("div", {}, `${grew("apollo11_timeouts_total")} task timeout(s) just now`));
      if (grew("apollo11_heartbeat_losses_total") > 0) lines.push(h("div", {}, `${grew("apollo11_heartbeat_losses_total")} worker heartbeat loss(es) just now`));
    }
    if (col(last, "apollo11_journal_commit_failures_total") > 0) lines.push(h("div", {}, "journal commits have failed (disk full?)"));
    previous = last;
    if (lines.length || !alerts.firstChild) {
      clear(alerts);
      alerts.append(...lines, h("div", { class: "muted" },
        "Timeouts, heartbeat losses and journal failures seen since this page opened; " +
        "the alerts delivered are under Recent alerts."));
    }
  };
  // Whether the node had samples to draw.
  const readHistory = async () => {
    let history: OverviewHistory;
    try {
      history = await getJson<OverviewHistory>("/api/v1/overview/history");
    } catch {
      return false;  // a node without it: /metrics alone
    }
    if (Array.isArray(history.columns) && history.columns[0] === "time_ms") columns = history.columns;
    const samples = history.samples ?? [];
    apply(samples, previous !== undefined);
    return samples.length > 0;
  };
  let opened = false;
  // Samples that came before the history was read wait for it (drawn after).
  let early: number[][] | undefined = [];
  page.live(async ({ polled, events }) => {
    let drawn = false;
    const first = !opened;
    if (first || events.some((e) => e.type === "reset")) {
      opened = true;
      drawn = await readHistory();
      if (early) apply(early, true);
      early = undefined;
    }
    // Live, the samples come as events.
    if (!polled && !(first && !drawn)) return;
    const m = parseMetrics(await getText("/metrics"));
    const row = columns.map((name, i) => (i === 0 ? Date.now() : total(m, name)));
    apply([row], true, total(m, "apollo11_backlog_paused") > 0);
  }, { on: {}, fallbackMs: 2000 });
  page.onStop(live.on("sample", (e) => {
    if (!Array.isArray(e.data)) return;
    if (early) early.push(e.data as number[]);
    else apply([e.data as number[]], true);
  }));

  // Recent runs and runs by state: read again on the live `run` events, at
  // most every 2 s, else polled every 3 s.
  let plot: uPlot | undefined;
  page.live(async () => {
    const runs = await getJson<RunLine[]>("/api/runs?limit=200");
    clear(recent);
    recent.append(runTable(runs.slice(0, 15)));
    const data = bucketByState(runs);
    const box = byState;
    if (!plot) {
      plot = new uPlot({
        width: Math.max(300, box.clientWidth - 24), height: 160,
        scales: { x: { time: true } },
        series: [{}, ...RUN_STATES.map((st) => ({
          label: st, stroke: COLORS[st], fill: COLORS[st] + "55", width: 1,
          paths: uPlot.paths.bars!({ size: [0.8, 40] }),
        }))],
      }, data, box);
    } else {
      plot.setData(data);
    }
  }, { on: { run: true }, fallbackMs: 3000, throttleMs: 2000 });

  // Recent alerts: read again on each live `alert` event (a new alert, or
  // the newest one's delivery moved on), else polled every 3 s; while a
  // listed alert still folds or is being delivered, also every 3 s, as its
  // row changes with no new alert. An alert the event named that the list
  // does not have yet (the node's shared answer is up to 1 s old) is looked
  // for again 1 s later, three times at most.
  let transitTimer: number | undefined;
  let awaited: Partial<AlertLine> | undefined, lookedFor = 0;
  page.onStop(() => clearTimeout(transitTimer));
  const alertsTicker = page.live(async ({ events }) => {
    clearTimeout(transitTimer);
    const named = events.filter((e) => e.type === "alert").pop();
    if (named) {
      awaited = named.data as Partial<AlertLine>;
      lookedFor = 0;
    }
    await recentAlerts.refresh();
    if (awaited && !recentAlerts.lists(awaited) && ++lookedFor <= 3) {
      transitTimer = window.setTimeout(() => alertsTicker.trigger(), 1000);
      return;
    }
    awaited = undefined;
    if (recentAlerts.inTransit) transitTimer = window.setTimeout(() => alertsTicker.trigger(), 3000);
  }, { on: { alert: true }, fallbackMs: 3000 });
  return page;
}

// Counts of runs started per time bucket, one series per state.
function bucketByState(runs: RunLine[]): uPlot.AlignedData {
  const times = runs.map((r) => new Date(r.created_at).getTime() / 1000).filter((t) => !isNaN(t));
  if (!times.length) return [[], ...RUN_STATES.map(() => [])];
  const lo = Math.min(...times), hi = Math.max(...times);
  const step = Math.max(60, Math.ceil((hi - lo) / 30 / 60) * 60);
  // One empty bucket on each side, so that a single bucket still has a width.
  const start = Math.floor(lo / step) * step - step;
  const n = Math.floor((hi - start) / step) + 2;
  const xs = Array.from({ length: n }, (_, i) => start + i * step);
  const series = RUN_STATES.map(() => new Array<number>(n).fill(0));
  for (const r of runs) {
    const t = new Date(r.created_at).getTime() / 1000;
    const k = RUN_STATES.indexOf(r.state);
    if (k >= 0 && !isNaN(t)) series[k][Math.floor((t - start) / step)]++;
  }
  return [xs, ...series];
}

export function runTable(runs: RunLine[]): HTMLElement {
  return h("table", { class: "runs" },
    h("thead", {}, h("tr", {}, ...["Run", "Pipeline", "State", "Tasks", "Started", "Duration"].map((t) => h("th", {}, t)))),
    h("tbody", {}, ...runs.map((r) => h("tr", { "data-run": r.run_id },
      h("td", {}, link("/run/" + encodeURIComponent(r.run_id), r.run_id)),
      h("td", {}, r.pipeline), h("td", {}, runStateBadge(r.state, r.handled_failures)), h("td", {}, r.tasks),
      h("td", {}, fmtTime(r.created_at)), h("td", {}, fmtMs(r.duration_ms))))));
}
