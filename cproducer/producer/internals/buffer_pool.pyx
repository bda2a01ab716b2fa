# cython: freethreading_compatible=True
# Free-threaded Python: every shared field is read and written under the pool's native mutex (the
# observables unallocated_memory, queued, free_buffers and the wait counters read one word
# without it).
"""BufferPool: Java's ``producer.internals.BufferPool``.

A pool of ``buffer.memory`` bytes. Buffers of exactly ``poolable_size`` (``batch.size``) are kept
on a free list and handed out again; other sizes come from the non-pooled memory (free pooled
buffers are released to make room, Java's ``freeUp``). When memory is short the caller waits with
the GIL released; waiters are served first come first served: all memory that comes back goes to
the longest waiting thread until it has what it asked for (so a large request cannot starve). After
``max_time_to_block_ms`` the waiter gives back what it gathered and raises
``BufferExhaustedError``. ``close()`` wakes every waiter, which raises ``ProducerClosedError``.

Locking: one native mutex (pthread / SRWLOCK; taken without releasing the GIL when it is free,
with the GIL released when it is not), and one native binary semaphore per waiter (Java's
per-waiter ``Condition``). No Python object that the garbage collector tracks is created while
the mutex is held, and no error is raised under it, so a finalizer can never run (and re-enter
the pool) while we hold it. The free list is a C array of references that never shrinks: a pooled
buffer goes round without any allocation (allocate + deallocate: ~20 ns through the .pxd, ~55 ns
from Python).

Buffers are handed out uninitialised (their content is whatever was there before).

The pool is also the producer's ``MemoryBudget``: what a batch holds beyond its buffer (its
uncompressed records when they outgrow it, its records' completion state) is charged here with
``try_reserve`` (never waits; "no" makes the batch full), ``force_reserve`` (may run into debt:
allocations then wait until enough comes back) and ``release``. So ``buffer.memory`` bounds all
the memory held for records not yet acknowledged, as Java promises.
"""

import time

cimport cython
from cpython.bytearray cimport PyByteArray_FromStringAndSize, PyByteArray_GET_SIZE
from cpython.exc cimport PyErr_CheckSignals
from cpython.list cimport PyList_GET_SIZE
from cpython.mem cimport PyMem_Free, PyMem_Realloc
from cpython.ref cimport Py_INCREF, Py_XDECREF, PyObject
from cpython.pythread cimport (
    NOWAIT_LOCK,
    PY_LOCK_ACQUIRED,
    PY_LOCK_INTR,
    WAIT_LOCK,
    PyLockStatus,
    PyThread_acquire_lock,
    PyThread_allocate_lock,
    PyThread_free_lock,
    PyThread_release_lock,
    PyThread_type_lock,
)

from cproducer.utils.memory_budget cimport MemoryBudget
from cproducer.utils.native_mutex cimport (cp_mutex, cp_mutex_acquire, cp_mutex_free,
                                           cp_mutex_new, cp_mutex_unlock)

from cproducer.errors import BufferExhaustedError, ProducerClosedError


cdef extern from "pythread.h":
    PyLockStatus PyThread_acquire_lock_timed(PyThread_type_lock lock, long long microseconds,
                                             int intr_flag) nogil


# one native wait lasts at most this long; the deadline is then checked again (no overflow for
# huge max_time_to_block_ms values)
cdef long long _MAX_WAIT_US = 3_600_000_000
cdef object _monotonic = time.monotonic

CLOSED_MESSAGE = "Producer closed while allocating memory"

# outcomes of the slow path, turned into exceptions once the mutex is released
cdef enum:
    _OK = 0
    _EXHAUSTED = 1
    _CLOSED = 2


@cython.final
cdef class _Waiter:
    """One blocked allocation: a binary semaphore, taken at creation, given by ``signal``."""

    def __cinit__(self):
        self._sem = PyThread_allocate_lock()
        if self._sem == NULL:
            raise MemoryError("cannot allocate a lock for a BufferPool waiter")
        PyThread_acquire_lock(self._sem, WAIT_LOCK)  # a fresh lock: never blocks
        self._signaled = False

    def __dealloc__(self):
        if self._sem != NULL:
            PyThread_free_lock(self._sem)
            self._sem = NULL

    cdef void signal(self) noexcept:
        # with the pool's mutex held: at most one pending wake-up per waiter
        if not self._signaled:
            self._signaled = True
            PyThread_release_lock(self._sem)


