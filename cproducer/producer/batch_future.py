"""BatchFuture: the one future of a ``send_many`` call.

The records of one call land in many ProducerBatches (several partitions, several batches each).
Each ProducerBatch keeps *segments* of the call, ``(future, order, start, end, first_rel_offset)``:
the records ``order[start:end]`` of the call sit at relative offsets ``first_rel_offset...`` of that
batch. When the batch completes it calls :meth:`BatchFuture.complete_segment` once per segment:
one C call (``SendManyCompletion`` in ``send_many.pyx``) fills the segment's partitions and
offsets, not a Python call per record.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np

from cproducer.errors import KafkaTimeoutError
from cproducer.producer.send_many import SendManyCompletion

log = logging.getLogger("cproducer.producer.batch_future")


@dataclass(frozen=True)
class BatchResult:
    """What a ``send_many`` call delivered.

    ``partitions[i]`` / ``offsets[i]`` are record ``i``'s partition and offset (offset -1 when it
    failed or with acks=0); ``errors`` maps the index of every failed record to its exception.
    """

    count: int
    errors: Dict[int, BaseException]
    partitions: np.ndarray
    offsets: np.ndarray

    @property
    def delivered(self) -> int:
        return self.count - len(self.errors)


class BatchFuture(SendManyCompletion):
    """The future of a ``send_many`` call: ``get()`` gives its :class:`BatchResult` once every
    record completed. ``partitions``, ``offsets``, ``errors`` and ``count`` (each record's
    outcome, filled as its batch completes) and ``complete_segment``/``fail_all`` come from
    ``SendManyCompletion`` (``send_many.pyx``)."""

    def __init__(self, topic: str, count: int) -> None:
        self.topic = topic
        self._lock = threading.Lock()
        # made by the first get() that has to wait: most calls complete before anyone waits
        self._event: Optional[threading.Event] = None
        self._callbacks: List[Tuple[Callable[..., Any], Tuple[Any, ...]]] = []
        self._result: Optional[BatchResult] = None
        super().__init__(count)  # with count 0: finished at once

    # ------------------------------------------------------------------ completion (Sender thread)
    def _finish(self) -> None:
        result = BatchResult(self.count, self.errors, self.partitions, self.offsets)
        with self._lock:
            self._result = result
            event = self._event
            callbacks, self._callbacks = self._callbacks, []
        if event is not None:
            event.set()
        for fn, args in callbacks:
            self._call(fn, args)

    def _call(self, fn: Callable[..., Any], args: Tuple[Any, ...]) -> None:
        try:
            fn(self._result, *args)
        except Exception:
            log.exception("error in a send_many callback")

    # ------------------------------------------------------------------ user side
    def done(self) -> bool:
        return self._result is not None

    is_done = property(done)

    def get(self, timeout: Optional[float] = None) -> BatchResult:
        result = self._result
        if result is None:
            with self._lock:
                if self._result is None and self._event is None:
                    self._event = threading.Event()
                event = self._event
            if event is not None and not event.wait(timeout):
                raise KafkaTimeoutError(
                    f"send_many of {self.count} records not complete after {timeout} s"
                )
            result = self._result
            assert result is not None
        return result

    def add_callback(self, fn: Callable[..., Any], *args: Any) -> BatchFuture:
        """``fn(result, *args)`` once every record completed (at once if already done)."""
        with self._lock:
            if self._result is None:
                self._callbacks.append((fn, args))
                return self
        self._call(fn, args)
        return self
