# RecordAccumulator at C level, for the C fast paths of send and send_many.
cimport cython
from cproducer.producer.internals.producer_batch cimport ProducerBatch
# PartitionDeque and TopicInfo are cimported from here by send_many
from cproducer.producer.internals.topic_info cimport PartitionDeque, TopicInfo
from cproducer.record.record_batch_builder cimport RecordBatchBuilder
from cproducer.utils.fast_lock cimport FastLock


@cython.no_gc
cdef class RecordAppendResult:
    cdef readonly object future
    cdef readonly bint batch_is_full
    cdef readonly bint new_batch_created
    cdef readonly bint abort_for_new_batch
    cdef readonly int appended_bytes


cdef class RecordAccumulator:
    cdef readonly int batch_size
    cdef readonly int compression_type
    cdef readonly object compression_level
    cdef readonly long long linger_ms
    cdef readonly long long retry_backoff_ms
    cdef readonly long long retry_backoff_max_ms
    cdef readonly long long delivery_timeout_ms
    cdef readonly object pool
    cdef readonly bint adaptive
    cdef readonly long long availability_timeout_ms
    cdef readonly object transaction_manager
    cdef object random
    cdef readonly dict topic_infos
    cdef object topic_lock
    cdef readonly set incomplete
    cdef object incomplete_lock
    cdef readonly set muted
    cdef dict node_drain_index
    cdef readonly dict node_stats
    cdef public int flushes_in_progress
    cdef public int appends_in_progress
    cdef public bint closed
    cdef object _jitter
    cdef str _last_topic
    cdef TopicInfo _last_ti
    cdef object _budget  # the pool when it is a MemoryBudget (batches charge it), else None
    # called before append() waits for memory (the producer wakes its Sender)
    cdef public object memory_wait_hook
    cdef readonly int max_batch_records

    cdef TopicInfo _topic_info(self, str topic)
    cdef object _try_append_dq(self, PartitionDeque dq, long long timestamp, key, value, headers,
                               callback, long long now)
    cpdef object append(self, str topic, int partition, long long timestamp, key, value, headers,
                        callback, double max_time_to_block_ms, bint abort_on_new_batch,
                        long long now_ms, cluster)
    cdef object _append_new_batch(self, PartitionDeque dq, long long timestamp, key, value,
                                  headers, callback, buffer, long long now)
    cdef list _drain_node(self, cluster, int node_id, int max_size, long long now)
    cdef list _all_deques(self)
    cdef long long _backoff(self, int attempts)
    cdef void _update_compression_ratio(self, TopicInfo ti, double observed)
    cdef void _insert_in_sequence_order(self, PartitionDeque dq, ProducerBatch batch)
    cdef void _abort_batches(self, exc, bint undrained_only) except *
    cdef int _check_record_count(self, RecordBatchBuilder b) except -1
    cdef ProducerBatch _new_batch(self, PartitionDeque dq, buffer, long long now)
    cdef ProducerBatch _make_batch(self, PartitionDeque dq, buffer, long long now)
    cdef void _register_batch(self, PartitionDeque dq, ProducerBatch batch) except *
