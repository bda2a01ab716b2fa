# A plain lock over the native mutex, for the accumulator's deques and batches:
# `from cproducer.utils.fast_lock cimport FastLock`.
cdef class FastLock:
    cdef void* _lock  # a cp_mutex (pthread mutex / SRWLOCK), see native_mutex.h
    cdef void acquire_c(self) noexcept
    cdef void release_c(self) noexcept
