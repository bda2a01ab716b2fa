# ProducerBatch at C level, for the accumulator and send_many:
# `from cproducer.producer.internals.producer_batch cimport ProducerBatch, STATE_IN_FLIGHT`.
from cproducer.producer.internals.produce_request_result cimport ProduceRequestResult
from cproducer.record.record_batch_builder cimport RecordBatchBuilder
from cproducer.utils.fast_lock cimport FastLock


# ProducerBatch.final_state (Java's FinalState, plus "in flight" and "split into new batches")
cdef enum:
    STATE_IN_FLIGHT = 0
    STATE_SUCCEEDED = 1
    STATE_FAILED = 2
    STATE_SPLIT = 3
    STATE_ABORTED = 4


# What a record's callback needs at completion, kept in the batch (not its future): the loop that
# runs a batch's callbacks reads these in order, not one cold future object per record.
cdef struct RecordThunk:
    int rel
    int key_size
    int value_size
    int header_size  # kafka-python's serialized_header_size: -1 without headers
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
    cdef readonly ProduceRequestResult result
    cdef list thunks  # the callbacks, in record order; thunk_data[i] is thunks[i]'s record
    cdef RecordThunk* thunk_data
    cdef Py_ssize_t thunk_capacity
    cdef list segments
    cdef public int max_record_size
    cdef public object pooled_buffer
    cdef readonly bint is_splitting_batch
    cdef public long long backoff_ms
    cdef public int leader_epoch  # its partition's leader epoch when last drained (-1: unknown)
    cdef FastLock _lock
    cdef Py_ssize_t _thunk_charge  # bytes of the thunks charged to the builder's memory budget

    cdef object _try_append(self, long long timestamp, object key, object value, object headers,
                            object callback, long long now)
    cdef void _add_thunk(self, object fut, object fn) except *
    cdef bint _done(self, long long base_offset, long long log_append_time, object exc,
                    object record_exceptions, int state) except *
    cdef int _push_thunk(self, Py_ssize_t at, int rel, int key_size, int value_size,
                         int header_size, long long timestamp, object fn) except -1
    cdef int _grow_thunks(self, bint may_refuse) except -1
    cdef void _free_thunks(self) noexcept


# Java's closeForRecordAppends: the builder reports full and takes no more records, even its
# first (its bytes stay as they are; close() still finishes the batch)
cdef inline void close_for_record_appends(RecordBatchBuilder builder) noexcept:
    builder._appends_closed = True


cdef inline int check_exception(object exc, str name) except -1:
    if not isinstance(exc, BaseException):
        raise TypeError(f"{name} must be an exception instance, got {type(exc).__name__}")
    return 0
