# cython: freethreading_compatible=False
# Free-threaded Python: keeps the GIL. A result's fields are written by the I/O
# thread before ``completed`` and read after it without a lock; that ordering relies on the GIL.
"""What a producer gives back per record: RecordMetadata, and the futures behind it.

Java's ``ProduceRequestResult`` (one per batch, completed once with the base offset or an error),
``FutureRecordMetadata`` (one per record: a light reference into its batch's result, no
heavyweight future) and ``RecordMetadata``. The batch module makes them (``new_future``,
``new_record_metadata`` in the .pxd): a record's future points back at its ``ProducerBatch`` to
register callbacks and to follow the record when the batch is split.
"""

import threading
import time
from collections import namedtuple
from functools import partial

cimport cython

from cpython.object cimport PyObject, PyTypeObject
from cpython.ref cimport Py_DECREF, Py_INCREF, Py_REFCNT, Py_XDECREF


cdef extern from "Python.h":
    void Py_SET_TYPE(PyObject* ob, PyTypeObject* tp)
    # the raw forms: PyObject* in and out, references as the C API counts them
    PyObject* _PyTuple_New "PyTuple_New"(Py_ssize_t size)
    PyObject* _PyTuple_GET_ITEM "PyTuple_GET_ITEM"(PyObject* tup, Py_ssize_t i)
    void PyObject_GC_UnTrack(void* op)
    void _PyTuple_SET_ITEM "PyTuple_SET_ITEM"(PyObject* tup, Py_ssize_t i, PyObject* value)
    PyObject* PyLong_FromLong(long value)
    PyObject* PyLong_FromLongLong(long long value)

from cproducer.errors import IllegalStateError, KafkaTimeoutError


class RecordMetadata(
    namedtuple(
        "RecordMetadata",
        [
            "topic",
            "partition",
            "topic_partition",
            "offset",
            "timestamp",
            "checksum",
            "serialized_key_size",
            "serialized_value_size",
            "serialized_header_size",
        ],
    )
):
    """Where a record landed: kafka-python's namedtuple, field for field (``checksum`` is always
    None: RecordBatch v2 has no per-record CRC; the sizes are -1 for a null key or value, or no
    headers), plus Java's ``has_offset()``/``has_timestamp()``."""

    __slots__ = ()

    def has_offset(self):
        """False when the broker gave no offset (acks=0)."""
        return self.offset != -1

    def has_timestamp(self):
        return self.timestamp != -1


cdef PyTypeObject* tuple_layout_type(type cls) except NULL:
    if cls.__basicsize__ != tuple.__basicsize__ or cls.__itemsize__ != tuple.__itemsize__:
        raise ImportError(f"{cls.__name__} must keep tuple's layout (__slots__ = ())")
    return <PyTypeObject*>cls


cdef PyObject* as_named_tuple(PyObject* t, PyTypeObject* tp) noexcept:
    # (the GC would untrack such a tuple itself, but only after a collection walked it)
    PyObject_GC_UnTrack(t)
    # a heap type is owned by its instances: the reference subtype_dealloc gives back
    Py_INCREF(<object>tp)
    Py_SET_TYPE(t, tp)
    return t


# RecordMetadata tuples are built in C and given RecordMetadata's type (as_named_tuple): one
# allocation, no Python call (RecordMetadata._make costs ~5x as much).
cdef PyTypeObject* _RECORD_METADATA_TYPE = tuple_layout_type(RecordMetadata)

# the fields of a RecordMetadata tuple, by position
cdef enum:
    MD_TOPIC = 0
    MD_PARTITION = 1
    MD_TOPIC_PARTITION = 2
    MD_OFFSET = 3
    MD_TIMESTAMP = 4
    MD_CHECKSUM = 5
    MD_KEY_SIZE = 6
    MD_VALUE_SIZE = 7
    MD_HEADER_SIZE = 8
    MD_FIELDS = 9


cdef inline void _own(PyObject* tup, Py_ssize_t i, PyObject* value) noexcept:
    Py_INCREF(<object>value)  # the tuple's reference
    _PyTuple_SET_ITEM(tup, i, value)


cdef inline int _put(PyObject* tup, Py_ssize_t i, PyObject* value) except -1:
    # a new reference (NULL: the allocation failed) into an empty slot
    if value == NULL:
        raise MemoryError()
    _PyTuple_SET_ITEM(tup, i, value)
    return 0


cdef inline int _replace(PyObject* tup, Py_ssize_t i, PyObject* value) except -1:
    # a new reference over the slot's item, which is given back
    cdef PyObject* old
    if value == NULL:
        raise MemoryError()
    old = _PyTuple_GET_ITEM(tup, i)
    _PyTuple_SET_ITEM(tup, i, value)
    Py_XDECREF(old)
    return 0


