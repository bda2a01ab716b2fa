# A topic's partition deques (Java's RecordAccumulator.TopicInfo and its Deque<ProducerBatch>), at
# C level for the accumulator and send_many; the deque predicates inline for the append path.
from cpython.sequence cimport PySequence_GetItem

from cproducer.producer.internals.built_in_partitioner cimport (BuiltInPartitioner,
                                                                StickyPartitionInfo)
from cproducer.producer.internals.producer_batch cimport ProducerBatch
from cproducer.utils.fast_lock cimport FastLock


cdef enum:
    # the smallest buffer a partition's batch starts in (see the accumulator's
    # _next_buffer_size); a partition's first batch starts in one
    MIN_BUFFER_BYTES = 1024


cdef class PartitionDeque:
    cdef readonly object tp
    cdef readonly object batches
    cdef readonly FastLock lock
    # bytes of the buffer the partition's next batch starts in (0: batch.size), from the size
    # its last drained batch reached (the accumulator's _next_buffer_size)
    cdef public Py_ssize_t buffer_size


cdef class TopicInfo:
    cdef readonly str topic
    cdef public double compression_ratio
    cdef readonly dict deques
    cdef readonly BuiltInPartitioner partitioner
    cdef object lock

    cdef list _by_partition

    cdef PartitionDeque get_or_create(self, int partition)


# Java's allBatchesFull: the last batch is full (the others are, being older)
cdef inline bint all_batches_full(PartitionDeque dq) except -1:
    if not dq.batches:
        return True
    # the last: a negative index here, where .pxd code is compiled without wraparound
    return (<ProducerBatch>PySequence_GetItem(dq.batches, -1)).builder.is_full_c()


# Java's partitionChanged (call with dq.lock held): another thread switched the sticky partition,
# or a switch an incomplete batch held back (enable_switch False) is due now that the queue's
# batches are all full or gone (sent)
cdef inline bint partition_changed(BuiltInPartitioner bp, StickyPartitionInfo info,
                                   PartitionDeque dq, cluster) except -1:
    if info is None:
        return False
    if bp.is_partition_changed(info):
        return True
    if all_batches_full(dq):
        bp.update_partition_info(info, 0, cluster, True)
        return bp.is_partition_changed(info)
    return False