@cython.final
cdef class BufferPool(MemoryBudget):
    """``BufferPool(total_memory, poolable_size)``: ``buffer.memory`` bytes, ``batch.size``
    buffers recycled. Thread-safe."""

    def __cinit__(self, *args, **kwargs):
        self._mutex = cp_mutex_new()
        if self._mutex == NULL:
            raise MemoryError("cannot allocate or initialise the BufferPool lock")

    def __dealloc__(self):
        cdef Py_ssize_t i
        if self._free != NULL:
            for i in range(self._free_count):
                Py_XDECREF(self._free[i])
            PyMem_Free(self._free)
            self._free = NULL
        cp_mutex_free(<cp_mutex*>self._mutex)
        self._mutex = NULL

    def __init__(self, long long total_memory, Py_ssize_t poolable_size):
        if total_memory < 0:
            raise ValueError(f"total_memory (buffer.memory) must be >= 0, got {total_memory}")
        if poolable_size < 0:
            raise ValueError(f"poolable_size (batch.size) must be >= 0, got {poolable_size}")
        self.total_memory = total_memory
        self.poolable_size = poolable_size
        self._non_pooled_available = total_memory
        while self._free_count > 0:  # __init__ called again: start empty
            self._free_count -= 1
            Py_XDECREF(self._free[self._free_count])
        self._waiters = []
        self._closed = False

    # -- the mutex ----------------------------------------------------------------------------

    cdef void _lock(self) noexcept:
        cp_mutex_acquire(<cp_mutex*>self._mutex)

    cdef void _unlock(self) noexcept:
        cp_mutex_unlock(<cp_mutex*>self._mutex)

    # -- with the mutex held --------------------------------------------------------------------

    cdef void _free_up(self, long long size) noexcept:
        # Java's freeUp: release pooled buffers until the non-pooled memory covers `size`
        # (a bytearray's deallocation runs no Python code)
        while self._free_count > 0 and self._non_pooled_available < size:
            self._free_count -= 1
            Py_XDECREF(self._free[self._free_count])
            self._non_pooled_available += self.poolable_size

    cdef object _pop_free(self):
        # the top of the free list (call with _free_count > 0): its reference moves to the caller
        cdef object buffer
        self._free_count -= 1
        buffer = <object>self._free[self._free_count]  # a new reference...
        Py_XDECREF(self._free[self._free_count])  # ...and the free list's one dropped
        return buffer

    cdef int _push_free(self, object buffer) except -1:
        cdef Py_ssize_t capacity
        cdef PyObject** grown
        if self._free_count == self._free_capacity:
            capacity = max(16, 2 * self._free_capacity)
            grown = <PyObject**>PyMem_Realloc(self._free, capacity * sizeof(PyObject*))
            if grown == NULL:
                raise MemoryError("cannot grow the BufferPool free list")
            self._free = grown
            self._free_capacity = capacity
        Py_INCREF(buffer)
        self._free[self._free_count] = <PyObject*>buffer
        self._free_count += 1
        return 0

    cdef void _signal_next_if_available(self) noexcept:
        if PyList_GET_SIZE(self._waiters) > 0 and (
                self._non_pooled_available > 0 or self._free_count > 0):
            (<_Waiter>self._waiters[0]).signal()

    # -- public -------------------------------------------------------------------------------

    cpdef object allocate(self, Py_ssize_t size, double max_time_to_block_ms):
        """A bytearray of exactly ``size`` bytes (content undefined). Blocks up to
        ``max_time_to_block_ms`` for memory, then raises ``BufferExhaustedError``; a size above
        ``total_memory`` raises at once."""
        cdef object buffer
        if size == self.poolable_size:
            # the common case: a recycled batch buffer
            self._lock()
            if self._free_count > 0 and not self._closed:
                buffer = self._pop_free()
                self._unlock()
                return buffer
            self._unlock()
        return self._allocate_slow(size, max_time_to_block_ms)

    cdef object _allocate_slow(self, Py_ssize_t size, double max_time_to_block_ms):
        cdef object buffer = None
        cdef _Waiter waiter
        cdef long long accumulated = 0, got, available = 0, wait_us
        cdef double start = 0.0, deadline, remaining, waited_ms
        cdef int outcome = _OK
        cdef bint completed = False
        cdef PyLockStatus status
        cdef Py_ssize_t i
        if size < 0:
            raise ValueError(f"allocate: size must be >= 0, got {size}")
        if size > self.total_memory:
            raise BufferExhaustedError(
                f"Attempt to allocate {size} bytes, but buffer.memory is a hard limit of "
                f"{self.total_memory} bytes on memory allocations"
            )
        if max_time_to_block_ms != max_time_to_block_ms:
            raise ValueError("allocate: max_time_to_block_ms must be a number of ms, got NaN")
        self._lock()
        try:
            if self._closed:
                outcome = _CLOSED
            elif size == self.poolable_size and self._free_count > 0:
                buffer = self._pop_free()
            elif (self._non_pooled_available
                  + self._free_count * <long long>self.poolable_size >= size):
                # enough unallocated or pooled memory: take it now, make the buffer later
                self._free_up(size)
                self._non_pooled_available -= size
            else:
                # out of memory: queue up and take whatever comes back until we have enough
                waiter = _Waiter()  # not tracked by the GC: safe to make under the mutex
                self._waiters.append(waiter)
                start = _monotonic()
                deadline = start + max(max_time_to_block_ms, 0.0) / 1000.0
                try:
                    while accumulated < size:
                        remaining = deadline - _monotonic()
                        if remaining <= 0:
                            outcome = _EXHAUSTED
                            break
                        # (compared as a double first: an infinite wait must not reach the cast)
                        if remaining * 1e6 >= <double>_MAX_WAIT_US:
                            wait_us = _MAX_WAIT_US
                        else:
                            wait_us = <long long>(remaining * 1e6) + 1
                        self._unlock()
                        with nogil:
                            status = PyThread_acquire_lock_timed(waiter._sem, wait_us, 1)
                        try:
                            if status == PY_LOCK_INTR:
                                PyErr_CheckSignals()  # a signal handler may raise (Ctrl-C)
                        finally:
                            self._lock()
                        if status == PY_LOCK_ACQUIRED:
                            waiter._signaled = False
                        elif waiter._signaled:
                            # signalled just after the wait gave up: consume it, count it
                            PyThread_acquire_lock(waiter._sem, NOWAIT_LOCK)
                            waiter._signaled = False
                            status = PY_LOCK_ACQUIRED
                        if self._closed:
                            outcome = _CLOSED
                            break
                        if status != PY_LOCK_ACQUIRED:
                            continue  # timed out or interrupted: the deadline decides
                        if (accumulated == 0 and size == self.poolable_size
                                and self._free_count > 0):
                            buffer = self._pop_free()
                            accumulated = size
                        else:
                            # may get only part of it this time round (none while in debt)
                            self._free_up(size - accumulated)
                            got = min(size - accumulated, self._non_pooled_available)
                            if got > 0:
                                self._non_pooled_available -= got
                                accumulated += got
                    completed = outcome == _OK
                finally:
                    # Java's bufferpool-wait-time (counted here, with the mutex held, and only
                    # on this slow path: metrics() turns it into a ratio)
                    self._wait_time_ns += <long long>((_monotonic() - start) * 1e9)
                    if outcome == _EXHAUSTED:
                        self._exhausted += 1
                    if not completed:
                        # timed out, closed, or interrupted: give back what we gathered
                        self._non_pooled_available += accumulated
                    # our waiter is the head, or was skipped: remove it wherever it is
                    for i in range(PyList_GET_SIZE(self._waiters)):
                        if self._waiters[i] is waiter:
                            del self._waiters[i]
                            break
                    available = (self._non_pooled_available
                                 + self._free_count * <long long>self.poolable_size)
        finally:
            # the memory left over may serve the next waiter
            self._signal_next_if_available()
            self._unlock()
        if outcome == _CLOSED:
            raise ProducerClosedError(CLOSED_MESSAGE)
        if outcome == _EXHAUSTED:
            waited_ms = (_monotonic() - start) * 1000.0
            raise BufferExhaustedError(
                f"Failed to allocate {size} bytes within the configured max blocking time "
                f"{max_time_to_block_ms:g} ms (waited {waited_ms:.1f} ms). Total memory: "
                f"{self.total_memory} bytes. Available memory: {available} bytes. Poolable size: "
                f"{self.poolable_size} bytes"
            )
        if buffer is None:
            try:
                buffer = PyByteArray_FromStringAndSize(NULL, size)
            except BaseException:
                # Java's safeAllocateByteBuffer: the reservation goes back
                self._lock()
                self._non_pooled_available += size
                if PyList_GET_SIZE(self._waiters) > 0:
                    (<_Waiter>self._waiters[0]).signal()
                self._unlock()
                raise
        return buffer

    cpdef void deallocate(self, object buffer, Py_ssize_t size=-1) except *:
        """Return a buffer from ``allocate``. ``size`` (default: its length) is the memory to
        give back; a bytearray of exactly ``poolable_size`` bytes, returned as ``poolable_size``,
        goes on the free list. Wakes the longest waiting allocation."""
        cdef bint pooled
        cdef bint too_much
        if buffer is None:
            raise TypeError("deallocate: buffer must be a buffer from allocate(), got None")
        if size < 0:
            size = len(buffer)
        pooled = (size == self.poolable_size and type(buffer) is bytearray
                  and PyByteArray_GET_SIZE(buffer) == size)
        self._lock()
        too_much = (self._non_pooled_available + size
                    + self._free_count * <long long>self.poolable_size
                    > self.total_memory)
        if not too_much:
            try:
                # in debt (force_reserve), the buffer's memory repays it instead of being pooled
                if pooled and self._non_pooled_available >= 0:
                    self._push_free(buffer)
                else:
                    self._non_pooled_available += size
            finally:
                if PyList_GET_SIZE(self._waiters) > 0:
                    (<_Waiter>self._waiters[0]).signal()
                self._unlock()
            return
        self._unlock()
        raise ValueError(
            f"deallocate: giving back {size} bytes would make the available memory exceed "
            f"buffer.memory ({self.total_memory} bytes): was this buffer returned twice, or did "
            "it not come from this pool?"
        )

    # -- the MemoryBudget: memory a batch holds beyond its buffer ----------------------------

    cdef bint try_reserve(self, Py_ssize_t n) noexcept:
        # only when free now and nobody waits (a waiter must not be overtaken)
        cdef bint ok = False
        self._lock()
        if (not self._closed and PyList_GET_SIZE(self._waiters) == 0
                and self._non_pooled_available
                + self._free_count * <long long>self.poolable_size >= n):
            self._free_up(n)
            self._non_pooled_available -= n
            ok = True
        self._unlock()
        return ok

    cdef void force_reserve(self, Py_ssize_t n) noexcept:
        self._lock()
        self._free_up(n)
        self._non_pooled_available -= n  # may go below 0: allocations wait until it is repaid
        self._unlock()

    cdef void release(self, Py_ssize_t n) noexcept:
        self._lock()
        self._non_pooled_available += n
        if PyList_GET_SIZE(self._waiters) > 0:
            (<_Waiter>self._waiters[0]).signal()
        self._unlock()

    def try_reserve_memory(self, Py_ssize_t n):
        """Take ``n`` bytes of the budget if they are free now and no allocation waits (True),
        else take nothing (False). Never blocks."""
        if n < 0:
            raise ValueError(f"try_reserve_memory: n must be >= 0, got {n}")
        return self.try_reserve(n)

    def force_reserve_memory(self, Py_ssize_t n):
        """Take ``n`` bytes of the budget even past buffer.memory (allocations then wait)."""
        if n < 0:
            raise ValueError(f"force_reserve_memory: n must be >= 0, got {n}")
        self.force_reserve(n)

    def release_memory(self, Py_ssize_t n):
        """Give back ``n`` bytes taken with try_reserve_memory / force_reserve_memory."""
        if n < 0:
            raise ValueError(f"release_memory: n must be >= 0, got {n}")
        self.release(n)

    def close(self):
        """Refuse further allocations and wake every waiter (each raises
        ``ProducerClosedError``). Memory can still be given back."""
        cdef _Waiter waiter
        self._lock()
        self._closed = True
        for waiter in self._waiters:
            waiter.signal()
        self._unlock()

    # -- observables --------------------------------------------------------------------------

    @property
    def available_memory(self):
        """Unallocated memory plus the free list (Java's availableMemory)."""
        return self.available_memory_c()

    cdef long long available_memory_c(self) noexcept:
        cdef long long value
        self._lock()
        value = (self._non_pooled_available
                 + self._free_count * <long long>self.poolable_size)
        self._unlock()
        return value

    @property
    def unallocated_memory(self):
        """Memory neither handed out nor on the free list (Java's unallocatedMemory)."""
        return self._non_pooled_available

    @property
    def queued(self):
        """The number of allocations blocked waiting for memory."""
        return PyList_GET_SIZE(self._waiters)

    @property
    def free_buffers(self):
        """The number of pooled buffers on the free list."""
        return self._free_count

    @property
    def closed(self):
        return self._closed

    @property
    def wait_time_ns_total(self):
        """The time allocations spent blocked waiting for memory, in ns (all of them, summed)."""
        return self._wait_time_ns

    @property
    def exhausted_total(self):
        """The number of allocations that gave up waiting (``BufferExhaustedError``)."""
        return self._exhausted

    def __repr__(self):
        return (
            f"BufferPool(total_memory={self.total_memory}, poolable_size={self.poolable_size}, "
            f"available_memory={self.available_memory}, queued={self.queued})"
        )
