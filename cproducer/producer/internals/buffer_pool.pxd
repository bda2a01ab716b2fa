# BufferPool for other extension modules:
# `from cproducer.producer.internals.buffer_pool cimport BufferPool`
# (a typed attribute calls allocate/deallocate without the Python method lookup).
cimport cython
from cpython.pythread cimport PyThread_type_lock
from cpython.ref cimport PyObject

from cproducer.utils.memory_budget cimport MemoryBudget


@cython.final
cdef class _Waiter:
    cdef PyThread_type_lock _sem
    cdef bint _signaled

    cdef void signal(self) noexcept


@cython.final
cdef class BufferPool(MemoryBudget):
    cdef readonly long long total_memory
    cdef readonly Py_ssize_t poolable_size
    cdef long long _non_pooled_available
    # the free list: a stack of owned references to bytearrays of exactly poolable_size (a C
    # array that never shrinks: no allocation when a buffer goes round)
    cdef PyObject** _free
    cdef Py_ssize_t _free_count
    cdef Py_ssize_t _free_capacity
    cdef list _waiters     # _Waiter, oldest first (Java's Deque<Condition>)
    cdef void* _mutex      # a cp_mutex (pthread / SRWLOCK), see native_mutex.h
    cdef bint _closed
    # for metrics(): the time allocations spent waiting for memory, and how many gave up
    cdef long long _wait_time_ns
    cdef long long _exhausted

    cdef void _lock(self) noexcept
    cdef void _unlock(self) noexcept
    cdef void _free_up(self, long long size) noexcept
    cdef object _pop_free(self)
    cdef int _push_free(self, object buffer) except -1
    cdef void _signal_next_if_available(self) noexcept
    cdef object _allocate_slow(self, Py_ssize_t size, double max_time_to_block_ms)
    # Java's availableMemory (the property), for C callers
    cdef long long available_memory_c(self) noexcept
    cpdef object allocate(self, Py_ssize_t size, double max_time_to_block_ms)
    cpdef void deallocate(self, object buffer, Py_ssize_t size=*) except *
