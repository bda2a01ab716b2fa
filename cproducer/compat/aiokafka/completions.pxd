# The completion hand-over, for the send fast path (fast_send.pyx): it makes deliveries in C.
cimport cython


@cython.final
cdef class Future:
    cdef readonly object _loop
    cdef int _status  # _PENDING, _CANCELLED or _FINISHED
    cdef readonly object _result
    cdef readonly object _exception
    cdef object _exception_tb
    cdef readonly object _cancel_message
    # the first done-callback and its context inline, the others in a list (fn, context, ...)
    cdef object _callback0
    cdef object _context0
    cdef list _more_callbacks
    cdef bint _blocking  # _asyncio_future_blocking
    cdef bint _log_tb  # an exception was set and nobody retrieved it

    cdef object _get_result(self)
    cdef list _callback_list(self)
    cdef int _finish(self, object result, list collected) except -1
    cdef int _fail(self, object exception, list collected) except -1
    cdef int _schedule_callbacks(self, list collected) except -1


@cython.final
cdef class LoopCompletions:
    cdef readonly object loop
    cdef object _call_soon_threadsafe
    cdef object _call_soon
    cdef list _queue
    # a drain is scheduled with call_soon_threadsafe (by a completing thread)
    cdef bint _scheduled
    # a drain is queued with call_soon by the loop's own thread (drain_on_loop)
    cdef bint _drain_queued
    # acks=0: an awaited send gives None (there is no offset), as in aiokafka
    cdef readonly int acks
    # how many times the loop was woken up for completions (tests, benchmarks)
    cdef public long long handovers

    cdef int push(self, object delivery) except -1
    cdef int drain_on_loop(self) except -1
    cdef int _drain(self, list collected) except -1
    cdef int _drain_batched(self) except -1
    cdef bint _can_batch(self)
    cdef int _schedule(self, list callbacks, Py_ssize_t start) except -1
    # the loop's call_soon is asyncio's own (its class's, the loop has an instance dict)
    cdef bint _plain_call_soon
    # the last timestamp made into an int, and that int (a batch's records mostly share one)
    cdef long long _last_ts
    cdef object _last_ts_obj

    cdef object record_metadata(self, str topic, int partition, object topic_partition,
                                long long offset, long long timestamp)
    cdef Future new_future(self)
    cdef void _abandon(self) noexcept


@cython.final
@cython.no_gc
@cython.freelist(1024)
cdef class RecordDelivery:
    cdef LoopCompletions completions
    cdef Future future
    cdef object result

    cdef int resolve(self, list collected) except -1


@cython.final
@cython.no_gc
cdef class BatchDelivery:
    cdef LoopCompletions completions
    cdef object future
    cdef object result
    cdef object to_metadata

    cdef int resolve(self) except -1
