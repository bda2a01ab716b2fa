# Message and DeliveryReports at C level, for the facade's produce path (see message.pyx).
cimport cython


@cython.no_gc
cdef class Message:
    cdef object _topic
    cdef object _key
    cdef object _value
    cdef object _headers
    cdef object _error
    cdef int _partition
    cdef long long _offset
    cdef long long _timestamp
    cdef int _tstype
    cdef long long _latency_us
    cdef long long _leader_epoch
    # produce -> delivery report
    cdef object callback
    cdef DeliveryReports reports
    cdef long long started_ns
    cdef Py_ssize_t value_len
    cdef int state

    cdef void complete_with(self, error) except *


cdef class DeliveryReports:
    cdef list ready
    cdef list events
    cdef readonly long long count
    cdef readonly long long size
    cdef bint waiting
    cdef object event
    cdef public bint only_errors
    cdef public long long failed

    cdef void push(self, Message m) except *
    cdef bint reserve(self, Py_ssize_t value_len, long long max_count, long long max_size) noexcept
    cdef void release(self, Py_ssize_t value_len) noexcept


cdef Message new_message(DeliveryReports reports, topic, key, value, Py_ssize_t value_len,
                         int partition, long long timestamp, callback)
