"""asv: RecordAccumulator append (open batch) and ready/drain of one node with many partitions."""

import time

from cproducer.cluster import Cluster, Node, PartitionInfo
from cproducer.producer.internals.buffer_pool import BufferPool
from cproducer.producer.internals.record_accumulator import RecordAccumulator

NODE = Node(1, "h", 9092)
RECORDS = 20_000
BATCH = 4 << 20  # holds RECORDS 100-byte records: the batch stays open


def _cluster(n):
    return Cluster([NODE], [PartitionInfo("t", p, NODE, (NODE,), (NODE,)) for p in range(n)])


def _prefaulted_pool(count, size):
    # pooled buffers come back touched, as in a running producer (no page faults while timing)
    pool = BufferPool(count * size, size)
    bufs = [pool.allocate(size, 1000.0) for _ in range(count)]
    for buf in bufs:
        buf[:] = bytes(size)
        pool.deallocate(buf)
    return pool


class AccumulatorAppend:
    """A 100-byte record (value only) through ``append``, into an open batch of a partition
    that is already chosen (explicit), or chosen by the built-in sticky partitioner."""

    params = ["explicit", "sticky"]
    param_names = ["partition"]
    number = 1
    repeat = (10, 40, 20.0)

    def setup(self, mode):
        self.cluster = _cluster(6)
        self.acc = RecordAccumulator(BATCH, 0, 5, 100, 1000, 120_000, _prefaulted_pool(2, BATCH))
        self.partition = 1 if mode == "explicit" else -1
        self.value = b"v" * 100
        self._reopen()

    def _reopen(self):
        # empty the accumulator (buffer back to the pool) and open a batch again
        acc = self.acc
        while acc.has_undrained():
            for batch in acc.drain(self.cluster, {1}, 1 << 30, 0)[1]:
                batch.complete(0, -1)
                acc.deallocate(batch)
        acc.append(
            "t", self.partition, 1000, None, self.value, None, None, 1000.0, False, 0, self.cluster
        )

    def _appends(self):
        app, c, v, p = self.acc.append, self.cluster, self.value, self.partition
        for _ in range(RECORDS):
            app("t", p, 1000, None, v, None, None, 1000.0, False, 0, c)

    def time_append_20k(self, mode):
        self._appends()
        self._reopen()

    def track_ns_per_append(self, mode):
        best = float("inf")
        for _ in range(7):
            t0 = time.perf_counter()
            self._appends()
            best = min(best, time.perf_counter() - t0)
            self._reopen()
        return best / RECORDS * 1e9

    track_ns_per_append.unit = "ns"


class AccumulatorDrain:
    """``ready`` and ``drain`` of one node leading 1000 partitions, a 10-record batch each."""

    params = [1000]
    param_names = ["partitions"]
    number = 1
    repeat = (10, 40, 20.0)

    def setup(self, n):
        self.cluster = _cluster(n)
        self.acc = RecordAccumulator(16384, 0, 0, 100, 1000, 120_000, BufferPool(1 << 26, 16384))
        value = b"d" * 100
        for p in range(n):
            for _ in range(10):
                self.acc.append(
                    "t", p, 1000, None, value, None, None, 1000.0, False, 0, self.cluster
                )

    def time_ready(self, n):
        self.acc.ready(self.cluster, 10)

    def time_drain_all(self, n):
        batches = self.acc.drain(self.cluster, {1}, 1 << 30, 10)[1]
        assert len(batches) == n

    def time_drain_1mb_request(self, n):
        self.acc.drain(self.cluster, {1}, 1 << 20, 10)


class BatchCompletion:
    """Completing a batch of 10k records: every record's callback with its RecordMetadata (one
    shared callback, as the perf CLI's), the record futures dropped at send as most callers do."""

    def setup(self):
        self.hits = [0]

    def _batch(self):
        from cproducer.cluster import TopicPartition
        from cproducer.producer.internals.producer_batch import ProducerBatch
        from cproducer.record.record_batch_builder import RecordBatchBuilder

        hits = self.hits

        def on_completion(md, exc):
            hits[0] += 1

        b = ProducerBatch(TopicPartition("t", 0), RecordBatchBuilder(bytearray(BATCH), 0, BATCH), 0)
        for i in range(10_000):
            b.try_append(1000 + i, None, b"v" * 100, None, on_completion, 0)
        return b

    def track_ns_per_completed_record(self):
        best = float("inf")
        for _ in range(7):
            b = self._batch()
            t0 = time.perf_counter()
            b.complete(0, -1)
            best = min(best, time.perf_counter() - t0)
        return best / 10_000 * 1e9

    track_ns_per_completed_record.unit = "ns"
