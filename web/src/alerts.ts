// The overview's "Recent alerts" panel: what GET /api/alerts lists (the
// alerts the node delivered lately, folded repeats counted), newest first,
// with a link to the run or execution and each target's delivery outcome.

import { getJson } from "./api";
import { clear, fmtTime, h, link } from "./dom";
import { AlertDelivery, AlertLine, AlertList } from "./types";

const SHOWN = 20;

export class AlertsPanel {
  readonly root: HTMLElement;
  private readonly body: HTMLElement;

  constructor() {
    this.body = h("div", { id: "recent-alerts-body" });
    this.root = h("div", { id: "recent-alerts" }, this.body);
  }

  // Whether an alert shown is still folding repeats or being delivered (its
  // row will change with no new alert).
  inTransit = false;
  private shown: AlertLine[] = [];

  // Whether `a` (an `alert` event's) is among the alerts listed.
  lists(a: Partial<AlertLine>): boolean {
    return this.shown.some((x) => x.type === a.type && x.first_ts === a.first_ts && x.run_id === a.run_id &&
      x.exec_id === a.exec_id && x.worker_id === a.worker_id);
  }

  // Fetches the list and redraws the panel; called by the overview on each
  // live `alert` event, or its poller.
  async refresh(): Promise<void> {
    const list = await getJson<AlertList>("/api/alerts?limit=" + SHOWN);
    this.inTransit = list.alerts.some((a) => a.delivery === "folding" || a.delivery === "delivering");
    this.shown = list.alerts;
    clear(this.body);
    if (!list.alerts.length) {
      this.body.append(h("p", { class: "muted" }, "No alert has fired since the node started."));
      return;
    }
    this.body.append(alertTable(list.alerts));
  }
}

function alertTable(alerts: AlertLine[]): HTMLElement {
  const heads = ["Time", "Type", "Pipeline / run", "What happened", "Folded", "Delivery"];
  return h("table", { class: "alerts" },
    h("thead", {}, h("tr", {}, ...heads.map((t) => h("th", {}, t)))),
    h("tbody", {}, ...alerts.map(alertRow)));
}

function alertRow(a: AlertLine): HTMLElement {
  return h("tr", { "data-alert": a.id, "data-type": a.type },
    h("td", {}, fmtTime(a.ts)),
    h("td", {}, h("span", { class: "sev " + a.severity, title: a.severity }, a.type)),
    h("td", {}, where(a)),
    h("td", { class: "wrap alert-text" }, a.text),
    h("td", { class: "alert-count" }, a.count > 1 ? `×${a.count} since ${fmtTime(a.first_ts)}` : "1"),
    h("td", { class: "wrap" }, delivery(a)));
}

// The pipeline and a link to the run (and its execution) the alert is about.
function where(a: AlertLine): HTMLElement {
  const cell = h("span", {}, a.pipeline || (a.worker_id ? "worker " + a.worker_id : "node"));
  if (a.run_id) cell.append(" ", link("/run/" + encodeURIComponent(a.run_id), a.run_id));
  if (a.exec_id) cell.append(" ", link("/exec/" + encodeURIComponent(a.exec_id), a.task_id || a.exec_id));
  return cell;
}

function delivery(a: AlertLine): HTMLElement {
  const label = a.delivery === "none" ? "no target"
    : a.delivery === "folding" ? "folding repeats" : a.delivery;
  const cell = h("span", {}, h("span", { class: "delivery " + a.delivery, "data-delivery": a.delivery }, label));
  for (const d of a.deliveries) cell.append(h("div", { class: "muted small" }, targetLine(d)));
  return cell;
}

function targetLine(d: AlertDelivery): string {
  return d.state === "delivered" ? `${d.target}: delivered` : `${d.target}: failed (${d.error ?? ""})`;
}
