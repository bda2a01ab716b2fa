"""A request to a node and its answer, as the NetworkClient takes and returns them (Java's
``ClientRequest`` and ``ClientResponse``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional


@dataclass(eq=False)
class ClientRequest:
    node_id: int
    request: Any
    api_version: int = -1
    created_ms: int = 0
    callback: Optional[Callable[[Any], None]] = None
    request_timeout_ms: int = 30000
    expect_response: bool = True
    correlation_id: int = -1
    internal: bool = False
    size_bytes: int = 0  # the encoded frame's length, size prefix included (metrics)
    unsent: int = -1  # bytes of the frame not yet written (-1: none written so far)
    # the throttle times its node was given while it was in flight: they do not count toward
    # its timeout (Java's InFlightRequest.throttleTimeMs)
    throttle_ms: int = 0


@dataclass(eq=False)
class ClientResponse:
    request: ClientRequest
    destination: int
    received_ms: int
    response: Any = None
    disconnected: bool = False
    timed_out: bool = False
    error: Optional[BaseException] = None

    @property
    def api_key(self) -> int:
        return int(self.request.request.API_KEY)
