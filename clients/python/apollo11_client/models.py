"""Typed views of the node's JSON answers.

Each class reads the fields a caller usually wants and keeps the whole answer
in `raw`, so a field this package does not know yet is still there. Times
are timezone-aware datetimes in UTC (None when the node gave none).
"""

import dataclasses
from datetime import datetime, timezone
from typing import Any, Dict, List, Optional

# The run states of the API; a run in one of ENDED_STATES will not change.
RUN_STATES = ("PENDING", "RUNNING", "SUCCESS", "FAILED", "CANCELED")
ENDED_STATES = frozenset({"SUCCESS", "FAILED", "CANCELED"})
# The task states that end an execution (engine/task_state.h).
ENDED_TASK_STATES = frozenset({"SUCCESS", "FAILED", "TIMEOUT", "SKIPPED", "CANCELED"})


def parse_time(text: Optional[str]) -> Optional[datetime]:
    """An RFC 3339 time as the node writes it (`2026-11-29T10:15:00.250Z`)."""
    if not text:
        return None
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    try:
        return datetime.fromisoformat(text).astimezone(timezone.utc)
    except ValueError:
        return None


def time_of_micros(micros: Optional[int]) -> Optional[datetime]:
    """A `*_us` field (microseconds since the Unix epoch)."""
    if micros is None:
        return None
    return datetime.fromtimestamp(micros / 1e6, tz=timezone.utc)


def _field(**kwargs):
    return dataclasses.field(**kwargs)


def _raw():
    return dataclasses.field(default_factory=dict, repr=False, compare=False)


@dataclasses.dataclass
class Task:
    """One task of a run, as GET /api/v1/runs/ID lists it."""
    task_id: str
    state: str
    exec_id: str = ""
    attempts: int = 0
    worker: Optional[str] = None
    exit_code: Optional[int] = None
    error: Optional[str] = None
    started_at: Optional[datetime] = None
    finished_at: Optional[datetime] = None
    reused_from: Optional[str] = None
    raw: Dict[str, Any] = _raw()

    @classmethod
    def from_json(cls, task_id: str, doc: Dict[str, Any]) -> "Task":
        return cls(task_id=task_id, state=doc.get("state", ""), exec_id=doc.get("exec_id", ""),
                   attempts=doc.get("attempts", 0), worker=doc.get("worker"),
                   exit_code=doc.get("exit_code"), error=doc.get("error"),
                   started_at=time_of_micros(doc.get("started_at_us")),
                   finished_at=time_of_micros(doc.get("finished_at_us")),
                   reused_from=doc.get("reused_from"), raw=doc)


@dataclasses.dataclass
class Run:
    """A run and its tasks (GET /api/v1/runs/ID, as `apollo11 status --json`).

    For a very large run the node lists the tasks that fit its answer and
    counts the others in `tasks_omitted`.
    """
    run_id: str
    pipeline: str
    state: str
    pipeline_version: Optional[int] = None
    pipeline_hash: Optional[str] = None
    params: Dict[str, Any] = _field(default_factory=dict)
    created_at: Optional[datetime] = None
    finished_at: Optional[datetime] = None
    duration_ms: Optional[int] = None
    reason: Optional[str] = None
    rerun_of: Optional[str] = None
    tasks: Dict[str, Task] = _field(default_factory=dict)
    tasks_omitted: int = 0
    raw: Dict[str, Any] = _raw()

    @property
    def ended(self) -> bool:
        """True once the run can no longer change (SUCCESS, FAILED, CANCELED)."""
        return self.state in ENDED_STATES

    @property
    def succeeded(self) -> bool:
        return self.state == "SUCCESS"

    @classmethod
    def from_json(cls, doc: Dict[str, Any]) -> "Run":
        tasks = doc.get("tasks")
        return cls(run_id=doc.get("run_id", ""), pipeline=doc.get("pipeline", ""),
                   state=doc.get("state", ""), pipeline_version=doc.get("pipeline_version"),
                   pipeline_hash=doc.get("pipeline_hash"), params=doc.get("params") or {},
                   created_at=parse_time(doc.get("created_at")),
                   finished_at=parse_time(doc.get("finished_at")),
                   duration_ms=doc.get("duration_ms"), reason=doc.get("reason"),
                   rerun_of=doc.get("rerun_of"),
                   tasks={k: Task.from_json(k, v) for k, v in tasks.items()}
                   if isinstance(tasks, dict) else {},
                   tasks_omitted=doc.get("tasks_omitted", 0), raw=doc)


