# cython: freethreading_compatible=False
# Free-threaded Python: keeps the GIL. The completed-deliveries list is swapped, and the hand-over
# flag read and written, without a lock: one step each only because the GIL is held.
"""Delivery results from the engine's I/O thread to the event loop, a batch at a time.

The engine completes a record on its Sender thread by calling the record's callback. Here that
callback is a ``RecordDelivery``: a C object of three pointers (its future, its result, the
producer's ``LoopCompletions``), from a free list, outside the cyclic GC's lists, so a record in
flight costs the GC nothing (a closure or partial per record would be walked by every collection
until its batch is acknowledged, see the README). The call stores the result and queues the
delivery on the producer's ``LoopCompletions``; when no hand-over is pending it schedules one
``loop.call_soon_threadsafe(drain)``: a batch of N records completing together costs one wake-up
of the loop, not N. ``drain`` then resolves every queued future on the loop's thread, the only
thread allowed to touch them.

A record's future is a ``Future`` of this module: asyncio's Future protocol and semantics
(``asyncio.isfuture`` is True, tasks, ``gather``, ``wait``, ``shield``, ``wait_for`` and
``wrap_future`` take it as they take an ``asyncio.Future``), written in C here because a burst of
thousands of gathered futures spent most of the loop's time per record in ``asyncio.Future``'s
machinery: its constructor calls ``loop.get_debug()`` per future, and each done-callback
(``gather`` puts one on every future, a task one on the future it awaits) is scheduled through
``loop.call_soon``, a ``Handle`` made in Python and run by the loop's next iteration. A drain run
as a loop callback resolves its futures with the list it collects their done-callbacks into, and
runs them itself once they are all resolved, each in its context, an exception to the loop's
exception handler (as ``Handle`` runs them): the same callbacks, once each, on the loop's thread,
after their future is done, only without a Handle and a pass through the loop's ready queue each
(``_drain_batched``). Resolved anywhere else (``set_result`` by anyone, ``cancel``, a drain run
from a coroutine, a loop whose scheduling is watched: debug mode, uvloop, an overridden
``call_soon``) a future schedules its callbacks with ``loop.call_soon``, as asyncio's does.
``isinstance(future, asyncio.Future)`` is False. ``send_batch``'s futures stay ``asyncio.Future``
objects (one per call: nothing to gain), scheduled by the loop as usual.

A record's future is out of the GC's lists. Thousands are in flight at a time, and the GC walked
each one at every young collection until it moved it to the oldest generation, whose growth then
triggered full collections: a tenth of the CPU of a send loop went to walking them. A pending
future may be in a cycle (its callbacks lead to the task awaiting it, whose frame holds it), but
the record's delivery holds it until it resolves, so that cycle is never garbage before then. On
success the future drops its callbacks and holds its loop and its RecordMetadata (an untracked
tuple of str and int) only: nothing leads back to it, and it stays untracked. A future that
fails (its exception's traceback may lead back to it), that is cancelled, or that is given a
result by anyone but its delivery goes back into the GC's lists, as do the futures of deliveries
dropped because the loop is closed. (A future has no ``__dict__``: no cycle can be hung on it.)

While a send runs on the loop's thread, the loop is busy and no wake-up is needed: the send
path queues one drain with ``call_soon`` (``drain_on_loop``), which the loop runs before it next
waits, and while that drain is queued a completing thread only appends to the queue. This keeps
the I/O thread from writing to the loop's self-pipe in the middle of its work: that write gives
up the GIL, the busy loop thread takes it, and the I/O thread then waits for it up to the
interpreter's switch interval (5 ms) before it can go on with the next request.

Why no delivery is left behind: ``drain`` clears the flag *before* it takes the queue, and a
completing thread appends *before* it reads the flag. So a delivery is either in the list a
drain takes, or its thread finds the flag clear and schedules a new drain. The same holds for
the queued drain's flag (cleared before its drain takes the queue). Two threads racing on
a clear flag schedule two drains; the second finds an empty list. Taking the list is one swap
under the GIL (no Python code runs between reading and replacing it).
"""

import asyncio
import types
from asyncio import base_futures

cimport cython
from cpython.list cimport PyList_GET_ITEM
from cpython.object cimport PyTypeObject
from cpython.ref cimport PyObject, Py_INCREF, Py_DECREF
from cpython.tuple cimport PyTuple_New

from cproducer.producer.internals.produce_request_result cimport (
    as_named_tuple,
    register_record_completion,
    tuple_layout_type,
)

