# The native mutex of native_mutex.h, for the modules that need a cheap lock
# (`from cproducer._native_mutex cimport cp_mutex, cp_mutex_lock, ...`); header-only.
cdef extern from "native_mutex.h":
    ctypedef struct cp_mutex:
        pass
    int cp_mutex_init(cp_mutex* m) nogil
    void cp_mutex_destroy(cp_mutex* m) nogil
    int cp_mutex_trylock(cp_mutex* m) nogil
    void cp_mutex_lock(cp_mutex* m) nogil
    void cp_mutex_unlock(cp_mutex* m) nogil