@dataclasses.dataclass
class RunSummary:
    """One run of a listing (GET /api/v1/runs): no tasks, only their count."""
    run_id: str
    pipeline: str
    state: str
    pipeline_version: Optional[int] = None
    created_at: Optional[datetime] = None
    duration_ms: Optional[int] = None
    task_count: Optional[int] = None
    rerun_of: Optional[str] = None
    raw: Dict[str, Any] = _raw()

    @property
    def ended(self) -> bool:
        return self.state in ENDED_STATES

    @classmethod
    def from_json(cls, doc: Dict[str, Any]) -> "RunSummary":
        count = doc.get("tasks")
        return cls(run_id=doc.get("run_id", ""), pipeline=doc.get("pipeline", ""),
                   state=doc.get("state", ""), pipeline_version=doc.get("pipeline_version"),
                   created_at=parse_time(doc.get("created_at")),
                   duration_ms=doc.get("duration_ms"),
                   task_count=count if isinstance(count, int) else None,
                   rerun_of=doc.get("rerun_of"), raw=doc)


@dataclasses.dataclass
class RunsPage:
    """One page of the run history, newest first. Pass `next_cursor` back for
    the next page until `complete` is true (a page may be short, even empty,
    under a sparse filter while `complete` is still false)."""
    runs: List[RunSummary]
    next_cursor: Optional[str]
    complete: bool
    raw: Dict[str, Any] = _raw()

    @classmethod
    def from_json(cls, doc: Dict[str, Any]) -> "RunsPage":
        return cls(runs=[RunSummary.from_json(r) for r in doc.get("runs", [])],
                   next_cursor=doc.get("next_cursor"), complete=bool(doc.get("complete")),
                   raw=doc)


@dataclasses.dataclass
class Transition:
    """One journaled state change of a task (a run's history, oldest first)."""
    seq: int
    run_id: str
    task_id: str
    exec_id: str
    attempt: int
    from_state: str
    to_state: str
    reason: str = ""
    actor: str = ""
    worker: Optional[str] = None
    at: Optional[datetime] = None
    raw: Dict[str, Any] = _raw()

    @classmethod
    def from_json(cls, doc: Dict[str, Any]) -> "Transition":
        at = time_of_micros(doc.get("ts_us")) if "ts_us" in doc else parse_time(doc.get("ts"))
        return cls(seq=doc.get("seq", 0), run_id=doc.get("run_id", ""),
                   task_id=doc.get("task_id", ""), exec_id=doc.get("exec_id", ""),
                   attempt=doc.get("attempt", 0), from_state=doc.get("from", ""),
                   to_state=doc.get("to", ""), reason=doc.get("reason", ""),
                   actor=doc.get("actor", ""), worker=doc.get("worker"), at=at, raw=doc)


@dataclasses.dataclass
class Execution:
    """One execution (RUN_ID.TASK_ID): its latest attempt and its history."""
    exec_id: str
    run_id: str
    task_id: str
    state: str
    attempt: int = 0
    worker: Optional[str] = None
    exit_code: Optional[int] = None
    error: Optional[str] = None
    output_tail: Optional[str] = None
    started_at: Optional[datetime] = None
    finished_at: Optional[datetime] = None
    history: List[Transition] = _field(default_factory=list)
    raw: Dict[str, Any] = _raw()

    @property
    def ended(self) -> bool:
        """True once the execution can no longer change."""
        return self.state in ENDED_TASK_STATES

    @classmethod
    def from_json(cls, doc: Dict[str, Any]) -> "Execution":
        return cls(exec_id=doc.get("exec_id", ""), run_id=doc.get("run_id", ""),
                   task_id=doc.get("task_id", ""), state=doc.get("state", ""),
                   attempt=doc.get("attempt", 0), worker=doc.get("worker"),
                   exit_code=doc.get("exit_code"), error=doc.get("error"),
                   output_tail=doc.get("output_tail"),
                   started_at=parse_time(doc.get("started_at")),
                   finished_at=parse_time(doc.get("finished_at")),
                   history=[Transition.from_json(t) for t in doc.get("history", [])], raw=doc)



@dataclasses.dataclass
class LogSlice:
    """A slice of an execution attempt's captured output.

    `offset` and `next_offset` count bytes of the log file; `size` is the
    file's size when read. `data` is the slice as text (a UTF-8 character cut
    by a slice boundary shows as a replacement character). `running` says the
    attempt may still write; `final` that the execution has ended.
    """
    exec_id: str
    stream: str
    attempt: int
    latest_attempt: int
    offset: int
    next_offset: int
    size: int
    data: str
    running: bool
    final: bool
    state: str = ""
    worker: Optional[str] = None
    raw: Dict[str, Any] = _raw()

    @property
    def more_may_come(self) -> bool:
        """True while this attempt may still write (so a follower polls on)."""
        return self.running or (self.attempt == self.latest_attempt and not self.final)

    @classmethod
    def from_json(cls, doc: Dict[str, Any]) -> "LogSlice":
        offset = doc.get("offset", 0)
        return cls(exec_id=doc.get("exec_id", ""), stream=doc.get("stream", "out"),
                   attempt=doc.get("attempt", 0),
                   latest_attempt=doc.get("latest_attempt", doc.get("attempt", 0)),
                   offset=offset, next_offset=doc.get("next_offset", offset),
                   size=doc.get("size", 0), data=doc.get("data", ""),
                   running=bool(doc.get("running")), final=bool(doc.get("final", True)),
                   state=doc.get("state", ""), worker=doc.get("worker"), raw=doc)


