# cython: freethreading_compatible=False
# Free-threaded Python: keeps the GIL. The count is written under the metadata's lock and read
# by the send paths without one: one int64 store and load, each atomic only under the GIL.
"""The metadata's version as a C field, for the per-record send paths.

Every record checks that its topic's partitions are still those of the current metadata
version. ``ProducerMetadata.version`` is a Python attribute: an instance-dictionary lookup per
read, twice per record on ``cproducer.aio``'s path (its check, then the engine's). The send
paths hold this object instead and read ``value`` in C; ``ProducerMetadata.version`` reads and
writes it too, so every other reader and writer is unchanged.
"""

cimport cython


@cython.final
cdef class MetadataVersion:
    """A metadata version: 0 before the first update, bumped by every successful one."""

    def __init__(self, long long value=0):
        self.value = value

    def __repr__(self):
        return f"MetadataVersion({self.value})"
