# Where memory beyond a batch's own buffer is charged: `from cproducer.utils.memory_budget cimport
# MemoryBudget`. The BufferPool is one (buffer.memory); the base class charges nothing.
cdef class MemoryBudget:
    cdef bint try_reserve(self, Py_ssize_t n) noexcept
    cdef void force_reserve(self, Py_ssize_t n) noexcept
    cdef void release(self, Py_ssize_t n) noexcept
