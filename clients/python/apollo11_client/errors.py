"""What the client raises.

Every refusal the node's HTTP API answers (a status of 300 or more) is an
ApiError carrying the status, the node's sentence (`{"error": "..."}`) and the
request id the node gave the request (X-Request-Id, which its logs and audit
trail name). The subclasses let callers catch the cases they handle.
"""

from typing import Optional


class Apollo11Error(Exception):
    """The base of everything this package raises on purpose."""


class TransportError(Apollo11Error):
    """The node gave no HTTP answer: refused connection, timeout, bad TLS."""


class WaitTimeout(Apollo11Error, TimeoutError):
    """Client.wait gave up before the run ended; `run` is its last status."""

    def __init__(self, message: str, run=None):
        super().__init__(message)
        self.run = run


class ApiError(Apollo11Error):
    """The node answered with an error status.

    `status` is the HTTP status, `message` the node's sentence, `request_id`
    the node's X-Request-Id for the request (None when it sent none) and
    `body` the answer's text as received.
    """

    def __init__(self, status: int, message: str, request_id: Optional[str] = None,
                 body: str = ""):
        super().__init__(f"HTTP {status}: {message}" +
                         (f" (request {request_id})" if request_id else ""))
        self.status = status
        self.message = message
        self.request_id = request_id
        self.body = body


class BadRequest(ApiError):
    """400: the request does not hold (an undeclared param, a pipeline that
    does not validate, a run not ended yet for a rerun, a bad filter)."""


class Unauthorized(ApiError):
    """401: the token matches no principal of the node (or none was sent)."""


class Forbidden(ApiError):
    """403: the principal's role does not allow the route, or the node has no
    tokens at all so nobody may change anything."""


class NotFound(ApiError):
    """404: no such run, execution, pipeline, version, task or path."""


class Conflict(ApiError):
    """409: the run has already finished, the pipeline is paused, or an
    idempotency key was used before for another request."""


class NotLeader(ApiError):
    """421: this coordinator is a standby; ask the leader."""


class RateLimited(ApiError):
    """429: too many changing requests; `retry_after` is the seconds the node
    asks to wait (None when it did not say)."""

    def __init__(self, status: int, message: str, request_id: Optional[str] = None,
                 body: str = "", retry_after: Optional[float] = None):
        super().__init__(status, message, request_id, body)
        self.retry_after = retry_after


class Unavailable(ApiError):
    """503: the coordinator did not answer the node's HTTP server in time, the
    node is not ready, or it has too many connections from this address."""


_BY_STATUS = {400: BadRequest, 401: Unauthorized, 403: Forbidden, 404: NotFound,
              409: Conflict, 421: NotLeader, 429: RateLimited, 503: Unavailable}


def error_for(status: int, message: str, request_id: Optional[str], body: str,
              retry_after: Optional[str] = None) -> ApiError:
    """The ApiError (subclass) for an answer of `status`."""
    cls = _BY_STATUS.get(status, ApiError)
    if cls is RateLimited:
        seconds = None
        if retry_after:
            try:
                seconds = float(retry_after)
            except ValueError:
                seconds = None  # an HTTP date: rare from this server, ignored
        return RateLimited(status, message, request_id, body, seconds)
    return cls(status, message, request_id, body)
