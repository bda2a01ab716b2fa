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
thread allowed to touch them. The futures are plain ``asyncio.Future`` objects, as aiokafka's.

A resolved future schedules each of its done-callbacks with ``loop.call_soon``: a ``Handle``
made in Python, run by the loop's next iteration. ``asyncio.gather`` puts one on every future it
waits for, a task one on the future it awaits; for a burst of thousands of gathered futures that
was most of the loop's cost per record. A drain run as a loop callback therefore collects the
done-callbacks of the futures it resolves and runs them itself once they are all resolved, each
in its context, an exception to the loop's exception handler (as ``Handle`` runs them): the same
callbacks, once each, on the loop's thread, after their future is done, only without a Handle
and a pass through the loop's ready queue each (``_drain_batched``).

A record's future is out of the GC's lists. Thousands are in flight at a time, and the GC walked
each one at every young collection until it moved it to the oldest generation, whose growth then
triggered full collections: a tenth of the CPU of a send loop went to walking them. A pending
future may be in a cycle (its callbacks lead to the task awaiting it, whose frame holds it), but
the record's delivery holds it until it resolves, so that cycle is never garbage before then. On
success the future holds its loop and its RecordMetadata (an untracked tuple of str and int)
only: nothing leads back to it, and it stays untracked. A future that fails (its exception's
traceback may lead back to it) or that its awaiter cancelled goes back into the GC's lists when
its delivery resolves it, as do the futures of deliveries dropped because the loop is closed.
(A reference cycle hung on a resolved future as an attribute would not be collected.)

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

cimport cython
from cpython.list cimport PyList_GET_ITEM
from cpython.object cimport PyTypeObject
from cpython.ref cimport PyObject, Py_INCREF
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

cdef object _Future = asyncio.Future
# unbound methods: no attribute lookup on each future
cdef object _future_done = asyncio.Future.done
cdef object _set_result = asyncio.Future.set_result
cdef object _set_exception = asyncio.Future.set_exception


cdef extern from *:
    """
    /* asyncio.Future(loop=loop) as type.__call__ makes it (tp_new, then tp_init), but with the
       keywords in a dict made once per producer: a call of the type itself builds an argument
       tuple and a keyword dict per future (the type has no vectorcall). */
    static PyObject *cproducer_new_instance(PyObject *type, PyObject *args, PyObject *kwargs) {
        PyTypeObject *t = (PyTypeObject *)type;
        PyObject *obj = t->tp_new(t, args, kwargs);
        if (obj == NULL)
            return NULL;
        if (t->tp_init != NULL && t->tp_init(obj, args, kwargs) < 0) {
            Py_DECREF(obj);
            return NULL;
        }
        return obj;
    }
    """
    object cproducer_new_instance(object type, tuple args, dict kwargs)


cdef inline object _untracked_future(dict future_kwargs):
    future = cproducer_new_instance(_Future, (), future_kwargs)
    PyObject_GC_UnTrack(<void*>future)
    return future


cdef inline void _track(object future):
    if not PyObject_GC_IsTracked(future):
        PyObject_GC_Track(<void*>future)


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
        self._future_kwargs = {"loop": loop}
        self._call_soon_threadsafe = loop.call_soon_threadsafe
        self._call_soon = loop.call_soon
        self._collect_bound = self._collect
        self._callbacks = None
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
        done-callbacks are scheduled as usual)."""
        self._drain()

    def _collect(self, callback, arg, context=None):
        # the loop's call_soon while a batched drain resolves its futures: the done-callback
        # is kept to be run at the end of the drain. Three items of a flat list, no tuple: a
        # drain collects thousands, and as many live tuples would trigger collections of the
        # cyclic GC in the middle of it (each walking what gather holds: its futures, lists)
        callbacks = self._callbacks
        callbacks.append(callback)
        callbacks.append(arg)
        callbacks.append(context)

    cdef bint _can_batch(self):
        # the loop's call_soon can be stood in for: asyncio's own (not a subclass's override,
        # not uvloop's: no instance dict), not in debug mode (which checks and records each
        # call)
        loop = self.loop
        return (self._plain_call_soon and not loop.get_debug()
                and "call_soon" not in loop.__dict__)

    cdef int _drain_batched(self) except -1:
        """``_drain`` as a loop callback, the futures' done-callbacks run at its end.

        Resolving a future schedules each of its done-callbacks with ``loop.call_soon``: a
        ``Handle`` made in Python and run by the loop's next iteration, a few microseconds a
        callback; ``asyncio.gather`` puts one on each of its futures, a task one on the future
        it awaits. While the futures resolve, the loop's ``call_soon`` (which the C futures
        look up on the loop object each time) is this producer's ``_collect``; the callbacks
        then run here, each in its own context as ``Handle`` runs it (an exception goes to the
        loop's exception handler). Only from a loop callback: a task's wake-up run from
        inside another task's step would fail."""
        cdef list callbacks
        cdef Py_ssize_t i, n
        if not self._can_batch():
            return self._drain()
        loop_dict = self.loop.__dict__
        self._callbacks = callbacks = []
        loop_dict["call_soon"] = self._collect_bound
        try:
            self._drain()
        except BaseException:
            # the callbacks of the futures resolved so far go to the loop as usual
            del loop_dict["call_soon"]
            self._callbacks = None
            self._schedule(callbacks, 0)
            raise
        del loop_dict["call_soon"]
        self._callbacks = None
        n = len(callbacks)
        for i in range(0, n, 3):
            callback = callbacks[i]
            arg = callbacks[i + 1]
            context = callbacks[i + 2]
            try:
                if context is None:
                    callback(arg)
                else:
                    context.run(callback, arg)
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

    cdef int _drain(self) except -1:
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
                (<RecordDelivery>delivery).resolve()
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
        delivery.future = _untracked_future(self._future_kwargs)
        return delivery.future, delivery

    cdef object new_future(self):
        return _untracked_future(self._future_kwargs)

    def new_batch_delivery(self, to_metadata):
        """(future, callback) for a ``send_many`` call: the callback takes the engine's
        BatchResult, ``to_metadata(result)`` gives the future's value or its exception."""
        cdef BatchDelivery delivery = BatchDelivery.__new__(BatchDelivery)
        delivery.completions = self
        delivery.future = _Future(loop=self.loop)
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

    cdef int resolve(self) except -1:
        future = self.future
        result = self.result
        self.future = self.result = None
        if _future_done(future):  # cancelled by its awaiter: the record is still sent
            _track(future)  # (it may hold its CancelledError and, through that, a cycle)
            return 0
        if isinstance(result, BaseException):
            _track(future)  # the error's traceback may lead back to the future
            _set_exception(future, translate(result))
        else:
            _set_result(future, result)  # untracked for good: it holds no cycle (see above)
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
        if _future_done(future):
            return 0
        value = translate(result) if isinstance(result, BaseException) else self.to_metadata(result)
        if isinstance(value, BaseException):  # a record of the batch failed: the batch fails
            _set_exception(future, value)
        else:
            _set_result(future, value)
        return 0