cdef object new_record_metadata(str topic, int partition, object topic_partition,
                                long long base_offset, long long log_append_time, int rel,
                                long long create_ts, int key_size, int value_size,
                                int header_size):
    # raw C API: new references go straight into the tuple (no temporaries to count)
    cdef PyObject* md = _PyTuple_New(MD_FIELDS)
    if md == NULL:
        raise MemoryError()
    try:
        _own(md, MD_TOPIC, <PyObject*>topic)
        _own(md, MD_TOPIC_PARTITION, <PyObject*>topic_partition)
        _own(md, MD_CHECKSUM, <PyObject*>None)
        _put(md, MD_PARTITION, PyLong_FromLong(partition))
        _put(md, MD_OFFSET, PyLong_FromLongLong(record_offset(base_offset, rel)))
        _put(md, MD_TIMESTAMP, PyLong_FromLongLong(record_timestamp(log_append_time, create_ts)))
        _put(md, MD_KEY_SIZE, PyLong_FromLong(key_size))
        _put(md, MD_VALUE_SIZE, PyLong_FromLong(value_size))
        _put(md, MD_HEADER_SIZE, PyLong_FromLong(header_size))
    except BaseException:
        Py_DECREF(<object>md)  # still a plain tuple: its items go with it
        raise
    # a second reference: give back the creation one
    cdef object result = <object>as_named_tuple(md, _RECORD_METADATA_TYPE)
    Py_DECREF(result)
    return result


@cython.final
@cython.no_gc
cdef class RecordMetadataMaker:
    """The RecordMetadata of each record of one completed batch, in turn (``make``).

    A batch's records share their topic, partition and (mostly) timestamp and sizes, and a
    completion callback usually reads its metadata and drops it. So the last tuple made is kept:
    when nobody else holds it any more it is filled with the next record's fields and handed out
    again (what CPython's zip and enumerate do with their result tuples: nobody can see the
    change), else a new one is made from the fields that changed and the last one's others. Per
    record that is one new int (the offset) instead of a tuple and two ints."""

    def __dealloc__(self):
        if self._last != NULL:
            Py_DECREF(<object>self._last)
            self._last = NULL

    cdef object make(self, int rel, long long create_ts, int key_size, int value_size,
                     int header_size):
        """Record ``rel``'s RecordMetadata (its timestamp ``create_ts`` unless the batch has a
        log-append time)."""
        cdef long long offset = record_offset(self._base_offset, rel)
        cdef long long ts = record_timestamp(self._log_append_time, create_ts)
        cdef PyObject* md = self._last
        cdef PyObject* last = md
        cdef int i
        if md == NULL or Py_REFCNT(<object>md) != 1:
            md = _PyTuple_New(MD_FIELDS)
            if md == NULL:
                raise MemoryError()
            try:
                if last == NULL:
                    _own(md, MD_TOPIC, <PyObject*>self._topic)
                    _own(md, MD_TOPIC_PARTITION, <PyObject*>self._topic_partition)
                    _own(md, MD_CHECKSUM, <PyObject*>None)
                    _put(md, MD_PARTITION, PyLong_FromLong(self._partition))
                    _put(md, MD_OFFSET, PyLong_FromLongLong(offset))
                    _put(md, MD_TIMESTAMP, PyLong_FromLongLong(ts))
                    _put(md, MD_KEY_SIZE, PyLong_FromLong(key_size))
                    _put(md, MD_VALUE_SIZE, PyLong_FromLong(value_size))
                    _put(md, MD_HEADER_SIZE, PyLong_FromLong(header_size))
                else:
                    # the last one's items, then the ones that differ replaced below
                    for i in range(MD_FIELDS):
                        _own(md, i, _PyTuple_GET_ITEM(last, i))
            except BaseException:
                Py_DECREF(<object>md)  # still a plain tuple: its items go with it
                raise
            md = as_named_tuple(md, _RECORD_METADATA_TYPE)
            self._last = md  # the creation reference
            if last == NULL:
                self._offset, self._timestamp = offset, ts
                self._key_size, self._value_size = key_size, value_size
                self._header_size = header_size
                return <object>md
            Py_DECREF(<object>last)
        # md is ours alone (refcount 1: nobody else can see it change), its fields the last
        # record's: replace the ones that differ
        if offset != self._offset:
            _replace(md, MD_OFFSET, PyLong_FromLongLong(offset))
            self._offset = offset
        if ts != self._timestamp:
            _replace(md, MD_TIMESTAMP, PyLong_FromLongLong(ts))
            self._timestamp = ts
        if key_size != self._key_size:
            _replace(md, MD_KEY_SIZE, PyLong_FromLong(key_size))
            self._key_size = key_size
        if value_size != self._value_size:
            _replace(md, MD_VALUE_SIZE, PyLong_FromLong(value_size))
            self._value_size = value_size
        if header_size != self._header_size:
            _replace(md, MD_HEADER_SIZE, PyLong_FromLong(header_size))
            self._header_size = header_size
        return <object>md


