"""What a write to the API server raises when it is refused, apart from the client libraries: the extender's
coordinator catches it without importing aiohttp or the official client, and its in-memory writer raises it too."""

from __future__ import annotations

__all__ = ["WriteError"]


class WriteError(Exception):
    """A write the API server refused. The message is shown to users: kube-scheduler copies a bind error into the
    pod's ``FailedScheduling`` event. ``status`` is the API server's HTTP status when it answered (404: the object
    is gone; 409: a conflict, e.g. the pod was re-created or bound meanwhile), None when it did not."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status
