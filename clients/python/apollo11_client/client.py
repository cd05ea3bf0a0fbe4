"""Client: the coordinator's HTTP API (/api/v1/) from Python.

One Client per node; it holds no connection (the node answers one request
per connection) and no state besides its settings, so one Client may serve
several threads. Python's standard library does the HTTP: the package needs
nothing else (PyYAML only to inline scripts when registering a file).
"""

import json
import os
import re
import ssl
import time
import urllib.error
import urllib.parse
import urllib.request
from datetime import datetime, timedelta, timezone
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Union

from . import errors
from .models import (Execution, LogSlice, PauseState, Pipeline, PipelineVersion, Registration,
                     Rerun, Run, RunsPage, RunSummary, Transition, Triggered, Worker)
from .pipeline_file import inline_scripts

__version__ = "0.1.0"

_BASE_URL = re.compile(r"^(https?://[^/?#]+)(/[A-Za-z0-9._~/-]*)?$")
# A time filter: an RFC 3339 text or age (`7d`) as the node reads it, or a datetime.
TimeArg = Union[str, datetime, timedelta, None]
PathArg = Union[str, "os.PathLike[str]"]


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """The node never redirects an API call; following one elsewhere would
    send the token there, so a 3xx is an error like the CLI's."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


def _segment(text: str) -> str:
    """An id for a path segment (run ids keep ':' and '@', as the CLI's)."""
    return urllib.parse.quote(str(text), safe=":@")


def _time_param(value: TimeArg, name: str) -> Optional[str]:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, timedelta):
        if name != "since":
            raise TypeError("until is a time, not an age")
        return f"{max(0, int(value.total_seconds()))}s"
    if isinstance(value, datetime):  # a naive datetime is local time, as Python reads it
        return value.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    raise TypeError(f"{name} is a str, datetime or timedelta, not {type(value).__name__}")


def _read_token(token: Optional[str], token_file: Optional[PathArg]) -> str:
    if token is None and token_file is not None:
        with open(token_file, encoding="utf-8") as f:
            token = f.read()
    if token is None:
        token = os.environ.get("APOLLO11_API_TOKEN", "")
    token = token.strip()
    if "\n" in token or "\r" in token:
        raise ValueError("the API token holds a line break: one token, on one line")
    return token


