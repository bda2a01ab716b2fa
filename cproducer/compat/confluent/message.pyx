# cython: freethreading_compatible=False
# Free-threaded Python: keeps the GIL. The report queue and the queue counters are shared by the
# producing, polling and I/O threads without a lock: the GIL makes each update atomic.
"""confluent-kafka's ``Message`` and the queue of delivery reports.

A produced message is a ``Message`` from ``produce()`` on: the record's completion callback in
cproducer *is* the message (one object per record, no closure), called once on the producer's
I/O thread with the record's metadata or error. It fills in partition, offset, timestamp, error
and latency and joins its ``DeliveryReports`` queue. ``poll()``/``flush()`` then run each
message's ``on_delivery(err, msg)`` in the caller's thread, as librdkafka does.

Accounting is librdkafka's: a message counts against ``queue.buffering.max.messages`` and
``queue.buffering.max.kbytes`` (its value's bytes) from ``produce()`` until its delivery report was
served, and ``len(producer)`` is that count.

``Message`` is not tracked by the cyclic garbage collector (``no_gc``): hundreds of thousands may
be in flight, and tracking them would make every full collection walk them all. A message
references its queue only until it completes and its callback only until it is served, so a
cycle through a message lasts no longer than librdkafka keeps its own reference to the callback.
"""

cimport cython
from posix.time cimport CLOCK_MONOTONIC, clock_gettime, timespec

from cproducer.producer.internals.producer_batch cimport ProducerBatch

import threading

from cproducer.compat.confluent.error import FAIL, KafkaError, from_exception

cdef enum:
    TIMESTAMP_NOT_AVAILABLE = 0
    TIMESTAMP_CREATE_TIME = 1
    TIMESTAMP_LOG_APPEND_TIME = 2
    PARTITION_UA = -1
    OFFSET_INVALID = -1001
    # Message.state
    PENDING = 0
    COMPLETED = 1


cdef inline long long _now_ns() noexcept nogil:
    cdef timespec ts
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return <long long>ts.tv_sec * 1000000000 + ts.tv_nsec


@cython.no_gc
@cython.final
cdef class Message:
    """A message: what ``on_delivery(err, msg)`` receives (confluent-kafka's ``Message``)."""

    def __init__(self, topic=None, partition=None, offset=None, key=None, value=None,
                 headers=None, error=None, timestamp=None, latency=None, leader_epoch=None):
        self._topic = topic
        self._partition = PARTITION_UA if partition is None else partition
        self._offset = OFFSET_INVALID if offset is None else offset
        self._key = key
        self._value = value
        self._headers = headers
        self._error = error
        if timestamp is None:
            self._tstype, self._timestamp = TIMESTAMP_NOT_AVAILABLE, 0
        else:
            self._tstype, self._timestamp = timestamp
        self._latency_us = -1 if latency is None else <long long>(latency * 1000000.0)
        self._leader_epoch = -1 if leader_epoch is None else leader_epoch
        self.state = COMPLETED

    def topic(self):
        return self._topic

    def partition(self):
        return None if self._partition == PARTITION_UA else self._partition

    def offset(self):
        return self._offset if self._offset >= 0 else None

    def key(self):
        return self._key

    def value(self):
        return self._value

    def headers(self):
        # as in confluent-kafka, a delivery report does not carry the produced headers
        return self._headers

    def error(self):
        return self._error

    def timestamp(self):
        return (self._tstype, self._timestamp)

    def latency(self):
        """Seconds from produce() to the delivery report (None when unknown)."""
        return None if self._latency_us < 0 else self._latency_us / 1000000.0

    def leader_epoch(self):
        return None if self._leader_epoch < 0 else self._leader_epoch

    def set_headers(self, headers):
        self._headers = headers

    def set_key(self, key):
        self._key = key

    def set_value(self, value):
        self._value = value

    def set_error(self, error):
        self._error = error

    def __len__(self):
        return 0 if self._value is None else len(self._value)

    def __repr__(self):
        return (f"<Message topic={self._topic!r} partition={self.partition()} "
                f"offset={self.offset()} error={self._error!r}>")

    def __call__(self, metadata, exc):
        """The record's completion (cproducer's callback protocol), on the I/O thread."""
        cdef DeliveryReports reports
        cdef tuple md
        cdef long long offset, ts
        if self.state != PENDING:
            return  # purged already: the real outcome comes too late
        self.state = COMPLETED
        self._latency_us = (_now_ns() - self.started_ns) // 1000
        try:
            if exc is None:
                # cproducer's RecordMetadata is a tuple: (topic, partition, topic_partition,
                # offset, timestamp, ...)
                md = <tuple>metadata if isinstance(metadata, tuple) else tuple(metadata)
                offset = md[3]
                self._offset = offset if offset >= 0 else OFFSET_INVALID  # acks=0: none
                ts = md[4]
                if ts != self._timestamp:  # the broker set it: the topic uses LogAppendTime
                    self._timestamp = ts
                    self._tstype = TIMESTAMP_LOG_APPEND_TIME
            else:
                self._error = from_exception(exc)
        except Exception as failure:  # never lose the report
            self._error = KafkaError(FAIL, f"delivery report: {failure!r}")
        reports = self.reports
        self.reports = None
        reports.push(self)

    cdef void complete_with(self, error) except *:
        """Complete now with ``error`` (purge); a later real completion is ignored."""
        cdef DeliveryReports reports
        if self.state != PENDING:
            return
        self.state = COMPLETED
        self._latency_us = (_now_ns() - self.started_ns) // 1000
        self._error = error
        self._offset = OFFSET_INVALID
        reports = self.reports
        self.reports = None
        reports.push(self)


