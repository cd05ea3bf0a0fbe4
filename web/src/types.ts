// Shapes of the JSON API's answers (docs/operations.md, "HTTP API").

export const STATES = [
  "PENDING", "READY", "RUNNING", "RETRYING", "SUCCESS", "FAILED", "TIMEOUT", "SKIPPED", "CANCELED",
] as const;
export const FINISHED_RUN = new Set(["SUCCESS", "FAILED", "CANCELED"]);

export interface RunLine {
  run_id: string;
  pipeline: string;
  state: string;
  created_at: string;
  duration_ms?: number;
  tasks: number;
  handled_failures?: number;
}
export interface TaskStatus {
  state: string;
  attempts: number;
  exec_id: string;
  exit_code?: number;
  worker?: string;
  started_at_us?: number;
  finished_at_us?: number;
  slow?: string;
  slow_reason?: string;
  flagged_at?: string;
  error?: string;
  handled?: boolean;
}
export interface RunStatus {
  run_id: string;
  pipeline: string;
  pipeline_hash?: string;
  state: string;
  reason?: string;
  created_at: string;
  finished_at?: string;
  duration_ms?: number;
  tasks: Record<string, TaskStatus>;
  journal_error?: string;
  rerun_of?: string;
  handled_failures?: number;
}
export interface Transition {
  seq: number;
  exec_id: string;
  task_id: string;
  attempt: number;
  from: string;
  to: string;
  reason: string;
  actor: string;
  ts: string;
  ts_us: number;
  worker?: string;
  note?: boolean;  // an event (slow flag, operator decision), not a state change
}
export interface Execution {
  exec_id: string;
  attempt: number;
  state?: string;
  exit_code?: number;
  history: Transition[];
  [key: string]: unknown;
}
export interface GraphTask {
  id: string;
  type: string;
  deps: { task: string; on?: string }[];
}
export interface Graph {
  pipeline: string;
  hash: string;
  tasks: GraphTask[];
}
export interface Worker {
  id: string;
  group: string;
  labels: string[];
  slots: number;
  running: number;
  queued: number;  // held beyond its slots (--prefetch)
  credits: number;
  last_heartbeat: string;
  losses: number;
  connected_since: string;
  state: string;
}
export interface PipelineLine {
  name: string;
  hash?: string;
  runs: number;
  last_run_at?: string;
  last_run_id?: string;
  last_run_state?: string;
  // Registered pipelines (the registry) only:
  registered?: boolean;
  active_version?: number;
  label?: string;
  paused?: boolean;
  paused_by?: string;
  removed?: boolean;
  latest_version?: number;
  // A scheduled pipeline only: its cron, zone and fires.
  schedule?: ScheduleLine;
}
// GET /api/v1/pipelines: a scheduled pipeline's schedule, as the
// coordinator's scheduler sees it now.
export interface ScheduleLine {
  cron: string;
  timezone: string;
  active_runs: number;
  queued_fires: number;
  next_fire: string | null;
  last_fire: string | null;
}
// One fire of a schedule (GET /api/v1/pipelines/NAME: fires, newest first).
export interface Fire {
  scheduled_at: string;
  state: string;  // started, skipped, queued
  origin: string;  // schedule, catchup, backfill
  decided_at: string;
  run_id?: string;
  reason?: string;
}
// The part of a pipeline's snapshot (docs/dsl.md) the pipeline page reads;
// the rest is shown as it is.
export interface PipelineSnapshot {
  name?: string;
  params?: Record<string, string>;
  schedule?: string;
  timezone?: string;
  catchup?: string;
  catchup_window_ms?: number;
  overlap?: string;
  max_active_runs?: number;
  tasks?: { id: string }[];
  [key: string]: unknown;
}
export interface PipelineVersion {
  version: number;
  hash: string;
  label: string;
  added_at: string;
  added_by: string;
  active: boolean;
}
// GET /api/v1/pipelines/NAME[@V]: a registered pipeline's version.
export interface PipelineVersionDetail extends PipelineVersion {
  name: string;
  paused: boolean;
  snapshot: PipelineSnapshot;
  fires?: Fire[];
}
// GET /api/v1/pipelines/NAME/versions.
export interface PipelineVersions {
  name: string;
  active_version: number;  // 0 once removed
  paused: boolean;
  versions: PipelineVersion[];
}
// POST /api/v1/pipelines/NAME/runs.
export interface Triggered {
  run_id: string;
  name: string;
  version: number;
  existing: boolean;
}
// POST /api/v1/pipelines/NAME/backfill, with "dry_run": true (a preview)
// or without (queued).
export interface Backfilled {
  name: string;
  queued?: number;
  dry_run?: boolean;
  would_queue?: number;
  times?: string[];
}
// POST .../pause, .../unpause, .../remove.
export interface PipelineState {
  name: string;
  active: number;
  paused: boolean;
}
export interface NodeInfo {
  role?: string;
  epoch?: number;
  mutations?: boolean;
  version?: string;
}
export interface LogSlice {
  exec_id: string;
  attempt: number;
  worker?: string;
  size: number;
  running?: boolean;
  offset: number;
  next_offset: number;
  data: string;
}

// GET /api/alerts: the alerts the node delivered lately, newest first.
export interface AlertDelivery {
  target: string;
  state: "delivered" | "failed";
  error?: string;
}
export interface AlertLine {
  id: string;
  type: string;
  severity: "critical" | "error" | "warning" | "info";
  pipeline: string;
  run_id: string;
  task_id: string;
  exec_id: string;
  worker_id: string;
  count: number;
  ts: string;
  first_ts: string;
  text: string;
  delivery: "folding" | "delivering" | "delivered" | "failed" | "partial" | "none";
  deliveries: AlertDelivery[];
}
export interface AlertList {
  alerts: AlertLine[];
  capacity: number;
  recorded: number;
}
