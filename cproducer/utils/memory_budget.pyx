# cython: freethreading_compatible=False
# Free-threaded Python: not declared safe yet (its accounting runs in the BufferPool under the
# pool's native mutex, but that has not been reviewed for running without the GIL).
"""MemoryBudget: what a record batch charges for the memory it holds beyond its pooled buffer.

Java's ``buffer.memory`` bounds what the producer holds for records not yet acknowledged. A batch
holds more than its pooled buffer here: with a codec its records are written uncompressed and
may outgrow the buffer (compressed when the batch is closed), and it keeps each record's
completion state. Those take their memory through this interface, from the ``BufferPool``:

- ``try_reserve(n)``: take ``n`` bytes if they are free now, never waiting (it is called under a
  partition's lock); False means "no": the batch counts as full and the record goes to a new
  batch, whose buffer is allocated the blocking way (``max.block.ms``).
- ``force_reserve(n)``: take ``n`` bytes even past the limit, for the few charges that cannot be
  refused (the first record of a batch, a callback added to a sent record); the budget runs
  into debt and blocks the next allocations until enough comes back.
- ``release(n)``: give back.

This base class is unlimited and keeps no account (builders made outside a producer use it).
"""


cdef class MemoryBudget:
    cdef bint try_reserve(self, Py_ssize_t n) noexcept:
        return True

    cdef void force_reserve(self, Py_ssize_t n) noexcept:
        pass

    cdef void release(self, Py_ssize_t n) noexcept:
        pass


cdef extern from *:
    """
    #include <stdlib.h>
    #if defined(__GLIBC__)
    #include <malloc.h>
    static int cp_malloc_trim(void) { return malloc_trim(0); }
    #else
    static int cp_malloc_trim(void) { return 0; }
    #endif
    """
    int cp_malloc_trim() nogil


def release_free_memory():
    """Hand the C allocator's free memory back to the operating system (glibc's
    ``malloc_trim(0)``; elsewhere nothing). Buffers freed by finished batches stay in glibc's
    arenas otherwise, and count in the process's RSS. True when something was handed back."""
    cdef int released
    with nogil:
        released = cp_malloc_trim()
    return released != 0
