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
  queued?: number;
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