class Client:
    """A coordinator's HTTP API.

    `base_url` is `http(s)://HOST:PORT[/BASE-PATH]`, by default
    $APOLLO11_COORDINATOR when that is an http(s) URL (as the CLI reads it).
    The token is `token`, else the first line of `token_file`, else
    $APOLLO11_API_TOKEN; without one the client is anonymous (a node without a
    tokens file lets anonymous callers read). `timeout` bounds each request
    in seconds (the node gives up on its coordinator after 10 s with a 503).
    `cafile` or `ssl_context` verify an https node.
    """

    def __init__(self, base_url: Optional[str] = None, token: Optional[str] = None, *,
                 token_file: Optional[PathArg] = None, timeout: float = 30.0,
                 cafile: Optional[str] = None, ssl_context: Optional[ssl.SSLContext] = None):
        if base_url is None:
            env = os.environ.get("APOLLO11_COORDINATOR", "")
            if not env.startswith(("http://", "https://")):
                raise ValueError("no base URL: pass Client('http://HOST:PORT') or set "
                                 "APOLLO11_COORDINATOR to the node's HTTP API")
            base_url = env
        base_url = base_url.rstrip("/")
        if not _BASE_URL.match(base_url):
            raise ValueError(f"base_url {base_url!r}: an HTTP API is "
                             "http(s)://HOST:PORT[/BASE-PATH]")
        self.base_url = base_url
        self.timeout = timeout
        self._token = _read_token(token, token_file)
        if ssl_context is None and cafile is not None:
            ssl_context = ssl.create_default_context(cafile=cafile)
        handlers: List[Any] = [_NoRedirect()]
        if ssl_context is not None:
            handlers.append(urllib.request.HTTPSHandler(context=ssl_context))
        self._opener = urllib.request.build_opener(*handlers)

    def __repr__(self) -> str:
        return f"Client({self.base_url!r}, token={'set' if self._token else 'none'})"

    # -- the wire ---------------------------------------------------------

    def request(self, method: str, path: str, *, query: Optional[Mapping[str, Any]] = None,
                body: Union[bytes, str, Mapping[str, Any], None] = None,
                content_type: str = "application/json") -> Any:
        """One call: `path` below the base URL (`/api/v1/...`), `query` with
        None values left out, `body` JSON (a mapping) or raw text. Returns the
        answer's JSON (None for an empty answer); raises an ApiError subclass
        for an error status and TransportError when there is no answer."""
        url = self.base_url + path
        if query:
            pairs = [(k, v) for k, v in query.items() if v is not None]
            if pairs:
                url += "?" + urllib.parse.urlencode(pairs, doseq=True)
        data = None
        if method != "GET":  # the node wants a body (or Content-Length: 0) on a POST
            if body is None:
                body = {}
            if isinstance(body, Mapping):
                data = json.dumps(body).encode("utf-8")
            else:
                data = body.encode("utf-8") if isinstance(body, str) else bytes(body)
        headers = {"Accept": "application/json", "User-Agent": f"apollo11-client/{__version__}"}
        if data is not None:
            headers["Content-Type"] = content_type
        if self._token:
            headers["Authorization"] = "Bearer " + self._token
        req = urllib.request.Request(url, data=data, headers=headers, method=method)
        try:
            with self._opener.open(req, timeout=self.timeout) as res:
                text = res.read().decode("utf-8", errors="replace")
        except urllib.error.HTTPError as e:
            raise self._refusal(e) from None
        except (urllib.error.URLError, OSError) as e:
            reason = getattr(e, "reason", e)
            raise errors.TransportError(
                f"the node's HTTP API at {self.base_url} did not answer {method} {path}: "
                f"{reason}") from e
        if not text.strip():
            return None
        try:
            return json.loads(text)
        except ValueError:
            raise errors.TransportError(f"{method} {path}: the node answered no JSON: "
                                        f"{text[:200]!r}") from None

    @staticmethod
    def _refusal(e: urllib.error.HTTPError) -> errors.ApiError:
        try:
            text = e.read().decode("utf-8", errors="replace")
        except OSError:
            text = ""
        message = text[:300] or (e.reason if isinstance(e.reason, str) else str(e.reason))
        try:
            doc = json.loads(text)
            if isinstance(doc, dict) and isinstance(doc.get("error"), str):
                message = doc["error"]
        except ValueError:
            pass
        headers = e.headers
        return errors.error_for(e.code, message,
                                headers.get("X-Request-Id") if headers else None, text,
                                headers.get("Retry-After") if headers else None)

    def _get(self, path: str, query: Optional[Mapping[str, Any]] = None) -> Any:
        return self.request("GET", "/api/v1" + path, query=query)

    def _post(self, path: str, body: Union[str, Mapping[str, Any], None] = None,
              content_type: str = "application/json") -> Any:
        return self.request("POST", "/api/v1" + path, body=body, content_type=content_type)

    # -- pipelines --------------------------------------------------------

    def register(self, source: Union[PathArg, str, bytes], *,
                 inline: bool = True) -> Registration:
        """Registers a pipeline YAML as its next version (role admin).

        `source` is a path (a PathLike, or a str of one line naming an existing
        file) or the YAML text itself. From a file, each python or db task's
        `script:` is read beside it into `code:`/`sql:` so the version holds
        the code (`inline=False` sends the file as written; see
        pipeline_file). The answer says `unchanged` when the content is that
        of the newest version. BadRequest carries the positioned errors when
        the pipeline does not validate."""
        text, path = self._yaml_of(source)
        if path is not None and inline:
            text = inline_scripts(text, os.path.dirname(os.path.abspath(path)), str(path))
        return Registration.from_json(self._post("/pipelines", text, "application/yaml"))

    @staticmethod
    def _yaml_of(source) -> "tuple[str, Optional[str]]":
        if isinstance(source, bytes):
            return source.decode("utf-8"), None
        if isinstance(source, os.PathLike) or (
                isinstance(source, str) and "\n" not in source and os.path.isfile(source)):
            path = os.fspath(source)
            with open(path, encoding="utf-8") as f:
                return f.read(), path
        if isinstance(source, str):
            return source, None
        raise TypeError(f"a pipeline is YAML text or a path, not {type(source).__name__}")

    def trigger(self, name: str, params: Optional[Mapping[str, Any]] = None, *,
                idempotency_key: Optional[str] = None,
                version: Union[int, str, None] = None) -> Triggered:
        """Starts a run of registered pipeline `name` (its active version, or
        `version`: a number or label). With an idempotency key seen before the
        node starts nothing and answers that run (`existing`); Conflict when
        the key was used for other params or another version, or the pipeline
        is paused. BadRequest for an undeclared or ill-typed param."""
        body: Dict[str, Any] = {}
        if params:
            body["params"] = dict(params)
        if idempotency_key is not None:
            body["idempotency_key"] = idempotency_key
        if version is not None:
            body["version"] = str(version)
        return Triggered.from_json(self._post(f"/pipelines/{_segment(name)}/runs", body))

    def submit(self, source: Union[PathArg, str, bytes],
               params: Optional[Mapping[str, Any]] = None, *,
               idempotency_key: Optional[str] = None) -> Triggered:
        """Runs a pipeline YAML: registers it (see register) and triggers the
        version that registration answered. The HTTP API starts runs of
        registered pipelines only, so this needs role admin, where `apollo11
        submit` over ZeroMQ needs none of the registry."""
        registered = self.register(source)
        return self.trigger(registered.name, params, idempotency_key=idempotency_key,
                            version=registered.version)

    def pipelines(self) -> List[Pipeline]:
        """Every registered pipeline and those seen in the newest 1000 runs."""
        return [Pipeline.from_json(p) for p in self._get("/pipelines")]

    def pipeline(self, name: str, version: Union[int, str, None] = None) -> PipelineVersion:
        """A version of a pipeline (the active one by default), with its
        snapshot (env values hidden)."""
        ref = name if version is None else f"{name}@{version}"
        return PipelineVersion.from_json(self._get(f"/pipelines/{_segment(ref)}"), name)

    def versions(self, name: str) -> List[PipelineVersion]:
        """The versions of registered pipeline `name`, oldest first."""
        doc = self._get(f"/pipelines/{_segment(name)}/versions")
        return [PipelineVersion.from_json(v, name) for v in doc.get("versions", [])]

    def pause(self, name: str) -> PauseState:
        """Stops new runs of `name` (running ones go on); triggers then raise
        Conflict. Journaled: it survives restarts."""
        return PauseState.from_json(self._post(f"/pipelines/{_segment(name)}/pause"))

    def unpause(self, name: str) -> PauseState:
        """Lets a paused pipeline start runs again."""
        return PauseState.from_json(self._post(f"/pipelines/{_segment(name)}/unpause"))

    def backfill(self, name: str, start: Union[str, datetime], end: Union[str, datetime], *,
                 max_active: Optional[int] = None) -> Dict[str, Any]:
        """One run per scheduled time of `name`'s schedule in [start, end]:
        answers `{"name", "queued"}`. NotFound for a pipeline without a
        schedule, BadRequest for an end in the future."""
        body: Dict[str, Any] = {"from": _time_param(start, "from"),
                                "to": _time_param(end, "to")}
        if max_active is not None:
            body["max_active"] = max_active
        return self._post(f"/pipelines/{_segment(name)}/backfill", body)

    def remove_pipeline(self, name: str) -> Dict[str, Any]:
        """No version of `name` active any more (its schedule removed);
        versions and runs stay readable. Role admin."""
        return self._post(f"/pipelines/{_segment(name)}/remove")

    # -- runs -------------------------------------------------------------

    def status(self, run_id: str) -> Run:
        """A run and its tasks; NotFound for an unknown run."""
        return Run.from_json(self._get(f"/runs/{_segment(run_id)}"))

    def wait(self, run_id: str, timeout: Optional[float] = None, *,
             poll_interval: float = 0.25, max_interval: float = 2.0) -> Run:
        """Polls the run's status until it has ended and returns it.

        The HTTP API pushes nothing, so this polls: every `poll_interval`
        seconds at first, then 1.5 times longer each time up to
        `max_interval` (the node shares a read's answer for 1 s anyway). An
        unreachable node or a 503 is polled through until `timeout` seconds
        have passed (None: no limit); then WaitTimeout, whose `run` is the last
        status seen."""
        deadline = None if timeout is None else time.monotonic() + timeout
        delay = poll_interval
        last: Optional[Run] = None
        while True:
            try:
                last = self.status(run_id)
                if last.ended:
                    return last
            except (errors.TransportError, errors.Unavailable):
                if deadline is not None and time.monotonic() >= deadline:
                    raise
            now = time.monotonic()
            if deadline is not None and now >= deadline:
                state = last.state if last else "unknown"
                raise errors.WaitTimeout(
                    f"run {run_id} has not ended after {timeout} s (it is {state})", last)
            time.sleep(delay if deadline is None else min(delay, max(0.0, deadline - now)))
            delay = min(delay * 1.5, max_interval)

    def history(self, run_id: str) -> List[Transition]:
        """Every journaled transition of the run, oldest first."""
        return [Transition.from_json(t) for t in self._get(f"/runs/{_segment(run_id)}/history")]

    def graph(self, run_id: str) -> Dict[str, Any]:
        """The run's pipeline as a graph: task ids, types and dependencies."""
        return self._get(f"/runs/{_segment(run_id)}/graph")

    def runs_page(self, *, pipeline: Optional[str] = None, prefix: Optional[str] = None,
                  state: Union[str, Iterable[str], None] = None, since: TimeArg = None,
                  until: TimeArg = None, limit: int = 50,
                  cursor: Optional[str] = None) -> RunsPage:
        """One page of the run history, newest first (by creation time, then
        run id). `pipeline` is a name, `prefix` the start of names (`etl.`),
        `state` one state or several, `since` a time, an age (`7d`) or a
        timedelta, `until` a time (exclusive), `limit` 1 to 1000."""
        if state is not None and not isinstance(state, str):
            state = ",".join(state)
        return RunsPage.from_json(self._get("/runs", {
            "pipeline": pipeline, "prefix": prefix, "state": state or None,
            "since": _time_param(since, "since"), "until": _time_param(until, "until"),
            "limit": limit, "cursor": cursor}))

    def runs(self, *, pipeline: Optional[str] = None, prefix: Optional[str] = None,
             state: Union[str, Iterable[str], None] = None, since: TimeArg = None,
             until: TimeArg = None, page_size: int = 50) -> Iterator[RunSummary]:
        """Every run matching the filters (see runs_page), newest first, page
        after page: each run created before the walk began comes exactly once,
        however many runs start meanwhile."""
        if state is not None and not isinstance(state, str):
            state = ",".join(state)
        cursor = None
        while True:
            page = self.runs_page(pipeline=pipeline, prefix=prefix, state=state, since=since,
                                  until=until, limit=page_size, cursor=cursor)
            yield from page.runs
            if page.complete or not page.next_cursor:
                return
            cursor = page.next_cursor

    def cancel(self, run_id: str) -> None:
        """Asks the coordinator to cancel an active run (it ends CANCELED
        shortly after: wait() for it). Conflict if the run already finished."""
        self._post(f"/runs/{_segment(run_id)}/cancel")

    def rerun(self, run_id: str, *, failed: bool = False, from_task: Optional[str] = None,
              downstream: bool = False) -> Rerun:
        """Starts a new run of a finished run, reusing what succeeded: by
        default (or `failed=True`) every task that did not succeed and what is
        downstream of it; `from_task` also that task, and with `downstream`
        everything downstream of it. NotFound for an unknown run or task,
        BadRequest for a run not ended or nothing to rerun."""
        if from_task is None:
            if downstream:
                raise ValueError("downstream=True needs from_task")
            body: Dict[str, Any] = {"failed": True}
        else:
            if failed:
                raise ValueError("failed=True and from_task are exclusive")
            body = {"from": from_task, "downstream": bool(downstream)}
        return Rerun.from_json(self._post(f"/runs/{_segment(run_id)}/rerun", body))

    # -- executions and logs ----------------------------------------------

    def execution(self, exec_id: str) -> Execution:
        """One execution (`RUN_ID.TASK_ID`): its latest attempt and history."""
        return Execution.from_json(self._get(f"/executions/{_segment(exec_id)}"))

    def log_slice(self, exec_id: str, stream: str = "out", attempt: Optional[int] = None,
                  offset: int = 0, max_bytes: Optional[int] = None) -> LogSlice:
        """A slice (at most 64 KiB) of an attempt's stdout (`out`) or stderr
        (`err`) from `offset` on, fetched by the node from the worker that
        ran it; the latest attempt unless `attempt` is given. NotFound for an
        unknown execution or one that never ran."""
        if stream not in ("out", "err"):
            raise ValueError("stream is 'out' or 'err'")
        return LogSlice.from_json(self._get(f"/executions/{_segment(exec_id)}/logs", {
            "stream": stream, "attempt": attempt, "offset": offset, "max_bytes": max_bytes}))

    def logs(self, exec_id: str, stream: str = "out", attempt: Optional[int] = None) -> str:
        """What the attempt has written to `stream` so far, whole."""
        parts = []
        offset = 0
        while True:
            piece = self.log_slice(exec_id, stream, attempt, offset)
            attempt = piece.attempt  # stay on the attempt first shown
            parts.append(piece.data)
            if piece.next_offset <= offset or piece.next_offset >= piece.size:
                return "".join(parts)
            offset = piece.next_offset

    def follow_logs(self, exec_id: str, stream: str = "out", attempt: Optional[int] = None, *,
                    poll_interval: float = 0.5,
                    timeout: Optional[float] = None) -> Iterator[str]:
        """Yields the attempt's output as it is written, until the attempt has
        ended and all of it was read (as `apollo11 logs --follow`). An
        execution that has not started yet is waited for. The latest attempt
        when it starts following, unless `attempt` is given; a retry after
        that is not followed (follow the execution again for it). WaitTimeout
        after `timeout` seconds (None: no limit)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        offset = 0
        while True:
            try:
                piece = self.log_slice(exec_id, stream, attempt, offset)
            except errors.NotFound:
                execution = self.execution(exec_id)  # NotFound: no such execution
                if execution.attempt > 0:
                    raise
                if execution.ended:
                    return  # it ended without running (skipped, canceled)
                piece = None  # not started yet
            if piece is not None:
                attempt = piece.attempt
                if piece.next_offset > offset:
                    if piece.data:
                        yield piece.data
                    offset = piece.next_offset
                if offset < piece.size:
                    continue  # more already written: the next slice now
                if not piece.more_may_come:
                    return
            if deadline is not None and time.monotonic() >= deadline:
                raise errors.WaitTimeout(f"{exec_id} still writes after {timeout} s")
            time.sleep(poll_interval)

    # -- the cluster ------------------------------------------------------

    def workers(self) -> List[Worker]:
        """The workers connected to the coordinator."""
        return [Worker.from_json(w) for w in self._get("/workers")]

    def whoami(self) -> Dict[str, Any]:
        """Who the node takes the caller for: name, roles, `via`, `may`."""
        return self._get("/whoami")

    def node(self) -> Dict[str, Any]:
        """The node's role, coordinator epoch and whether it takes changes."""
        return self._get("/node")
