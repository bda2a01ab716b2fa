cimport cython
from cproducer.producer.internals.built_in_partitioner cimport BuiltInPartitioner
from cproducer.record.record_batch_builder cimport RecordBatchBuilder


# What a record's callback needs at completion, kept in the batch (not its future): the loop that
# runs a batch's callbacks reads these in order, not one cold future object per record.
cdef struct RecordThunk:
    int rel
    int key_size
    int value_size
    long long timestamp


cdef class ProducerBatch:
    cdef readonly object topic_partition
    cdef readonly str topic
    cdef readonly int partition
    cdef readonly RecordBatchBuilder builder
    cdef readonly long long created_ms
    cdef public long long last_attempt_ms
    cdef public long long last_append_time
    cdef public long long drained_ms
    cdef public int attempts
    cdef public bint retry
    cdef readonly int final_state
    cdef readonly object result
    cdef list thunks  # the callbacks, in record order; thunk_data[i] is thunks[i]'s record
    cdef list segments
    cdef public int max_record_size
    cdef public object pooled_buffer
    cdef readonly bint is_splitting_batch
    cdef public long long backoff_ms
    cdef object _lock

    cdef object _try_append(self, long long timestamp, object key, object value, object headers,
                            object callback, long long now)
    cdef void _add_thunk(self, object fut, object fn) except *
    cdef bint _done(self, long long base_offset, long long log_append_time, object exc,
                    object record_exceptions, int state) except *
    cdef RecordThunk* thunk_data
    cdef Py_ssize_t thunk_capacity
    cdef int _push_thunk(self, Py_ssize_t at, int rel, int key_size, int value_size,
                         long long timestamp, object fn) except -1


cdef class FastLock:
    cdef void* _lock  # a cp_mutex (pthread mutex / SRWLOCK), see native_mutex.h
    cdef void acquire_c(self) noexcept
    cdef void release_c(self) noexcept


@cython.no_gc
cdef class RecordAppendResult:
    cdef readonly object future
    cdef readonly bint batch_is_full
    cdef readonly bint new_batch_created
    cdef readonly bint abort_for_new_batch
    cdef readonly int appended_bytes


cdef class PartitionDeque:
    cdef readonly object tp
    cdef readonly object batches
    cdef readonly FastLock lock


cdef class TopicInfo:
    cdef readonly str topic
    cdef public double compression_ratio
    cdef readonly dict deques
    cdef readonly BuiltInPartitioner partitioner
    cdef object lock

    cdef PartitionDeque get_or_create(self, int partition)
    # new fields go last: modules compiled against the older layout keep working
    cdef list _by_partition


cdef class RecordAccumulator:
    cdef readonly int batch_size
    cdef readonly int compression_type
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

    cdef TopicInfo _topic_info(self, str topic)
    cdef object _try_append_dq(self, PartitionDeque dq, long long timestamp, key, value, headers,
                               callback, long long now)
    cpdef object append(self, str topic, int partition, long long timestamp, key, value, headers,
                        callback, double max_time_to_block_ms, bint abort_on_new_batch,
                        long long now_ms, cluster)
    cdef object _append_new_batch(self, PartitionDeque dq, long long timestamp, key, value,
                                  headers, callback, buffer, long long now)
    cdef bint _should_stop_drain(self, ProducerBatch first, tp) except -1
    cdef list _drain_node(self, cluster, int node_id, int max_size, long long now)
    cdef long long _backoff(self, int attempts)
    cdef void _update_compression_ratio(self, TopicInfo ti, double observed)
    cdef void _insert_in_sequence_order(self, PartitionDeque dq, ProducerBatch batch)
    cdef void _abort_batches(self, exc, bint undrained_only) except *
    # new fields and methods go last: modules compiled against the older layout keep working
    cdef str _last_topic
    cdef TopicInfo _last_ti
    cdef ProducerBatch _new_batch(self, PartitionDeque dq, buffer, long long now)
    cdef ProducerBatch _make_batch(self, PartitionDeque dq, buffer, long long now)
    cdef void _register_batch(self, PartitionDeque dq, ProducerBatch batch) except *
