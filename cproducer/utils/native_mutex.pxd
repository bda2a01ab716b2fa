# The native mutex of native_mutex.h, for the modules that need a cheap lock
# (`from cproducer.utils.native_mutex cimport cp_mutex, cp_mutex_new, ...`); header-only.
cdef extern from "native_mutex.h":
    ctypedef struct cp_mutex:
        pass
    cp_mutex* cp_mutex_new() nogil  # NULL when it cannot be made
    void cp_mutex_free(cp_mutex* m) nogil  # NULL is fine
    int cp_mutex_trylock(cp_mutex* m) nogil
    void cp_mutex_lock(cp_mutex* m) nogil
    void cp_mutex_unlock(cp_mutex* m) nogil


cdef inline void cp_mutex_acquire(cp_mutex* m) noexcept:
    # uncontended: one atomic operation with the GIL held; contended: block with the GIL released
    # (the holder may need the GIL to finish and release)
    if cp_mutex_trylock(m):
        return
    with nogil:
        cp_mutex_lock(m)
