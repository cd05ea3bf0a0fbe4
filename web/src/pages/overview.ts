// The overview: recent runs, runs by state over time, the brief's four key
// metrics as live charts, the backlog against its cap, alert signals and
// the alerts the node delivered lately.

import uPlot from "uplot";
import { AlertsPanel } from "../alerts";
import { getJson, getText } from "../api";
import { LiveChart } from "../chart";
import { clear, fmtMs, fmtTime, h, link, runStateBadge } from "../dom";
import { parseMetrics, total } from "../metrics";
import { BasePage, Page } from "../page";
import { RunLine } from "../types";

const RUN_STATES = ["RUNNING", "SUCCESS", "FAILED", "CANCELED"];
const COLORS: Record<string, string> = {
  RUNNING: "#2f80ed", SUCCESS: "#27ae60", FAILED: "#d64541", CANCELED: "#8a8f98",
};

export function overviewPage(): Page {
  const page = new BasePage("overview");
  const waiting = new LiveChart("m-waiting", "Tasks waiting to be scheduled", (v) => String(v));
  const retry = new LiveChart("m-retry", "Retry ratio", (v) => (v * 100).toFixed(1) + " %");
  const timeouts = new LiveChart("m-timeouts", "Timeouts (total)", (v) => String(v));
  const losses = new LiveChart("m-losses", "Heartbeat losses (total)", (v) => String(v));
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

  let lastTimeouts = -1, lastLosses = -1;
  page.poll(async () => {
    const m = parseMetrics(await getText("/metrics"));
    const t = Date.now() / 1000;
    waiting.add(t, total(m, "apollo11_tasks_waiting"));
    retry.add(t, total(m, "apollo11_retry_ratio"));
    const to = total(m, "apollo11_timeouts_total"), hl = total(m, "apollo11_heartbeat_losses_total");
    timeouts.add(t, to);
    losses.add(t, hl);
    const backlog = total(m, "apollo11_backlog"), cap = total(m, "apollo11_backlog_cap");
    backlogText.textContent = `${backlog} / ${cap}` + (total(m, "apollo11_backlog_paused") ? " (promotion paused)" : "");
    const ratio = cap > 0 ? Math.min(1, backlog / cap) : 0;
    (meter.firstChild as HTMLElement).style.width = (ratio * 100).toFixed(1) + "%";
    meter.classList.toggle("warn", ratio >= 0.8);
    const lines: HTMLElement[] = [];
    if (lastTimeouts >= 0 && to > lastTimeouts) lines.push(h("div", {}, `${to - lastTimeouts} task timeout(s) just now`));
    if (lastLosses >= 0 && hl > lastLosses) lines.push(h("div", {}, `${hl - lastLosses} worker heartbeat loss(es) just now`));
    if (total(m, "apollo11_journal_commit_failures_total") > 0) lines.push(h("div", {}, "journal commits have failed (disk full?)"));
    lastTimeouts = to;
    lastLosses = hl;
    if (lines.length || !alerts.firstChild) {
      clear(alerts);
      alerts.append(...lines, h("div", { class: "muted" },
        "Timeouts, heartbeat losses and journal failures seen since this page opened; " +
        "the alerts delivered are under Recent alerts."));
    }
  }, 2000);

  let plot: uPlot | undefined;
  page.poll(async () => {
    await recentAlerts.refresh();
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
  }, 3000);
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
