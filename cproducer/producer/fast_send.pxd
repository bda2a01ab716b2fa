# The per-record fast path of KafkaProducer.send at C level, for the other C send paths
# (cproducer.aio): `from cproducer.producer.fast_send cimport FastSend`.
from cproducer.network.selector_wakeup cimport SelectorWakeup
from cproducer.producer.internals.metadata_version cimport MetadataVersion
from cproducer.producer.internals.record_accumulator cimport RecordAccumulator


cdef class _TopicState:
    cdef int count
    cdef object cluster
    cdef long long version
    cdef long long last_used_ms  # written to the metadata's topics (-1: not yet)


cdef class FastSend:
    cdef RecordAccumulator acc
    cdef object metadata
    cdef MetadataVersion metadata_version  # the metadata's version, read in C
    cdef dict topics_last_used
    cdef dict states
    cdef object slow
    cdef object wakeup
    cdef SelectorWakeup waker  # None: wakeup is some other function
    cdef long long max_request_size
    cdef long long total_memory
    cdef double max_block_ms
    cdef bint ignore_keys
    # a Clock (cproducer.utils.time) when one was injected; None: the system's, read in C
    cdef object clock
    # every send goes to the slow path: the producer is closed, or (transactional) no
    # transaction is open, and the slow path says which
    cdef public bint divert

    # KafkaProducer.send (its arguments in that order): the record's future, from the fast path
    # or from the producer's Python path
    cdef object send_c(self, topic, value, key, headers, partition, timestamp_ms, callback)
