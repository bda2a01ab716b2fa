"""The connection failures a user must see: logged at WARNING, rate-limited per broker.

Java's ``NetworkClient`` warns "Connection to node -1 (localhost/127.0.0.1:9092) could not be
established" at every attempt, and librdkafka (2.x) prints its ``FAIL`` line at every attempt too.
A dead broker is retried every ``reconnect.backoff.ms`` (doubling up to
``reconnect.backoff.max.ms``): a line a second per broker for as long as it is down, which buries
everything else. So the first failure of a broker is said at once, a different error at once, and
the same error again at most every ``SUPPRESS_MS``, with the count of those not shown.

The last error of each address is kept until a connection to it is ready, so that a timeout
waiting for metadata can say why no broker answered.
"""

from __future__ import annotations

import logging
from typing import Dict, Optional, Tuple

SUPPRESS_MS = 30_000

log = logging.getLogger("cproducer.network.network_client")


class ConnectionFailures:
    """Per node: the last failure logged, when, and how many identical ones were not."""

    __slots__ = ("_last", "_errors")

    def __init__(self) -> None:
        # node id -> (message, logged at ms, suppressed since)
        self._last: Dict[int, Tuple[str, int, int]] = {}
        # "host:port" -> the last error connecting to it
        self._errors: Dict[str, str] = {}

    def failed(self, node_id: int, host: str, port: int, error: str, now_ms: int) -> None:
        address = f"{host}:{port}"
        self._errors[address] = error
        last = self._last.get(node_id)
        if last is not None and last[0] == error and now_ms - last[1] < SUPPRESS_MS:
            self._last[node_id] = (error, last[1], last[2] + 1)
            return
        suppressed = last[2] if last is not None and last[0] == error else 0
        more = f" ({suppressed} identical failure(s) since not shown)" if suppressed else ""
        log.warning(
            "connection to node %s (%s) could not be established: %s%s",
            node_id,
            address,
            error,
            more,
        )
        self._last[node_id] = (error, now_ms, 0)

    def ready(self, node_id: int, host: str, port: int) -> None:
        """A connection became ready: its address's error is over; a broker that had failed
        says it is back."""
        self._errors.pop(f"{host}:{port}", None)
        if self._last.pop(node_id, None) is not None:
            log.info("connection to node %s (%s:%s) established again", node_id, host, port)

    def last_error(self, host: str, port: int) -> Optional[str]:
        return self._errors.get(f"{host}:{port}")

    def errors(self) -> Dict[str, str]:
        """``host:port`` -> the last error connecting to it, for every address still failing."""
        return dict(self._errors)
