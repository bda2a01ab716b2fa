# The outcome of a batch and the per-record views of it, for the modules that make them
# (producer_batch, the accumulator, send_many): `from ...produce_request_result cimport ...`.
cimport cython


@cython.no_gc
@cython.freelist(64)
cdef class RecordMetadata:
    cdef readonly str topic
    cdef readonly int partition
    cdef readonly long long offset
    cdef readonly long long timestamp
    cdef readonly int serialized_key_size
    cdef readonly int serialized_value_size

    cdef tuple _key(self)


cdef class ProduceRequestResult:
    cdef readonly object topic_partition
    cdef readonly long long base_offset
    cdef readonly long long log_append_time
    cdef object _error
    cdef object _record_errors
    cdef object _event
    cdef bint _is_set
    cdef readonly bint completed
    # after a split: old relative offset -> (new batch, new relative offset)
    cdef public object forward

    cpdef object error_for(self, int relative_offset)


@cython.no_gc
@cython.freelist(64)
cdef class FutureRecordMetadata:
    cdef ProduceRequestResult _result
    # the ProducerBatch holding the record (untyped here: the batch module cimports this one)
    cdef object _batch
    cdef int _rel
    cdef long long _create_ts
    cdef int _key_size
    cdef int _value_size

    cdef void _follow(self) except *
    cdef RecordMetadata _metadata(self)
    cdef object _error(self)


cdef inline RecordMetadata new_record_metadata(str topic, int partition, long long base_offset,
                                               long long log_append_time, int rel,
                                               long long create_ts, int key_size,
                                               int value_size):
    # where record ``rel`` of a batch landed (offset -1 without one, as with acks=0)
    cdef RecordMetadata md = RecordMetadata.__new__(RecordMetadata)
    md.topic = topic
    md.partition = partition
    md.offset = -1 if base_offset < 0 else base_offset + rel
    md.timestamp = log_append_time if log_append_time != -1 else create_ts
    md.serialized_key_size = key_size
    md.serialized_value_size = value_size
    return md


cdef inline FutureRecordMetadata new_future(object batch, ProduceRequestResult result, int rel,
                                            long long create_ts, int key_size, int value_size):
    cdef FutureRecordMetadata f = FutureRecordMetadata.__new__(FutureRecordMetadata)
    f._batch = batch
    f._result = result
    f._rel = rel
    f._create_ts = create_ts
    f._key_size = key_size
    f._value_size = value_size
    return f