cdef Message new_message(DeliveryReports reports, topic, key, value, Py_ssize_t value_len,
                         int partition, long long timestamp, callback):
    cdef Message m = Message.__new__(Message)
    m._topic = topic
    m._key = key
    m._value = value
    m._partition = partition
    m._offset = OFFSET_INVALID
    m._timestamp = timestamp
    m._tstype = TIMESTAMP_CREATE_TIME
    m._latency_us = -1
    m._leader_epoch = -1
    m.callback = callback
    m.reports = reports
    m.value_len = value_len
    m.started_ns = _now_ns()
    m.state = PENDING
    return m


@cython.final
cdef class DeliveryReports:
    """Completed messages waiting for ``poll()``/``flush()``, and the other events (errors,
    statistics, logs) the facade serves there.

    The I/O thread appends; the caller's thread takes the whole list at once and serves it. Both
    run with the GIL held and call no Python code between reading and writing the list, so no
    lock is needed. A caller that waits sets ``waiting``; the next push then sets the event.
    """

    def __cinit__(self):
        self.ready = []
        self.events = []
        self.count = 0
        self.size = 0
        self.waiting = False
        self.event = threading.Event()
        self.only_errors = False
        self.failed = 0

    cdef void push(self, Message m) except *:
        if m._error is not None:
            self.failed += 1  # librdkafka's txn_dr_fails: a transaction with one cannot commit
        self.ready.append(m)
        if self.waiting:
            self.waiting = False
            self.event.set()

    def push_event(self, fn, arg):
        """Queue ``fn(arg)`` to run in the next poll() (any thread)."""
        self.events.append((fn, arg))
        if self.waiting:
            self.waiting = False
            self.event.set()

    def complete_with(self, Message m, error):
        m.complete_with(error)

    cdef bint reserve(self, Py_ssize_t value_len, long long max_count, long long max_size) noexcept:
        # librdkafka's rd_kafka_curr_msgs_add without blocking: all or nothing
        if (max_count > 0 and self.count + 1 > max_count) or self.size + value_len > max_size:
            return False
        self.count += 1
        self.size += value_len
        return True

    cdef void release(self, Py_ssize_t value_len) noexcept:
        self.count -= 1
        self.size -= value_len

    def pending(self):
        """Whether anything waits to be served."""
        return bool(self.ready) or bool(self.events)

    def wait(self, double timeout_s):
        """Block until something is queued or ``timeout_s`` passed; True if something is."""
        if self.ready or self.events:
            return True
        if timeout_s <= 0:
            return False
        self.event.clear()
        self.waiting = True
        if self.ready or self.events:
            self.waiting = False
            return True
        self.event.wait(timeout_s)
        self.waiting = False
        return bool(self.ready) or bool(self.events)

    def serve(self):
        """Run the queued events and delivery callbacks in this thread; how many were served.

        If a callback raises, the messages after it stay queued (in order) for the next call
        and the exception propagates, as confluent-kafka's poll() does."""
        cdef list items
        cdef Message m
        cdef Py_ssize_t i, n
        cdef long long served = 0
        cdef bint only_errors = self.only_errors
        if self.events:
            events = self.events
            self.events = []
            for i in range(len(events)):
                fn, arg = events[i]
                served += 1
                try:
                    fn(arg)
                except BaseException:
                    self.events = events[i + 1:] + self.events
                    raise
        items = self.ready
        if not items:
            return served
        self.ready = []
        n = len(items)
        for i in range(n):
            m = <Message>items[i]
            self.count -= 1
            self.size -= m.value_len
            cb = m.callback
            m.callback = None
            served += 1
            if cb is not None and (m._error is not None or not only_errors):
                try:
                    cb(m._error, m)
                except BaseException:
                    self.ready = items[i + 1:] + self.ready
                    raise
        return served

    def drop(self):
        """Forget every queued report without serving it (the producer is gone)."""
        cdef Message m
        for m in self.ready:
            m.callback = None
        self.ready = []
        self.events = []


def purge_in_flight(batches, error):
    """Report every message of the drained (sent, not yet answered) ``batches`` now with
    ``error``; the batches themselves complete on the wire as usual, which keeps the
    producer's sequence numbers and buffers right, and their outcome is then ignored."""
    cdef ProducerBatch b
    cdef object fn
    for batch in batches:
        b = <ProducerBatch?>batch
        if not b.builder.is_closed:
            continue  # still in the queue
        for fn in list(b.thunks):
            if type(fn) is Message:
                (<Message>fn).complete_with(error)
