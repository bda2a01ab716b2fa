# The metadata's version, read in C by the send paths:
# `from cproducer.producer.internals.metadata_version cimport MetadataVersion`.
cimport cython


@cython.final
cdef class MetadataVersion:
    cdef public long long value