from cproducer.compat.aiokafka.errors import translate
from cproducer.compat.aiokafka.structs import RecordMetadata


cdef extern from "Python.h":
    void PyObject_GC_UnTrack(void *op)
    void PyObject_GC_Track(void *op)
    int PyObject_GC_IsTracked(object op)
    void PyTuple_SET_ITEM(object t, Py_ssize_t i, object item)  # steals a reference
    object PyLong_FromLongLong(long long value)
    object PyContext_CopyCurrent()

cdef object _AsyncioFuture = asyncio.Future
cdef object _CancelledError = asyncio.CancelledError
cdef object _InvalidStateError = asyncio.InvalidStateError
cdef object _future_repr_info = base_futures._future_repr_info


cdef inline void _track(object obj):
    if not PyObject_GC_IsTracked(obj):
        PyObject_GC_Track(<void*>obj)


cdef extern from *:
    """
    /* The am_send slot (Python 3.10+), which await uses: the iterator returns the future's
       result without raising a StopIteration. Before 3.10, __next__ does it the slow way. */
    #if PY_VERSION_HEX >= 0x030A0000
    static PyAsyncMethods cproducer_future_iter_async = {0, 0, 0, 0};
    static int cproducer_set_iter_am_send(PyTypeObject *t, int (*f)(PyObject *, PyObject *,
                                                                    PyObject **)) {
        if (t->tp_as_async == NULL) {
            if (t->tp_flags & Py_TPFLAGS_HEAPTYPE)
                t->tp_as_async = &((PyHeapTypeObject *)t)->as_async;
            else
                t->tp_as_async = &cproducer_future_iter_async;
        }
        t->tp_as_async->am_send = (sendfunc)f;
        PyType_Modified(t);
        return 0;
    }
    #else
    static int cproducer_set_iter_am_send(PyTypeObject *t, int (*f)(PyObject *, PyObject *,
                                                                    PyObject **)) {
        (void)t; (void)f;
        return 0;
    }
    #endif
    """
    ctypedef int (*iter_send_func)(PyObject*, PyObject*, PyObject**) except -1
    int cproducer_set_iter_am_send(type t, iter_send_func f) except -1


cdef enum:
    _PENDING = 0
    _CANCELLED = 1
    _FINISHED = 2

cdef tuple _STATE_NAMES = ("PENDING", "CANCELLED", "FINISHED")


