"""BatchFuture: the one future of a ``send_many`` call.

The records of one call land in many ProducerBatches (several partitions, several batches each).
Each ProducerBatch keeps *segments* of the call, ``(future, order, start, end, first_rel_offset)``:
the records ``order[start:end]`` of the call sit at relative offsets ``first_rel_offset...`` of that
batch. When the batch completes it calls :meth:`BatchFuture.complete_segment` once per segment, and
the offsets are filled with one numpy operation per segment, not one Python call per record.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np

from cproducer.errors import KafkaTimeoutError
from cproducer.producer.send_many import fill_segment

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


class BatchFuture:
    def __init__(self, topic: str, count: int) -> None:
        self.topic = topic
        self.count = count
        self.partitions = np.full(count, -1, dtype=np.int32)
        self.offsets = np.full(count, -1, dtype=np.int64)
        self.errors: Dict[int, BaseException] = {}
        self._remaining = count
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._callbacks: List[Tuple[Callable[..., Any], Tuple[Any, ...]]] = []
        self._result: Optional[BatchResult] = None
        if count == 0:
            self._finish()

    # ------------------------------------------------------------------ completion (Sender thread)
    def complete_segment(
        self,
        order: Optional[np.ndarray],
        start: int,
        end: int,
        partition: int,
        base_offset: int,
        first_rel_offset: int,
        error: Optional[BaseException],
    ) -> None:
        n = end - start
        first = base_offset + first_rel_offset if error is None and base_offset >= 0 else -1
        with self._lock:
            fill_segment(self.partitions, self.offsets, order, start, end, partition, first)
            if error is not None:
                idx = range(start, end) if order is None else order[start:end].tolist()
                for i in idx:
                    self.errors[i] = error
            self._remaining -= n
            finished = self._remaining == 0
        if finished:
            self._finish()

    def fail_all(self, error: BaseException) -> None:
        """The call failed before its records were accepted (nothing was appended)."""
        with self._lock:
            for i in range(self.count):
                self.errors.setdefault(i, error)
            self._remaining = 0
        self._finish()

    def _finish(self) -> None:
        self._result = BatchResult(self.count, self.errors, self.partitions, self.offsets)
        self._done.set()
        with self._lock:
            callbacks, self._callbacks = self._callbacks, []
        for fn, args in callbacks:
            self._call(fn, args)

    def _call(self, fn: Callable[..., Any], args: Tuple[Any, ...]) -> None:
        try:
            fn(self._result, *args)
        except Exception:
            log.exception("error in a send_many callback")

    # ------------------------------------------------------------------ user side
    def done(self) -> bool:
        return self._done.is_set()

    is_done = property(done)

    def get(self, timeout: Optional[float] = None) -> BatchResult:
        if not self._done.wait(timeout):
            raise KafkaTimeoutError(
                f"send_many of {self.count} records not complete after {timeout} s"
            )
        assert self._result is not None
        return self._result

    def add_callback(self, fn: Callable[..., Any], *args: Any) -> BatchFuture:
        """``fn(result, *args)`` once every record completed (at once if already done)."""
        with self._lock:
            if not self._done.is_set():
                self._callbacks.append((fn, args))
                return self
        self._call(fn, args)
        return self
