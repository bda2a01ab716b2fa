# The outcome of a batch and the per-record views of it, for the modules that make them
# (producer_batch, the accumulator, send_many): `from ...produce_request_result cimport ...`.
cimport cython
from cpython.object cimport PyObject, PyTypeObject


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
    cdef int _header_size

    cdef void _follow(self) except *
    cdef object _metadata(self)
    cdef object _error(self)


# What a completed record reports: its offset, -1 without one (acks=0); its timestamp, the
# log-append time when the broker gave one, else the record's own.
cdef inline long long record_offset(long long base_offset, int rel) noexcept:
    return -1 if base_offset < 0 else base_offset + rel


cdef inline long long record_timestamp(long long log_append_time, long long create_ts) noexcept:
    return log_append_time if log_append_time != -1 else create_ts


# A filled plain tuple made an instance of a named tuple type, with no Python call (a completion
# runs per record): ``tuple_layout_type`` checks once that the type adds no storage to tuple
# (``__slots__ = ()``); ``as_named_tuple`` retypes the tuple, which must hold str, int, None and
# tuples of those only (no reference cycle possible: it leaves the GC's lists at once).
cdef PyTypeObject* tuple_layout_type(type cls) except NULL
cdef PyObject* as_named_tuple(PyObject* t, PyTypeObject* tp) noexcept


# A record's callback that its batch completes in C with the record's fields: no RecordMetadata
# tuple and no argument tuple per record (cproducer.aio's deliveries). Its type registers the C
# function once; every other path calls the callback as ``fn(metadata, exception)``. On
# success: exc None, offset -1 without one (acks=0), timestamp the log-append time when the
# broker gave one, else the record's own; on failure: exc, and the fields -1/None.
ctypedef int (*RecordCompletedFn)(object callback, str topic, int partition,
                                  object topic_partition, long long offset, long long timestamp,
                                  object exc) except -1

cdef int register_record_completion(type callback_type, RecordCompletedFn fn) except -1
# the registered function of ``callback``'s exact type, or NULL: call it
cdef RecordCompletedFn record_completion_of(object callback) noexcept


# A RecordMetadata (kafka-python's namedtuple) for record ``rel`` of a batch: offset -1 without
# one (acks=0), the log-append time when the broker gave one, else the record's own timestamp.
cdef object new_record_metadata(str topic, int partition, object topic_partition,
                                long long base_offset, long long log_append_time, int rel,
                                long long create_ts, int key_size, int value_size,
                                int header_size)


# The RecordMetadata of each record of one completed batch, in turn: the last tuple is reused when
# nobody kept it (see the class).
@cython.final
@cython.no_gc
cdef class RecordMetadataMaker:
    cdef PyObject* _last  # owned; NULL before the first
    cdef object _topic
    cdef object _topic_partition
    cdef int _partition
    cdef long long _base_offset
    cdef long long _log_append_time
    # the fields of _last, as C values
    cdef long long _offset
    cdef long long _timestamp
    cdef int _key_size
    cdef int _value_size
    cdef int _header_size

    cdef object make(self, int rel, long long create_ts, int key_size, int value_size,
                     int header_size)


cdef RecordMetadataMaker new_record_metadata_maker(str topic, int partition,
                                                   object topic_partition,
                                                   long long base_offset,
                                                   long long log_append_time)


# A record's future (made in this module: its type's tp_new called directly, no type call)
cdef FutureRecordMetadata new_future(object batch, ProduceRequestResult result, int rel,
                                     long long create_ts, int key_size, int value_size,
                                     int header_size)
