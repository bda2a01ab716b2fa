"""asv: the built-in (KIP-794) partitioner: partition switches (uniform and adaptive), the load
stats update, keyed choice. Loops of 1000 per sample: divide by 1000 for one call."""

import numpy as np

from cproducer.cluster import Cluster, Node, PartitionInfo
from cproducer.producer.internals.built_in_partitioner import BuiltInPartitioner

NODE = Node(1, "h", 9092)
CALLS = 1000
BATCH = 16384


def _cluster(n):
    return Cluster([NODE], [PartitionInfo("t", p, NODE, (NODE,), (NODE,)) for p in range(n)])


class NextPartition:
    """One partition switch: ``next_partition`` alone, and the sticky switch as the accumulator
    does it (peek, then an update of batch.size bytes that switches)."""

    params = (["uniform", "adaptive"], [6, 100])
    param_names = ["stats", "partitions"]

    def setup(self, stats, partitions):
        self.cluster = _cluster(partitions)
        self.bp = BuiltInPartitioner("t", BATCH)
        if stats == "adaptive":
            sizes = np.arange(partitions, dtype=np.int32) % 7
            self.bp.update_partition_load_stats(
                sizes, np.arange(partitions, dtype=np.int32), partitions
            )
            assert self.bp.load_stats is not None

    def time_1000_next_partition(self, stats, partitions):
        next_partition, cluster = self.bp.next_partition, self.cluster
        for _ in range(CALLS):
            next_partition(cluster)

    def time_1000_sticky_switches(self, stats, partitions):
        peek, update, cluster = (
            self.bp.peek_current_partition_info,
            self.bp.update_partition_info,
            self.cluster,
        )
        for _ in range(CALLS):
            update(peek(cluster), BATCH, cluster, True)


class LoadStatsUpdate:
    """``update_partition_load_stats`` from int32 queue sizes (a fresh array per call, as the
    accumulator's ready() makes them; the copy is part of the time)."""

    params = [6, 100]
    param_names = ["partitions"]

    def setup(self, partitions):
        self.bp = BuiltInPartitioner("t", BATCH)
        self.sizes = (np.arange(partitions, dtype=np.int32) * 7) % 11
        self.ids = np.arange(partitions, dtype=np.int32)

    def time_1000_updates(self, partitions):
        update, sizes, ids = self.bp.update_partition_load_stats, self.sizes, self.ids
        for _ in range(CALLS):
            update(sizes.copy(), ids, partitions)

    def time_1000_array_copies(self, partitions):
        # the copy alone, to subtract
        sizes = self.sizes
        for _ in range(CALLS):
            sizes.copy()


class KeyedPartition:
    def setup(self):
        self.keys = [b"user-%d" % i for i in range(CALLS)]

    def time_1000_partition_for_key(self):
        for_key = BuiltInPartitioner.partition_for_key
        for key in self.keys:
            for_key(key, 100)