@dataclasses.dataclass
class Worker:
    """A connected worker (GET /api/v1/workers)."""
    id: str
    group: str
    slots: int
    running: int
    queued: int
    credits: int
    labels: List[str]
    state: str = ""
    last_heartbeat: Optional[datetime] = None
    connected_since: Optional[datetime] = None
    losses: int = 0
    raw: Dict[str, Any] = _raw()

    @classmethod
    def from_json(cls, doc: Dict[str, Any]) -> "Worker":
        return cls(id=doc.get("id", ""), group=doc.get("group", ""), slots=doc.get("slots", 0),
                   running=doc.get("running", 0), queued=doc.get("queued", 0),
                   credits=doc.get("credits", 0), labels=list(doc.get("labels", [])),
                   state=doc.get("state", ""),
                   last_heartbeat=parse_time(doc.get("last_heartbeat")),
                   connected_since=parse_time(doc.get("connected_since")),
                   losses=doc.get("losses", 0), raw=doc)


@dataclasses.dataclass
class Pipeline:
    """A pipeline of GET /api/v1/pipelines: registered, or seen in recent runs."""
    name: str
    registered: bool = False
    active_version: Optional[int] = None
    latest_version: Optional[int] = None
    label: Optional[str] = None
    hash: Optional[str] = None
    paused: bool = False
    removed: bool = False
    last_run_id: Optional[str] = None
    last_run_state: Optional[str] = None
    last_run_at: Optional[datetime] = None
    raw: Dict[str, Any] = _raw()

    @classmethod
    def from_json(cls, doc: Dict[str, Any]) -> "Pipeline":
        return cls(name=doc.get("name", ""), registered=bool(doc.get("registered")),
                   active_version=doc.get("active_version"),
                   latest_version=doc.get("latest_version"), label=doc.get("label"),
                   hash=doc.get("hash"), paused=bool(doc.get("paused")),
                   removed=bool(doc.get("removed")), last_run_id=doc.get("last_run_id"),
                   last_run_state=doc.get("last_run_state"),
                   last_run_at=parse_time(doc.get("last_run_at")), raw=doc)


@dataclasses.dataclass
class PipelineVersion:
    """A version of a registered pipeline (also GET /api/v1/pipelines/NAME[@V],
    whose `snapshot` is the version's content with env values hidden)."""
    name: str
    version: int
    label: str = ""
    hash: str = ""
    active: bool = False
    paused: bool = False
    added_at: Optional[datetime] = None
    added_by: Optional[str] = None
    snapshot: Optional[Dict[str, Any]] = None
    raw: Dict[str, Any] = _raw()

    @classmethod
    def from_json(cls, doc: Dict[str, Any], name: str = "") -> "PipelineVersion":
        return cls(name=doc.get("name", name), version=doc.get("version", 0),
                   label=doc.get("label", ""), hash=doc.get("hash", ""),
                   active=bool(doc.get("active")), paused=bool(doc.get("paused")),
                   added_at=parse_time(doc.get("added_at")), added_by=doc.get("added_by"),
                   snapshot=doc.get("snapshot"), raw=doc)


@dataclasses.dataclass
class Registration:
    """The answer to registering a pipeline: its new (or unchanged) version."""
    name: str
    version: int
    hash: str
    label: str
    unchanged: bool
    raw: Dict[str, Any] = _raw()

    @classmethod
    def from_json(cls, doc: Dict[str, Any]) -> "Registration":
        return cls(name=doc.get("name", ""), version=doc.get("version", 0),
                   hash=doc.get("hash", ""), label=doc.get("label", ""),
                   unchanged=bool(doc.get("unchanged")), raw=doc)


@dataclasses.dataclass
class Triggered:
    """A started run: `existing` is true when an idempotency key seen before
    answered the run it had started."""
    run_id: str
    name: str
    version: Optional[int]
    existing: bool
    raw: Dict[str, Any] = _raw()

    @classmethod
    def from_json(cls, doc: Dict[str, Any]) -> "Triggered":
        return cls(run_id=doc.get("run_id", ""), name=doc.get("name", ""),
                   version=doc.get("version"), existing=bool(doc.get("existing")), raw=doc)


@dataclasses.dataclass
class Rerun:
    """A rerun's new run, and the run it reruns."""
    run_id: str
    rerun_of: str
    raw: Dict[str, Any] = _raw()

    @classmethod
    def from_json(cls, doc: Dict[str, Any]) -> "Rerun":
        return cls(run_id=doc.get("run_id", ""), rerun_of=doc.get("rerun_of", ""), raw=doc)


@dataclasses.dataclass
class PauseState:
    """A pipeline's pause after pause() or unpause()."""
    name: str
    paused: bool
    active_version: Optional[int]
    raw: Dict[str, Any] = _raw()

    @classmethod
    def from_json(cls, doc: Dict[str, Any]) -> "PauseState":
        return cls(name=doc.get("name", ""), paused=bool(doc.get("paused")),
                   active_version=doc.get("active"), raw=doc)