@cython.final
@cython.auto_pickle(False)
cdef class Future:
    """A record's future: ``asyncio.Future``'s protocol and semantics (see the module's
    docstring), made by the producer; ``Future(loop=loop)`` makes one too.

    GC support (``tp_traverse``) is kept: a future holding done-callbacks (closures, a task's
    wake-up) can be part of a cycle, as can a failed one through its exception's traceback;
    asyncio.Future is GC-tracked for that reason. The record futures are taken out of the GC's
    lists while the module's docstring says it is safe, and put back otherwise."""

    def __init__(self, *, loop=None):
        self._loop = asyncio.get_event_loop() if loop is None else loop

    # asyncio.isfuture: a class attribute that is not None; a task sets it per instance
    @property
    def _asyncio_future_blocking(self):
        return self._blocking

    @_asyncio_future_blocking.setter
    def _asyncio_future_blocking(self, value):
        self._blocking = value

    @property
    def _state(self):
        return _STATE_NAMES[self._status]

    @property
    def _callbacks(self):
        return self._callback_list()

    @property
    def _source_traceback(self):
        return None

    @property
    def _log_traceback(self):
        return self._log_tb

    @_log_traceback.setter
    def _log_traceback(self, value):
        if value:
            raise ValueError("_log_traceback can only be set to False")
        self._log_tb = False

    def __class_getitem__(cls, item):
        return types.GenericAlias(cls, item)

    def __repr__(self):
        return f"<{type(self).__name__} {' '.join(_future_repr_info(self))}>"

    def __del__(self):
        # as asyncio.Future: an exception nobody retrieved goes to the loop's handler
        if not self._log_tb:
            return
        self._loop.call_exception_handler({
            "message": f"{type(self).__name__} exception was never retrieved",
            "exception": self._exception,
            "future": self,
        })

    def get_loop(self):
        return self._loop

    def done(self):
        return self._status != _PENDING

    def cancelled(self):
        return self._status == _CANCELLED

    def result(self):
        return self._get_result()

    cdef object _get_result(self):
        if self._status == _CANCELLED:
            raise self._make_cancelled_error()
        if self._status != _FINISHED:
            raise _InvalidStateError("Result is not ready.")
        self._log_tb = False
        if self._exception is not None:
            raise self._exception.with_traceback(self._exception_tb)
        return self._result

    def exception(self):
        if self._status == _CANCELLED:
            raise self._make_cancelled_error()
        if self._status != _FINISHED:
            raise _InvalidStateError("Exception is not set.")
        self._log_tb = False
        return self._exception

    def _make_cancelled_error(self):
        if self._cancel_message is None:
            return _CancelledError()
        return _CancelledError(self._cancel_message)

    def add_done_callback(self, fn, *, context=None):
        if self._status != _PENDING:
            self._loop.call_soon(fn, self, context=context)
            return
        if context is None:
            context = PyContext_CopyCurrent()
        if self._callback0 is None:
            # the first inline (gather and a task add one each), more in a list
            self._callback0 = fn
            self._context0 = context
        else:
            if self._more_callbacks is None:
                self._more_callbacks = []
            self._more_callbacks.append(fn)
            self._more_callbacks.append(context)

    def remove_done_callback(self, fn):
        cdef list kept = []
        cdef Py_ssize_t removed = 0
        for callback, context in self._callback_list():
            if callback == fn:
                removed += 1
            else:
                kept.append(callback)
                kept.append(context)
        if removed:
            self._callback0 = self._context0 = self._more_callbacks = None
            if kept:
                self._callback0 = kept[0]
                self._context0 = kept[1]
                if len(kept) > 2:
                    self._more_callbacks = kept[2:]
        return removed

    cdef list _callback_list(self):
        cdef list out = []
        cdef Py_ssize_t i
        if self._callback0 is not None:
            out.append((self._callback0, self._context0))
        if self._more_callbacks is not None:
            for i in range(0, len(self._more_callbacks), 2):
                out.append((self._more_callbacks[i], self._more_callbacks[i + 1]))
        return out

    def cancel(self, msg=None):
        self._log_tb = False
        if self._status != _PENDING:
            return False
        self._status = _CANCELLED
        self._cancel_message = msg
        _track(self)  # the message is anyone's object
        self._schedule_callbacks(None)
        return True

    def set_result(self, result):
        if self._status != _PENDING:
            raise _InvalidStateError(f"{self._state}: {self!r}")
        _track(self)  # the result is anyone's object: it may lead back here
        self._finish(result, None)

    def set_exception(self, exception):
        if self._status != _PENDING:
            raise _InvalidStateError(f"{self._state}: {self!r}")
        if isinstance(exception, type):
            exception = exception()
        if not isinstance(exception, BaseException):
            raise TypeError("invalid exception object")
        if type(exception) is StopIteration:
            raise TypeError("StopIteration interacts badly with generators "
                            "and cannot be raised into a Future")
        self._fail(exception, None)

    cdef int _finish(self, object result, list collected) except -1:
        # (the caller checked that the future is pending)
        self._result = result
        self._status = _FINISHED
        return self._schedule_callbacks(collected)

    cdef int _fail(self, object exception, list collected) except -1:
        _track(self)  # the exception's traceback may lead back to the future
        self._exception = exception
        self._exception_tb = exception.__traceback__
        self._status = _FINISHED
        self._schedule_callbacks(collected)
        self._log_tb = True
        return 0

    cdef int _schedule_callbacks(self, list collected) except -1:
        """The done-callbacks to the loop's ``call_soon``, or, with ``collected`` (a batched
        drain's list), appended to it flat: callback, future, context."""
        cdef Py_ssize_t i
        cdef list more = self._more_callbacks
        callback = self._callback0
        context = self._context0
        self._callback0 = self._context0 = self._more_callbacks = None
        if callback is None:
            return 0
        if collected is not None:
            collected.append(callback)
            collected.append(self)
            collected.append(context)
            if more is not None:
                for i in range(0, len(more), 2):
                    collected.append(more[i])
                    collected.append(self)
                    collected.append(more[i + 1])
            return 0
        call_soon = self._loop.call_soon
        call_soon(callback, self, context=context)
        if more is not None:
            for i in range(0, len(more), 2):
                call_soon(more[i], self, context=more[i + 1])
        return 0

    def __await__(self):
        cdef _FutureIter it = _FutureIter.__new__(_FutureIter)
        it.future = self
        return it

    def __iter__(self):  # (yield from, as asyncio.Future)
        cdef _FutureIter it = _FutureIter.__new__(_FutureIter)
        it.future = self
        return it