cdef RecordMetadataMaker new_record_metadata_maker(str topic, int partition,
                                                   object topic_partition,
                                                   long long base_offset,
                                                   long long log_append_time):
    cdef RecordMetadataMaker maker = RecordMetadataMaker.__new__(RecordMetadataMaker)
    maker._topic = topic
    maker._partition = partition
    maker._topic_partition = topic_partition
    maker._base_offset = base_offset
    maker._log_append_time = log_append_time
    return maker


# Record callbacks completed in C (see the .pxd): the registered types, by exact type, and their
# functions. Registered at import by the modules that define them; read by every batch.
cdef enum:
    _MAX_COMPLETION_TYPES = 4
cdef PyTypeObject* _completion_types[_MAX_COMPLETION_TYPES]
cdef RecordCompletedFn _completion_fns[_MAX_COMPLETION_TYPES]
cdef int _completion_count = 0


cdef int register_record_completion(type callback_type, RecordCompletedFn fn) except -1:
    global _completion_count
    cdef int i
    for i in range(_completion_count):
        if _completion_types[i] == <PyTypeObject*>callback_type:
            _completion_fns[i] = fn
            return 0
    if _completion_count == _MAX_COMPLETION_TYPES:
        raise RuntimeError("too many record completion types registered")
    Py_INCREF(callback_type)  # the registration holds its type
    _completion_types[_completion_count] = <PyTypeObject*>callback_type
    _completion_fns[_completion_count] = fn
    _completion_count += 1
    return 0


cdef RecordCompletedFn record_completion_of(object callback) noexcept:
    cdef PyTypeObject* t = (<PyObject*>callback).ob_type
    cdef int i
    for i in range(_completion_count):
        if _completion_types[i] == t:
            return _completion_fns[i]
    return NULL


_event_lock = threading.Lock()


cdef class ProduceRequestResult:
    """Java's ProduceRequestResult: completed once for a whole batch (base offset and
    log-append time, or an error; per-record errors through an ``index -> exception``
    function, Java's ``recordExceptions``). ``done()`` wakes every waiter."""

    def __init__(self, topic_partition):
        self.topic_partition = topic_partition
        self.base_offset = -1
        self.log_append_time = -1
        self._error = None
        self._record_errors = None
        self._event = None  # made only when somebody waits before completion
        self._is_set = False
        self.completed = False

    def set(self, long long base_offset, long long log_append_time, error=None,
            record_errors=None):
        """The outcome, before ``done()``. ``error`` is the batch's exception (or None), or an
        ``index -> exception`` function; ``record_errors`` the per-record function."""
        if error is not None and not isinstance(error, BaseException):
            if not callable(error) or record_errors is not None:
                raise TypeError(
                    f"error must be an exception, an index -> exception function or None, "
                    f"got {type(error).__name__}"
                )
            record_errors, error = error, None
        if record_errors is not None and not callable(record_errors):
            raise TypeError(
                f"record_errors must be an index -> exception function or None, "
                f"got {type(record_errors).__name__}"
            )
        self.base_offset = base_offset
        self.log_append_time = log_append_time
        self._error = error
        self._record_errors = record_errors
        self._is_set = True

    def done(self):
        """Mark the result completed and wake the waiters (exactly once)."""
        with _event_lock:
            if not self._is_set:
                raise IllegalStateError("set() must be called before done()")
            if self.completed:
                raise IllegalStateError(
                    f"the result of this batch of {self.topic_partition} was already completed"
                )
            self.completed = True
            event = self._event
        if event is not None:
            event.set()

    def wait(self, timeout=None):
        """Block until done (True) or ``timeout`` seconds passed (False)."""
        if self.completed:
            return True
        with _event_lock:
            if self.completed:
                return True
            if self._event is None:
                self._event = threading.Event()
            event = self._event
        return event.wait(timeout)

    @property
    def error(self):
        """The batch's exception (None on success)."""
        if self._error is not None:
            return self._error
        if self._record_errors is not None:
            return self._record_errors(0)
        return None

    cpdef object error_for(self, int relative_offset):
        """The exception of record ``relative_offset`` (None when it succeeded)."""
        cdef object exc
        if self._record_errors is not None:
            exc = self._record_errors(relative_offset)
            return exc if exc is not None else self._error
        return self._error


