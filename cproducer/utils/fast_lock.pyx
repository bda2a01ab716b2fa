# cython: freethreading_compatible=True
# Free-threaded Python: the lock is the native mutex; it has no other state.
"""FastLock: a plain (non-reentrant) lock over the native mutex (native_mutex.h).

Its uncontended path is two C calls, no Python lock object; it blocks with the GIL released, so
the holder can always get the GIL back to finish and release it.
"""

from cproducer.utils.native_mutex cimport (cp_mutex, cp_mutex_acquire, cp_mutex_free,
                                           cp_mutex_new, cp_mutex_unlock)


cdef class FastLock:
    """A plain lock usable from Cython (``acquire_c``/``release_c``) and as ``with lock:``."""

    def __cinit__(self):
        self._lock = cp_mutex_new()
        if self._lock == NULL:
            raise MemoryError("cannot allocate or initialise a lock")

    def __dealloc__(self):
        cp_mutex_free(<cp_mutex*>self._lock)
        self._lock = NULL

    cdef void acquire_c(self) noexcept:
        cp_mutex_acquire(<cp_mutex*>self._lock)

    cdef void release_c(self) noexcept:
        cp_mutex_unlock(<cp_mutex*>self._lock)

    def __enter__(self):
        self.acquire_c()
        return self

    def __exit__(self, *exc):
        self.release_c()
        return False
