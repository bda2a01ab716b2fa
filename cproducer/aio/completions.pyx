"""Delivery results from the engine's I/O thread to the event loop, a batch at a time.

The engine completes a record on its Sender thread by calling the record's callback. Here the
callback is the record's own asyncio future (``DeliveryFuture.__call__``): the one object a
record needs anyway, so no closure or partial is made per record (those live until the batch is
acknowledged and cost the cyclic GC, see the README). The call only keeps the result on the
future and queues the future on the producer's ``LoopCompletions`` and, when no hand-over is
pending, schedules one
``loop.call_soon_threadsafe(drain)``: a batch of N records completing together costs one wake-up
of the loop, not N. ``drain`` then resolves every queued future on the loop's thread, the only
thread allowed to touch them.

Why no item is left behind: ``drain`` clears the flag *before* it takes the queue, and a
completing thread appends *before* it reads the flag. So an item is either in the list a drain
takes, or its thread finds the flag clear and schedules a new drain. Two threads racing on a
clear flag schedule two drains; the second finds an empty list. Taking the list is one swap
under the GIL (no Python code runs between reading and replacing it).
"""

import asyncio

from cproducer.aio.errors import translate
from cproducer.aio.structs import RecordMetadata
from cproducer.cluster import TopicPartition

cdef extern from "Python.h":
    void PyObject_GC_UnTrack(void *op)

cdef object _tuple_new = tuple.__new__


cdef inline object _untracked(object t):
    # A tuple of str, int, None and such tuples cannot be part of a reference cycle: out of the
    # GC's lists it is never walked (one RecordMetadata lives per record until its awaiter drops
    # it). The GC itself untracks such tuples, but only once a collection walked them.
    PyObject_GC_UnTrack(<void*>t)
    return t


cdef class LoopCompletions:
    """The queue of completed records of one producer and its hand-over to one event loop."""

    cdef object _call_soon_threadsafe
    cdef list _queue
    cdef bint _scheduled
    cdef dict _topic_partitions  # topic -> [TopicPartition by partition]: made once, not per record
    #: acks=0: an awaited send gives None (there is no offset), as in aiokafka
    cdef readonly int acks
    #: how many times the loop was woken up for completions (tests, benchmarks)
    cdef public long long handovers

    def __init__(self, loop, int acks):
        self._call_soon_threadsafe = loop.call_soon_threadsafe
        self._queue = []
        self._scheduled = False
        self._topic_partitions = {}
        self.acks = acks
        self.handovers = 0

    cdef int push(self, object future) except -1:
        """Queue one completed future (any thread)."""
        self._queue.append(future)
        if not self._scheduled:
            self._scheduled = True
            try:
                self._call_soon_threadsafe(self.drain)
            except RuntimeError:  # the loop is closed: nobody is left to await the futures
                self._scheduled = False
        return 0

    def drain(self):
        """Resolve every queued future (on the loop's thread)."""
        cdef list items
        self._scheduled = False
        self.handovers += 1
        items = self._queue
        self._queue = []
        for future in items:
            result = future._engine_result
            future._engine_result = None
            if future.done():  # cancelled by its awaiter: the record is still sent
                continue
            if type(future) is not DeliveryFuture:
                future.resolve(result)
            elif isinstance(result, BaseException):
                future.set_exception(translate(result))
            elif self.acks == 0:
                future.set_result(None)
            else:
                future.set_result(self._record_metadata(result))

    cdef object _record_metadata(self, object md):
        # aiokafka's RecordMetadata named tuple, made without its Python-level __new__
        cdef str topic = md.topic
        cdef object partition = md.partition
        cdef list tps = self._topic_partitions.get(topic)
        cdef Py_ssize_t p = partition
        if tps is None:
            tps = self._topic_partitions[topic] = []
        while len(tps) <= p:
            tps.append(_untracked(_tuple_new(TopicPartition, (topic, len(tps)))))
        return _untracked(_tuple_new(
            RecordMetadata, (topic, partition, tps[p], md.offset, md.timestamp, 0, None)
        ))


class DeliveryFuture(asyncio.Future):
    """The future an awaited ``send`` returns, and the engine's callback for its record."""

    __slots__ = ("_completions", "_engine_result")

    def __call__(self, metadata, error):
        # on the engine's Sender thread (or whichever thread completes the record)
        self._engine_result = metadata if error is None else error
        (<LoopCompletions>self._completions).push(self)


class BatchDeliveryFuture(asyncio.Future):
    """The future of ``send_batch``, and the callback of the engine's ``BatchFuture``:
    ``to_metadata(batch_result)`` gives its value, or the exception it fails with."""

    __slots__ = ("_completions", "_engine_result", "_to_metadata")

    def __call__(self, result):
        self._engine_result = result
        (<LoopCompletions>self._completions).push(self)

    def resolve(self, result):
        value = translate(result) if isinstance(result, BaseException) else self._to_metadata(result)
        if isinstance(value, BaseException):  # a record of the batch failed: the batch fails
            self.set_exception(value)
        else:
            self.set_result(value)


def new_delivery_future(LoopCompletions completions, loop):
    """A ``DeliveryFuture`` of ``loop``, completed through ``completions``."""
    future = DeliveryFuture(loop=loop)
    future._completions = completions
    return future


def new_batch_future(LoopCompletions completions, loop, to_metadata):
    future = BatchDeliveryFuture(loop=loop)
    future._completions = completions
    future._to_metadata = to_metadata
    return future
