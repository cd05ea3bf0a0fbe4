"""apollo11_client: a Python client of an Apollo-11 coordinator's HTTP API.

    from apollo11_client import Client
    client = Client("http://127.0.0.1:8011", token="...")
    run = client.wait(client.trigger("order.sync", {"day": "2026-11-29"}).run_id)

See clients/python/README.md.
"""

from .client import Client, __version__
from .errors import (ApiError, Apollo11Error, BadRequest, Conflict, Forbidden, NotFound,
                     NotLeader, RateLimited, TransportError, Unauthorized, Unavailable,
                     WaitTimeout)
from .models import (ENDED_STATES, RUN_STATES, Execution, LogSlice, PauseState, Pipeline,
                     PipelineVersion, Registration, Rerun, Run, RunsPage, RunSummary, Task,
                     Transition, Triggered, Worker)

__all__ = [
    "Client", "__version__",
    "Apollo11Error", "ApiError", "BadRequest", "Conflict", "Forbidden", "NotFound", "NotLeader",
    "RateLimited", "TransportError", "Unauthorized", "Unavailable", "WaitTimeout",
    "ENDED_STATES", "RUN_STATES", "Execution", "LogSlice", "PauseState", "Pipeline",
    "PipelineVersion", "Registration", "Rerun", "Run", "RunsPage", "RunSummary", "Task",
    "Transition", "Triggered", "Worker",
]
