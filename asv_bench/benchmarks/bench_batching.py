"""asv: BufferPool, partitioner choice, accumulator append (issue: batching)."""

import numpy as np

from cproducer.cluster import Cluster, Node, PartitionInfo
from cproducer.producer.internals.buffer_pool import BufferPool
from cproducer.producer.internals.built_in_partitioner import BuiltInPartitioner
from cproducer.producer.internals.record_accumulator import RecordAccumulator

NODE = Node(1, "h", 9092)


def _cluster(n):
    return Cluster([NODE], [PartitionInfo("t", p, NODE, (NODE,), (NODE,)) for p in range(n)])


class BufferPoolSuite:
    def setup(self):
        self.pool = BufferPool(1 << 25, 16384)
        self.pool.deallocate(self.pool.allocate(16384, 1000))

    def time_pooled_allocate_deallocate_10k(self):
        alloc, dealloc = self.pool.allocate, self.pool.deallocate
        for _ in range(10_000):
            dealloc(alloc(16384, 1000.0))


class PartitionerSuite:
    params = ["uniform", "adaptive"]
    param_names = ["mode"]

    def setup(self, mode):
        self.cluster = _cluster(100)
        self.bp = BuiltInPartitioner("t", 16384)
        if mode == "adaptive":
            sizes = np.random.default_rng(0).integers(0, 10, 100).astype(np.int32)
            self.bp.update_partition_load_stats(sizes, np.arange(100, dtype=np.int32), 100)

    def time_partition_switch_1k(self, mode):
        nxt = self.bp.next_partition
        for _ in range(1000):
            nxt(self.cluster)

    def time_update_load_stats_100_partitions(self, mode):
        sizes = np.arange(100, dtype=np.int32) % 7
        self.bp.update_partition_load_stats(sizes, np.arange(100, dtype=np.int32), 100)


class AccumulatorAppend:
    """A 100-byte record through RecordAccumulator.append, partition chosen, batch open."""

    def setup(self):
        self.cluster = _cluster(6)
        self.acc = RecordAccumulator(1 << 30, 0, 5, 100, 1000, 120000, BufferPool(1 << 31, 1 << 30))
        self.key = b"k" * 10
        self.value = b"v" * 100

    def time_append_100k(self):
        app, c, k, v = self.acc.append, self.cluster, self.key, self.value
        for _ in range(100_000):
            app("t", 1, 1000, k, v, None, None, 1000.0, False, 0, c)
