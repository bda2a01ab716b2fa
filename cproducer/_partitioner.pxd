from libc.stdint cimport uint64_t


cdef class StickyPartitionInfo:
    cdef readonly int index
    cdef public long long produced_bytes


cdef class BuiltInPartitioner:
    cdef readonly str topic
    cdef readonly int sticky_batch_size
    cdef object _random
    cdef uint64_t _state
    cdef StickyPartitionInfo _sticky
    cdef object _lock
    cdef object _cft
    cdef object _ids
    cdef int _length

    cdef int _next_random(self) except -1
    cpdef int next_partition(self, cluster) except -2
    cpdef StickyPartitionInfo peek_current_partition_info(self, cluster)
    cpdef bint is_partition_changed(self, StickyPartitionInfo info)
    cpdef void update_partition_info(self, StickyPartitionInfo info, int appended_bytes, cluster,
                                     bint enable_switch=*) except *
    cpdef void update_partition_load_stats(self, queue_sizes, partition_ids, int length) except *
