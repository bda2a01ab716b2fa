"""Delivery results from the engine's I/O thread to the event loop, a batch at a time.

The engine completes a record on its Sender thread by calling the record's callback. Here the
callback is the record's own asyncio future (``DeliveryFuture.__call__``): the one object a
record needs anyway, so no closure or partial is made per record (those live until the batch is
acknowledged and cost the cyclic GC, see the README). The call only queues ``(future, metadata,
error)`` on the producer's ``LoopCompletions`` and, when no hand-over is pending, schedules one
``loop.call_soon_threadsafe(drain)``: a batch of N records completing together costs one wake-up
of the loop, not N. ``drain`` then resolves every queued future on the loop's thread, the only
thread allowed to touch them.

Ordering argument for the "one pending hand-over" flag: ``drain`` clears the flag *before* it
empties the queue, and a completing thread appends *before* it reads the flag. So an item either
is seen by a drain that is already running, or its thread sees the flag clear and schedules a new
drain; an item is never left behind. Two threads racing on a clear flag schedule two drains; the
second finds an empty queue.
"""

from __future__ import annotations

import asyncio
import collections
import logging
from typing import Any, Callable, Deque, Optional, Tuple

from cproducer.aio.errors import translate
from cproducer.aio.structs import RecordMetadata
from cproducer.cluster import TopicPartition

log = logging.getLogger("cproducer.aio")


class LoopCompletions:
    """The queue of completed records of one producer and its hand-over to one event loop."""

    __slots__ = ("_call_soon_threadsafe", "_queue", "_scheduled", "acks", "handovers")

    def __init__(self, loop: asyncio.AbstractEventLoop, acks: int) -> None:
        self._call_soon_threadsafe = loop.call_soon_threadsafe
        self._queue: Deque[Tuple[asyncio.Future, Any, Optional[BaseException]]] = (
            collections.deque()
        )
        self._scheduled = False
        #: acks=0: an awaited send gives None (there is no offset), as in aiokafka
        self.acks = acks
        #: how many times the loop was woken up for completions (tests, benchmarks)
        self.handovers = 0

    def push(self, future: asyncio.Future, result: Any, error: Optional[BaseException]) -> None:
        """Queue one completion (any thread)."""
        self._queue.append((future, result, error))
        if not self._scheduled:
            self._scheduled = True
            try:
                self._call_soon_threadsafe(self.drain)
            except RuntimeError:  # the loop is closed: nobody is left to await the future
                self._scheduled = False

    def drain(self) -> None:
        """Resolve every queued future (on the loop's thread)."""
        self._scheduled = False
        self.handovers += 1
        queue = self._queue
        popleft = queue.popleft
        no_ack = self.acks == 0
        for _ in range(len(queue)):
            future, md, error = popleft()
            if future.done():  # cancelled by its awaiter: the record is still sent
                continue
            if type(future) is not DeliveryFuture:
                future.resolve(md, error)  # type: ignore[attr-defined]
            elif error is not None:
                future.set_exception(translate(error))
            elif no_ack:
                future.set_result(None)
            else:
                topic = md.topic
                partition = md.partition
                future.set_result(
                    RecordMetadata(
                        topic,
                        partition,
                        TopicPartition(topic, partition),
                        md.offset,
                        md.timestamp,
                        0,
                        None,
                    )
                )


class DeliveryFuture(asyncio.Future):
    """The future an awaited ``send`` returns, and the engine's callback for its record."""

    __slots__ = ("_completions",)
    _completions: LoopCompletions

    def __call__(self, metadata: Any, error: Optional[BaseException]) -> None:
        # on the engine's Sender thread (or whichever thread completes the record)
        self._completions.push(self, metadata, error)


class BatchDeliveryFuture(asyncio.Future):
    """The future of ``send_batch``: resolved from the engine's ``BatchResult`` of the records
    (``to_metadata(result)`` gives its value, or the exception it fails with)."""

    __slots__ = ("_completions", "_to_metadata")
    _completions: LoopCompletions
    _to_metadata: Callable[[Any], Any]

    def __call__(self, result: Any) -> None:
        # the engine's BatchFuture callback, on the thread that completed the last record
        self._completions.push(self, result, None)

    def resolve(self, result: Any, error: Optional[BaseException]) -> None:
        value = translate(error) if error is not None else self._to_metadata(result)
        if isinstance(value, BaseException):  # a record of the batch failed: the batch fails
            self.set_exception(value)
        else:
            self.set_result(value)


def new_batch_future(
    loop: asyncio.AbstractEventLoop,
    completions: LoopCompletions,
    to_metadata: Callable[[Any], Any],
) -> Any:
    future = BatchDeliveryFuture(loop=loop)
    future._completions = completions
    future._to_metadata = to_metadata
    return future
