"""BufferPool: Java's ``producer.internals.BufferPool``.

A pool of ``buffer.memory`` bytes. Buffers of exactly ``poolable_size`` (``batch.size``) are kept on
a free list and handed out again; other sizes come from the non-pooled memory (free pooled buffers
are released to make room). When memory is short the caller waits (GIL released while blocked),
waiters are served first come first served, and after ``max_time_to_block_ms`` it raises
``BufferExhaustedError``.
"""

import threading
import time
from collections import deque

from cpython.bytearray cimport PyByteArray_FromStringAndSize

from cproducer.errors import BufferExhaustedError, ProducerClosedError


cdef class BufferPool:
    cdef readonly long long total_memory
    cdef readonly Py_ssize_t poolable_size
    cdef long long _non_pooled_available
    cdef object _free        # deque of bytearrays of poolable_size
    cdef object _waiters     # deque of Conditions, FIFO
    cdef object _lock
    cdef bint _closed

    def __init__(self, long long total_memory, Py_ssize_t poolable_size):
        if total_memory < 0 or poolable_size < 0:
            raise ValueError("total_memory and poolable_size must be >= 0")
        self.total_memory = total_memory
        self.poolable_size = poolable_size
        self._non_pooled_available = total_memory
        self._free = deque()
        self._waiters = deque()
        self._lock = threading.Lock()
        self._closed = False

    cdef void _free_up(self, long long size):
        while self._free and self._non_pooled_available < size:
            self._free.pop()
            self._non_pooled_available += self.poolable_size

    cpdef object allocate(self, Py_ssize_t size, double max_time_to_block_ms):
        """A writable bytearray of exactly ``size`` bytes (content undefined)."""
        cdef long long accumulated = 0, got
        cdef double deadline, remaining
        cdef object buffer = None
        if size > self.total_memory:
            raise BufferExhaustedError(
                f"attempt to allocate {size} bytes, but buffer.memory is a hard limit of "
                f"{self.total_memory} bytes"
            )
        with self._lock:
            if self._closed:
                raise ProducerClosedError("producer closed while allocating memory")
            if size == self.poolable_size and self._free:
                return self._free.popleft()
            if self._non_pooled_available + len(self._free) * self.poolable_size >= size:
                self._free_up(size)
                self._non_pooled_available -= size
            else:
                more_memory = threading.Condition(self._lock)
                self._waiters.append(more_memory)
                deadline = time.monotonic() + max_time_to_block_ms / 1000.0
                try:
                    while accumulated < size:
                        remaining = deadline - time.monotonic()
                        if remaining > 0:
                            more_memory.wait(remaining)
                        if self._closed:
                            raise ProducerClosedError("producer closed while allocating memory")
                        if accumulated == 0 and size == self.poolable_size and self._free:
                            buffer = self._free.popleft()
                            accumulated = size
                            break
                        self._free_up(size - accumulated)
                        got = min(size - accumulated, self._non_pooled_available)
                        self._non_pooled_available -= got
                        accumulated += got
                        if accumulated < size and time.monotonic() >= deadline:
                            raise BufferExhaustedError(
                                f"failed to allocate {size} bytes within max.block.ms "
                                f"({max_time_to_block_ms:g} ms). Total memory: "
                                f"{self.total_memory} bytes, available: "
                                f"{self._available_locked()} bytes, poolable size: "
                                f"{self.poolable_size} bytes"
                            )
                    accumulated = 0
                finally:
                    if accumulated != 0:  # error path: give back what this waiter took
                        self._non_pooled_available += accumulated
                    self._waiters.remove(more_memory)
            if (self._non_pooled_available > 0 or self._free) and self._waiters:
                self._waiters[0].notify()
        if buffer is None:
            buffer = PyByteArray_FromStringAndSize(NULL, size)
        return buffer

    cpdef void deallocate(self, object buffer, Py_ssize_t size=-1):
        """Return a buffer (pooled when it is exactly poolable_size) and wake the first waiter."""
        if size < 0:
            size = len(buffer)
        with self._lock:
            if size == self.poolable_size and len(buffer) == self.poolable_size:
                self._free.append(buffer)
            else:
                self._non_pooled_available += size
            if self._waiters:
                self._waiters[0].notify()

    cdef long long _available_locked(self):
        return self._non_pooled_available + len(self._free) * self.poolable_size

    @property
    def available_memory(self):
        with self._lock:
            return self._available_locked()

    @property
    def unallocated_memory(self):
        with self._lock:
            return self._non_pooled_available

    @property
    def queued(self):
        return len(self._waiters)

    @property
    def free_buffers(self):
        return len(self._free)

    def close(self):
        """Wake every waiter: each raises ProducerClosedError."""
        with self._lock:
            self._closed = True
            for waiter in self._waiters:
                waiter.notify()
