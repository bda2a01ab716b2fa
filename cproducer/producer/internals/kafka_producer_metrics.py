"""KafkaProducerMetrics: the time the application's threads spent blocked in the producer's calls
(Java's ``KafkaProducerMetrics``), in ``producer-metrics`` as cumulative nanosecond totals:
``flush-time-ns-total``, ``txn-init-time-ns-total``, ``txn-begin-time-ns-total``,
``txn-send-offsets-time-ns-total``, ``txn-commit-time-ns-total``, ``txn-abort-time-ns-total`` and
``metadata-wait-time-ns-total`` (a send waiting for its topic's metadata).

As Java's: flush counts its time however it ends; the transactional calls count only when they
return (a call that raised, e.g. on a timeout, is retried by the application and counted then).
Recorded once per call, never per record: a send whose topic is known does not wait and records
nothing.
"""

from __future__ import annotations

import threading
import time
from typing import Dict

#: the calls timed, each reported as ``<name>-time-ns-total``
CALLS = (
    "flush",
    "txn-init",
    "txn-begin",
    "txn-send-offsets",
    "txn-commit",
    "txn-abort",
    "metadata-wait",
)


class KafkaProducerMetrics:
    """Cumulative nanoseconds per blocking call; ``record`` from any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._totals: Dict[str, int] = dict.fromkeys(CALLS, 0)

    @staticmethod
    def start() -> int:
        """A start time for ``record_since``."""
        return time.monotonic_ns()

    def record_since(self, call: str, start_ns: int) -> None:
        """Add the time since ``start_ns`` (from ``start()``) to ``call``'s total."""
        elapsed = time.monotonic_ns() - start_ns
        with self._lock:
            self._totals[call] += elapsed

    def read(self, out: Dict[str, float]) -> None:
        """Put every ``<call>-time-ns-total`` into ``out`` (floats, as every metric value)."""
        with self._lock:
            totals = dict(self._totals)
        for call, total in totals.items():
            out[f"{call}-time-ns-total"] = float(total)
