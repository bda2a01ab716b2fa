from libc.stdint cimport uint64_t


cdef class StickyPartitionInfo:
    cdef readonly int index
    cdef public long long produced_bytes


cdef class BuiltInPartitioner:
    cdef readonly str topic
    cdef readonly int sticky_batch_size
    cdef object _random            # injected zero-arg callable (tests), or None: splitmix64
    cdef uint64_t _state           # splitmix64 state, seeded from os.urandom
    cdef StickyPartitionInfo _sticky
    cdef object _partition_cache   # _PartitionCache of the last cluster seen (swapped whole)
    cdef object _stats             # PartitionLoadStats or None (swapped whole)

    cdef int _next_random(self) except -1
    cpdef int next_partition(self, cluster) except -2
    cpdef StickyPartitionInfo peek_current_partition_info(self, cluster)
    cpdef bint is_partition_changed(self, StickyPartitionInfo info)
    cpdef void update_partition_info(self, StickyPartitionInfo info, int appended_bytes, cluster,
                                     bint enable_switch=*) except *
    cpdef void update_partition_load_stats(self, queue_sizes, partition_ids, int length) except *