cdef object _bind(object fn, tuple args, dict kwargs):
    # kafka-python's callbacks take the extra arguments first: functools.partial(fn, *args)
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    return partial(fn, *args, **kwargs) if args or kwargs else fn


@cython.no_gc
@cython.freelist(64)
cdef class FutureRecordMetadata:
    """One record's future: a reference into its batch's result, no heavyweight future.

    kafka-python's API: ``get``, ``is_done``, ``succeeded``, ``failed``, ``retriable``,
    ``exception``, ``value``, ``add_callback(fn, *args)`` (``fn(*args, metadata)``),
    ``add_errback(fn, *args)`` (``fn(*args, exception)``), ``add_both``."""

    cdef void _follow(self) except *:
        # a split batch forwards each of its records to the batch it was re-appended to
        # (Java chains the old future to the new batch's one)
        cdef tuple where
        while self._result.forward is not None:
            where = self._result.forward[self._rel]
            self._batch = where[0]
            self._result = <ProduceRequestResult>self._batch.result
            self._rel = where[1]

    @property
    def is_done(self):
        self._follow()
        return self._result.completed

    @property
    def topic_partition(self):
        return self._result.topic_partition

    @property
    def relative_offset(self):
        self._follow()
        return self._rel

    def done(self):
        return self.is_done

    cdef object _metadata(self):
        self._follow()
        cdef ProduceRequestResult r = self._result
        tp = r.topic_partition
        return new_record_metadata(tp[0], tp[1], tp, r.base_offset, r.log_append_time, self._rel,
                                   self._create_ts, self._key_size, self._value_size,
                                   self._header_size)

    cdef object _error(self):
        self._follow()
        return self._result.error_for(self._rel)

    def get(self, timeout=None):
        """The RecordMetadata once the batch is acknowledged; raises the record's error, or
        KafkaTimeoutError when ``timeout`` seconds pass first."""
        cdef ProduceRequestResult r
        if timeout is not None and not isinstance(timeout, (int, float)):
            raise TypeError(f"timeout must be a number of seconds or None, got "
                            f"{type(timeout).__name__}")
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            self._follow()
            r = self._result
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not r.wait(remaining):
                raise KafkaTimeoutError(
                    f"the record to {r.topic_partition} was not acknowledged within {timeout} s"
                )
            if r.forward is None:  # not moved to a split batch meanwhile
                break
        err = self._error()
        if err is not None:
            raise err
        return self._metadata()

    def succeeded(self):
        return self.is_done and self._error() is None

    def failed(self):
        return self.is_done and self._error() is not None

    @property
    def exception(self):
        return self._error() if self.is_done else None

    @property
    def value(self):
        if self.is_done and self._error() is None:
            return self._metadata()
        return None

    def retriable(self):
        """kafka-python's: done, and failed with a retriable error."""
        exc = self.exception
        return exc is not None and bool(getattr(exc, "retriable", False))

    def add_callback(self, fn, *args, **kwargs):
        """kafka-python's: ``fn(*args, metadata, **kwargs)`` once the record succeeded (at once
        if it already did)."""
        f = _bind(fn, args, kwargs)

        def on_completion(md, exc):
            if exc is None:
                f(md)
        self._batch.add_completion_callback(self, on_completion)
        return self

    def add_errback(self, fn, *args, **kwargs):
        """kafka-python's: ``fn(*args, exception, **kwargs)`` once the record failed (at once if
        it already did)."""
        f = _bind(fn, args, kwargs)

        def on_completion(md, exc):
            if exc is not None:
                f(exc)
        self._batch.add_completion_callback(self, on_completion)
        return self

    def add_both(self, fn, *args, **kwargs):
        """kafka-python's: ``fn(*args, metadata_or_exception, **kwargs)`` once the record
        completed either way."""
        f = _bind(fn, args, kwargs)

        def on_completion(md, exc):
            f(md if exc is None else exc)
        self._batch.add_completion_callback(self, on_completion)
        return self

    def __repr__(self):
        state = "pending"
        if self.is_done:
            state = "failed" if self._error() is not None else "succeeded"
        return f"<FutureRecordMetadata {self._result.topic_partition} {state}>"


cdef FutureRecordMetadata new_future(object batch, ProduceRequestResult result, int rel,
                                     long long create_ts, int key_size, int value_size,
                                     int header_size):
    cdef FutureRecordMetadata f = FutureRecordMetadata.__new__(FutureRecordMetadata)
    f._batch = batch
    f._result = result
    f._rel = rel
    f._create_ts = create_ts
    f._key_size = key_size
    f._value_size = value_size
    f._header_size = header_size
    return f