@cython.final
@cython.freelist(64)
@cython.auto_pickle(False)
cdef class _FutureIter:
    """What ``await future`` iterates, as asyncio's C FutureIter: yields the future (its
    ``_asyncio_future_blocking`` set: the task then waits for it) while it is pending, then
    returns its result."""

    cdef Future future

    def __iter__(self):
        return self

    def __next__(self):
        cdef PyObject* res = NULL
        cdef int status = _iter_send(<PyObject*>self, <PyObject*>None, &res)
        out = <object>res
        Py_DECREF(out)  # the reference _iter_send handed over
        if status == 0:
            raise StopIteration(out)
        return out

    def send(self, value):
        return self.__next__()

    def throw(self, typ, val=None, tb=None):
        self.future = None
        if isinstance(typ, BaseException):
            if val is not None:
                raise TypeError("instance exception may not have a separate value")
            exc = typ
        elif val is None:
            exc = typ()
        elif isinstance(val, typ):
            exc = val
        else:
            exc = typ(val)
        if tb is not None:
            exc = exc.with_traceback(tb)
        raise exc

    def close(self):
        self.future = None


cdef int _iter_send(PyObject* it, PyObject* arg, PyObject** presult) except -1:
    """One step of ``await future``; 1: yielded ``*presult``, 0: returned it (a new
    reference either way)."""
    cdef _FutureIter self = <_FutureIter>it
    cdef Future future = self.future
    if future is None:  # exhausted, as a generator that returned
        out = None
        Py_INCREF(out)
        presult[0] = <PyObject*>out
        return 0
    if future._status == _PENDING:
        # as asyncio's FutureIter: the flag, which the task clears, tells a second step
        # before the future is done from the first
        if not future._blocking:
            future._blocking = True
            Py_INCREF(future)
            presult[0] = <PyObject*>future
            return 1
        raise RuntimeError("await wasn't used with future")
    self.future = None
    out = future._get_result()
    Py_INCREF(out)
    presult[0] = <PyObject*>out
    return 0


cproducer_set_iter_am_send(_FutureIter, _iter_send)


cdef extern from *:
    """
    #if defined(__GNUC__) || defined(__clang__)
    #define cproducer_prefetch(p) __builtin_prefetch((const void *)(p), 1, 3)
    #else
    #define cproducer_prefetch(p) ((void)(p))
    #endif
    """
    void cproducer_prefetch(const void* p) noexcept nogil

# drain prefetches a delivery this many ahead, and what it points to half as many ahead (the
# delivery is in the cache by then)
cdef enum:
    _AHEAD = 16


cdef inline void _prefetch_results(object delivery) noexcept:
    cdef RecordDelivery d
    if type(delivery) is RecordDelivery:
        d = <RecordDelivery>delivery
        cproducer_prefetch(<PyObject*>d.future)
        cproducer_prefetch(<PyObject*>d.result)


cdef inline void _put(object t, Py_ssize_t i, object item):
    Py_INCREF(item)
    PyTuple_SET_ITEM(t, i, item)


# aiokafka's RecordMetadata tuples are made as plain tuples (the interpreter's free list) and
# given RecordMetadata's type (as_named_tuple)
cdef PyTypeObject* _RECORD_METADATA_TYPE = tuple_layout_type(RecordMetadata)


