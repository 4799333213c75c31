"""The server's settings (`labkit serve`'s flags), checked when the app is made."""
from __future__ import annotations

from dataclasses import dataclass

from .schemas import MAX_BODY, ServeError


@dataclass(frozen=True)
class ServeConfig:
    model_id: str
    api_key: str | None = None
    max_batch: int = 16
    queue_size: int = 256
    timeout: float = 120.0             # seconds a request may take, queue + run
    max_body: int = MAX_BODY           # bytes
    batch_wait: float = 0.01           # seconds the worker waits for more compatible requests

    def __post_init__(self):
        for name in ("max_batch", "queue_size", "max_body"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a positive integer, got {v!r}")
        if not self.timeout > 0:
            raise ValueError(f"timeout must be > 0 seconds, got {self.timeout!r}")
        if not self.batch_wait >= 0:
            raise ValueError(f"batch_wait must be >= 0 seconds, got {self.batch_wait!r}")

    def timeout_error(self) -> ServeError:
        """504: the request took longer than `timeout` (queue + run) and was dropped."""
        return ServeError(504, f"timeout: no answer within the server's --timeout of {self.timeout:g} s (the request "
                               f"was dropped; the server is busy or the request is long)", code="timeout",
                          type="timeout_error")
