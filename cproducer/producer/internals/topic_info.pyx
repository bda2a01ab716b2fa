# cython: freethreading_compatible=False
# Free-threaded Python: keeps the GIL, as the accumulator does. get_or_create reads a topic's
# partition list without a lock, which is safe only while the GIL makes that read atomic.
"""A topic's partition deques: Java's ``RecordAccumulator.TopicInfo`` and the per-partition
``Deque<ProducerBatch>`` (here with its own lock), filled by the accumulator's appends."""

import threading
from collections import deque

from cproducer.cluster import TopicPartition


cdef class PartitionDeque:
    """The batches of one partition, oldest first, under their own lock."""

    def __init__(self, tp):
        self.tp = tp
        self.batches = deque()
        self.lock = FastLock()
        self.buffer_size = MIN_BUFFER_BYTES


cdef class TopicInfo:
    """Java's TopicInfo: a topic's partition deques and its built-in (sticky) partitioner."""

    def __init__(self, str topic, int batch_size, random):
        self.topic = topic
        self.compression_ratio = 1.0  # Java's CompressionRatioEstimator, per topic
        self.deques = {}
        self.partitioner = BuiltInPartitioner(topic, batch_size, random)
        self.lock = threading.Lock()
        self._by_partition = []

    cdef PartitionDeque get_or_create(self, int partition):
        # Lock-free read of a list indexed by partition (replaced, never mutated in place, so a
        # reader sees the old or the new list); the dict keeps Java's map for everything else.
        cdef list by_partition = self._by_partition
        cdef PartitionDeque dq
        if 0 <= partition < len(by_partition):
            dq = <PartitionDeque>by_partition[partition]
            if dq is not None:
                return dq
        with self.lock:
            dq = self.deques.get(partition)
            if dq is None:
                dq = PartitionDeque(TopicPartition(self.topic, partition))
                self.deques[partition] = dq
            if partition >= 0:
                by_partition = list(self._by_partition)
                if partition >= len(by_partition):
                    by_partition.extend([None] * (partition + 1 - len(by_partition)))
                by_partition[partition] = dq
                self._by_partition = by_partition
        return dq