@cython.final
cdef class LoopCompletions:
    """The queue of completed deliveries of one producer and its hand-over to one event loop."""

    def __init__(self, loop, int acks):
        self.loop = loop
        self._call_soon_threadsafe = loop.call_soon_threadsafe
        self._call_soon = loop.call_soon
        self._plain_call_soon = (
            type(loop).call_soon is asyncio.BaseEventLoop.call_soon and hasattr(loop, "__dict__")
        )
        self._queue = []
        self._scheduled = False
        self._drain_queued = False
        self.acks = acks
        self.handovers = 0
        self._last_ts = -1
        self._last_ts_obj = -1

    cdef int push(self, object delivery) except -1:
        """Queue one completed delivery (any thread)."""
        self._queue.append(delivery)
        if not self._scheduled and not self._drain_queued:
            self._scheduled = True
            try:
                self._call_soon_threadsafe(self._handover_drain)
            except RuntimeError:  # the loop is closed: nobody is left to await the futures
                self._scheduled = False
                self._abandon()
        return 0

    cdef void _abandon(self) noexcept:
        # the queued futures go back into the GC's lists (a pending one may be in a cycle with
        # the task that awaited it), then the queue is dropped
        cdef object delivery
        for delivery in self._queue:
            if type(delivery) is RecordDelivery:
                future = (<RecordDelivery>delivery).future
                if future is not None:
                    _track(future)
        self._queue.clear()

    cdef int drain_on_loop(self) except -1:
        """On the loop's thread, while it runs a send: queue a drain with ``call_soon`` (once
        until it ran). The loop runs its ready callbacks before it next waits, so that drain
        resolves whatever completes meanwhile, and the completing thread need not wake the loop
        (see the module's docstring)."""
        if not self._drain_queued:
            self._drain_queued = True
            self._call_soon(self._queued_drain)
        return 0

    def _queued_drain(self):
        self._drain_queued = False
        self._drain_batched()

    def _handover_drain(self):
        self._drain_batched()

    def drain(self):
        """Resolve every queued future (on the loop's thread; from a coroutine too: the futures'
        done-callbacks are scheduled with ``call_soon``, as a task's wake-up cannot run inside
        another task's step)."""
        self._drain(None)

    cdef bint _can_batch(self):
        # the loop's scheduling is nobody else's to watch: asyncio's own call_soon (not a
        # subclass's override, not an instance attribute, not uvloop's: no instance dict), not
        # debug mode (which checks each call and reports slow callbacks one by one)
        loop = self.loop
        return (self._plain_call_soon and not loop.get_debug()
                and "call_soon" not in loop.__dict__)

    cdef int _drain_batched(self) except -1:
        """``_drain`` as a loop callback, the record futures' done-callbacks run at its end.

        The futures resolve into one list of their callbacks (``Future._schedule_callbacks``),
        run here once all are resolved, each in its own context as ``Handle`` runs it (an
        exception goes to the loop's exception handler). Only from a loop callback: a task's
        wake-up run from inside another task's step would fail."""
        cdef list callbacks
        cdef Py_ssize_t i, n
        if not self._can_batch():
            return self._drain(None)
        callbacks = []
        try:
            self._drain(callbacks)
        except BaseException:
            # the callbacks of the futures resolved so far go to the loop as usual
            self._schedule(callbacks, 0)
            raise
        n = len(callbacks)
        for i in range(0, n, 3):
            callback = callbacks[i]
            arg = callbacks[i + 1]
            try:
                (<object>callbacks[i + 2]).run(callback, arg)
            except (SystemExit, KeyboardInterrupt):
                # as the loop would: raised, the callbacks not run yet still scheduled
                self._schedule(callbacks, i + 3)
                raise
            except BaseException as exc:
                self.loop.call_exception_handler({
                    "message": f"Exception in callback {callback!r}({arg!r})",
                    "exception": exc,
                })
        return 0

    cdef int _drain(self, list collected) except -1:
        """Resolve the queued deliveries; the record futures' done-callbacks go to
        ``collected`` (None: to the loop's ``call_soon``)."""
        cdef list items
        cdef Py_ssize_t i, n
        self._scheduled = False
        self.handovers += 1
        items = self._queue
        self._queue = []
        n = len(items)
        for i in range(n):
            # the futures were made thousands of records ago and the results on the I/O
            # thread's core: fetch the ones a few deliveries ahead while this one resolves
            if i + _AHEAD < n:
                cproducer_prefetch(PyList_GET_ITEM(items, i + _AHEAD))  # (borrowed: no write)
            if i + _AHEAD // 2 < n:
                _prefetch_results(items[i + _AHEAD // 2])
            delivery = items[i]
            if type(delivery) is RecordDelivery:
                (<RecordDelivery>delivery).resolve(collected)
            else:
                (<BatchDelivery>delivery).resolve()

    cdef int _schedule(self, list callbacks, Py_ssize_t start) except -1:
        # collected callbacks from ``start`` on, scheduled with the loop's own call_soon
        cdef Py_ssize_t i
        for i in range(start, len(callbacks), 3):
            self._call_soon(callbacks[i], callbacks[i + 1], context=callbacks[i + 2])
        return 0

    cdef object record_metadata(self, str topic, int partition, object topic_partition,
                                long long offset, long long timestamp):
        # aiokafka's RecordMetadata, its TopicPartition shared with the engine's batch. It
        # holds str, int, None and a TopicPartition of those only: it cannot be part of a
        # reference cycle, so it leaves the GC's lists at once (a RecordMetadata lives per record
        # until its awaiter drops it; the GC would untrack it only after walking it).
        if timestamp != self._last_ts:
            # (one completing thread at a time in practice; two would only make an extra int:
            # both fields are written with the GIL held, no Python code in between)
            self._last_ts_obj = PyLong_FromLongLong(timestamp)
            self._last_ts = timestamp
        out = PyTuple_New(7)
        _put(out, 0, topic)
        _put(out, 1, partition)
        _put(out, 2, topic_partition)
        _put(out, 3, PyLong_FromLongLong(offset))
        _put(out, 4, self._last_ts_obj)
        _put(out, 5, 0)  # CreateTime: the engine does not tell a log append time apart
        _put(out, 6, None)  # log_start_offset: not reported by the engine
        as_named_tuple(<PyObject*>out, _RECORD_METADATA_TYPE)
        return out

    def new_record_delivery(self):
        """(future, callback) for one record sent with the engine's ``send``."""
        cdef RecordDelivery delivery = RecordDelivery.__new__(RecordDelivery)
        delivery.completions = self
        delivery.future = self.new_future()
        return delivery.future, delivery

    cdef Future new_future(self):
        # no __init__ (its keyword): the loop is set here; out of the GC's lists (see the
        # module's docstring)
        cdef Future future = Future.__new__(Future)
        future._loop = self.loop
        PyObject_GC_UnTrack(<void*>future)
        return future

    def new_batch_delivery(self, to_metadata):
        """(future, callback) for a ``send_many`` call: the callback takes the engine's
        BatchResult, ``to_metadata(result)`` gives the future's value or its exception."""
        cdef BatchDelivery delivery = BatchDelivery.__new__(BatchDelivery)
        delivery.completions = self
        delivery.future = _AsyncioFuture(loop=self.loop)
        delivery.to_metadata = to_metadata
        return delivery.future, delivery


@cython.final
@cython.no_gc
@cython.freelist(1024)
cdef class RecordDelivery:
    """The engine's callback for one record: its future, and what the engine said. Untracked by
    the GC: nothing it points to points back to it, except the producer's ``LoopCompletions``
    queue while it waits to be drained (emptied if the loop is closed). The engine's batch
    completes it in C with the record's fields (``_record_completed``, registered below), no
    tuple of its own made; any other caller calls it."""

    def __call__(self, metadata, error):
        if error is not None:
            _record_completed(self, None, -1, None, -1, -1, error)
        else:
            # the engine's RecordMetadata: topic, partition, topic_partition, offset, timestamp
            _record_completed(self, metadata[0], metadata[1], metadata[2], metadata[3],
                              metadata[4], None)

    cdef int resolve(self, list collected) except -1:
        cdef Future future = self.future
        result = self.result
        self.future = None
        self.result = None
        if future._status != _PENDING:  # cancelled by its awaiter: the record is still sent
            return 0
        if isinstance(result, BaseException):
            future._fail(translate(result), collected)
        else:
            future._finish(result, collected)  # untracked for good: it holds no cycle (see above)
        return 0


cdef int _record_completed(object callback, str topic, int partition, object topic_partition,
                           long long offset, long long timestamp, object exc) except -1:
    # on the engine's Sender thread (or whichever thread completes the record): the
    # RecordMetadata is made here, the loop only resolves the future
    cdef RecordDelivery delivery = <RecordDelivery>callback
    cdef LoopCompletions completions = delivery.completions
    if exc is not None:
        delivery.result = exc
    elif completions.acks != 0:
        delivery.result = completions.record_metadata(topic, partition, topic_partition, offset,
                                                      timestamp)
    # (acks=0: None, no offset to give, as aiokafka)
    completions.push(delivery)
    return 0


register_record_completion(RecordDelivery, _record_completed)


@cython.final
@cython.no_gc
cdef class BatchDelivery:
    """The callback of the engine's ``BatchFuture`` (one per ``send_batch``)."""

    def __call__(self, result):
        self.result = result
        self.completions.push(self)

    cdef int resolve(self) except -1:
        future = self.future
        result = self.result
        self.future = self.result = None
        if future.done():
            return 0
        value = translate(result) if isinstance(result, BaseException) else self.to_metadata(result)
        if isinstance(value, BaseException):  # a record of the batch failed: the batch fails
            future.set_exception(value)
        else:
            future.set_result(value)
        return 0
