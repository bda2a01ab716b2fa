"""RecordAccumulator with a fake clock and static clusters (no network)."""

from __future__ import annotations

import itertools
import threading
import time

from kafka.record.default_records import DefaultRecordBatch

from cproducer._accumulator import RecordAccumulator
from cproducer._buffer_pool import BufferPool
from cproducer.cluster import Cluster, Node, PartitionInfo, TopicPartition
from cproducer.errors import KafkaError

N1, N2 = Node(1, "a", 1), Node(2, "b", 1)
TP0 = TopicPartition("t", 0)


def cluster(n=4, leaders=None):
    leaders = leaders or {}
    return Cluster(
        [N1, N2],
        [PartitionInfo("t", p, leaders.get(p, N1 if p % 2 == 0 else N2), (), ()) for p in range(n)],
    )


def acc(batch_size=1024, linger=10, memory=1 << 20, **kw):
    return RecordAccumulator(
        batch_size, 0, linger, 100, 1000, 120_000, BufferPool(memory, batch_size), **kw
    )


def append(a, c, partition=0, value=b"v" * 100, now=0, key=None, cb=None, block_ms=1000.0):
    return a.append("t", partition, 1000, key, value, None, cb, block_ms, False, now, c)


def test_linger_expiry_makes_node_ready() -> None:
    a, c = acc(linger=10), cluster()
    append(a, c, 0, now=0)
    r = a.ready(c, 5)
    assert r.ready_nodes == set() and r.next_ready_check_delay_ms == 5
    assert a.ready(c, 10).ready_nodes == {1}


def test_full_batch_is_ready_before_linger() -> None:
    a, c = acc(batch_size=1024, linger=10_000), cluster()
    results = [append(a, c, 0) for _ in range(12)]
    assert any(r.new_batch_created for r in results[1:])
    assert results[-1].batch_is_full  # more than one batch in the deque
    assert a.ready(c, 0).ready_nodes == {1}


def test_retry_backoff_delays_readiness() -> None:
    a, c = acc(linger=0), cluster()
    append(a, c, 0)
    [batch] = a.drain(c, {1}, 1 << 20, 0)[1]
    a.reenqueue(batch, 100)
    assert batch.attempts == 1 and 80 <= batch.backoff_ms <= 120
    assert a.ready(c, 101).ready_nodes == set()
    assert a.ready(c, 100 + batch.backoff_ms).ready_nodes == {1}


def test_memory_exhaustion_blocks_appender_and_makes_partition_ready() -> None:
    a, c = acc(batch_size=1024, linger=10_000, memory=2048), cluster()
    append(a, c, 0)
    append(a, c, 1)  # both pooled buffers in use
    done = threading.Event()
    th = threading.Thread(target=lambda: (append(a, c, 2, block_ms=5000), done.set()))
    th.start()
    deadline = time.monotonic() + 5
    while a.pool.queued == 0:
        assert time.monotonic() < deadline
        time.sleep(0.001)
    assert a.ready(c, 0).ready_nodes == {1, 2}  # exhausted: everything is sendable
    batches = a.drain(c, {1}, 1 << 20, 0)[1]
    batches[0].complete(0, -1)
    a.deallocate(batches[0])
    assert done.wait(5)
    th.join()


def test_exact_sticky_switching_through_append() -> None:
    rnd = itertools.cycle([1, 2, 3]).__next__
    a, c = acc(batch_size=1024, linger=10_000, random=rnd), cluster()
    parts = []
    for _ in range(12):
        r = a.append("t", -1, 1000, None, b"x" * 200, None, None, 1000.0, False, 0, c)
        parts.append(r.future.topic_partition.partition)
    # ~205 bytes per record: the first batch fills after 4 records (enable_switch once full:
    # produced >= 1024 at the 5th record, which opened a new batch, so switch at 2 x 1024)
    assert parts[0] == 1
    switch = parts.index(2)
    assert 4 <= switch <= 10
    assert set(parts[:switch]) == {1}


def test_adaptive_queue_sizes_feed_the_partitioner() -> None:
    a, c = acc(batch_size=1024, linger=10_000), cluster(4)
    for p, n in ((0, 1), (1, 9), (2, 1), (3, 1)):
        for _ in range(n * 5):
            append(a, c, p)
    a.ready(c, 0)
    stats = a.topic_info("t").partitioner.load_stats
    assert stats is not None
    cft, ids, length = stats
    weights = dict(
        zip(ids[:length].tolist(), [cft[0]] + [int(x) for x in cft[1:length] - cft[: length - 1]])
    )
    assert weights[1] < weights[0] == weights[2] == weights[3]


def test_availability_timeout_leaves_out_a_slow_node() -> None:
    a, c = acc(batch_size=1024, linger=0, partitioner_availability_timeout_ms=50), cluster(4)
    for p in range(4):
        append(a, c, p)
    a.update_node_latency_stats(1, 0, True)
    a.update_node_latency_stats(2, 0, True)
    a.update_node_latency_stats(2, 100, False)  # node 2 ready but not drainable for 100 ms
    a.ready(c, 100)
    cft, ids, length = a.topic_info("t").partitioner.load_stats
    assert set(ids[:length].tolist()) == {0, 2}  # partitions 1 and 3 are led by node 2


def test_drain_rotates_start_so_no_partition_starves() -> None:
    a, c = acc(batch_size=1024, linger=0), cluster(6, leaders={p: N1 for p in range(6)})
    firsts = []
    for round_ in range(6):
        for p in range(6):
            append(a, c, p, value=b"z" * 600)
        drained = a.drain(c, {1}, 700, round_)[1]  # room for one batch per request
        assert len(drained) == 1
        firsts.append(drained[0].topic_partition.partition)
    assert sorted(firsts) == list(range(6))


def test_drain_respects_max_request_size_but_takes_one() -> None:
    a, c = acc(batch_size=1024, linger=0), cluster(2, leaders={0: N1, 1: N1})
    append(a, c, 0, value=b"q" * 900)
    append(a, c, 1, value=b"q" * 900)
    assert len(a.drain(c, {1}, 10, 0)[1]) == 1
    assert len(a.drain(c, {1}, 10, 0)[1]) == 1


class FakeTM:
    def __init__(self):
        self.seq = {}
        self.in_flight = []

    producer_id_and_epoch = (77, 3)

    def is_send_to_partition_allowed(self, tp):
        return True

    def has_producer_id(self):
        return True

    def next_batch_by_sequence(self, tp):
        return None

    def maybe_update_producer_id_and_epoch(self, tp):
        pass

    def sequence_number(self, tp):
        return self.seq.get(tp, 0)

    def is_transactional(self):
        return False

    def increment_sequence_number(self, tp, n):
        self.seq[tp] = self.seq.get(tp, 0) + n

    def add_in_flight_batch(self, b):
        self.in_flight.append(b)


def test_drain_assigns_sequences_in_order() -> None:
    tm = FakeTM()
    a, c = acc(batch_size=1024, linger=0, transaction_manager=tm), cluster(2)
    for _ in range(15):
        append(a, c, 0)
    seqs = []
    while True:
        d = a.drain(c, {1}, 1 << 20, 0)[1]
        if not d:
            break
        for b in d:
            parsed = DefaultRecordBatch(bytes(b.buffer()))
            assert (parsed.producer_id, parsed.producer_epoch) == (77, 3)
            seqs.append((parsed.base_sequence, b.record_count))
    expected, s = [], 0
    for _seq, n in seqs:
        expected.append((s, n))
        s += n
    assert seqs == expected and s == 15


def test_split_of_an_oversized_batch_keeps_records_order_and_callbacks() -> None:
    from cproducer._accumulator import ProducerBatch
    from cproducer._records import RecordBatchBuilder

    a, c = acc(batch_size=1024, linger=0), cluster(1, leaders={0: N1})
    big = ProducerBatch(TP0, RecordBatchBuilder(bytearray(8192), 0, 8192), 0)
    calls = []
    futures = []
    for i in range(30):
        cb = lambda md, exc, i=i: calls.append((i, md, exc))  # noqa: E731
        futures.append(big.try_append(1000 + i, None, b"%03d" % i * 40, None, cb, 0))
    big.close()  # as if drained and sent: the broker answered MESSAGE_TOO_LARGE
    count = a.split_and_reenqueue(big)
    assert count >= 3
    offset = 100
    while a.has_undrained():
        for b in a.drain(c, {1}, 1 << 20, 0)[1]:
            assert b.record_count * 123 < 1024 + 123
            b.complete(offset, -1)
            offset += b.record_count
    assert [i for i, _, _ in calls] == list(range(30))
    assert all(exc is None for _, _, exc in calls)
    assert [md.offset for _, md, _ in calls] == list(range(100, 130))
    assert [f.get(1).offset for f in futures] == list(range(100, 130))
    assert [f.get(1).timestamp for f in futures] == list(range(1000, 1030))


def test_expired_batches_after_delivery_timeout() -> None:
    a = RecordAccumulator(1024, 0, 10_000, 100, 1000, 500, BufferPool(1 << 20, 1024))
    c = cluster()
    append(a, c, 0, now=0)
    assert a.expired_batches(499) == []
    [b] = a.expired_batches(500)
    assert not a.has_undrained() and b.record_count == 1


def test_flush_waits_for_incomplete_batches() -> None:
    a, c = acc(linger=10_000), cluster()
    f = append(a, c, 0).future
    a.begin_flush()
    assert a.flush_in_progress() and a.ready(c, 0).ready_nodes == {1}

    def complete_later() -> None:
        time.sleep(0.05)
        for b in a.drain(c, {1}, 1 << 20, 0)[1]:
            b.complete(5, -1)

    th = threading.Thread(target=complete_later)
    th.start()
    assert a.await_flush_completion(5)
    th.join()
    assert f.get(0).offset == 5 and not a.flush_in_progress()


def test_abort_completes_every_callback_exactly_once() -> None:
    a, c = acc(batch_size=1024, linger=10_000), cluster()
    calls = []
    for i in range(50):
        append(a, c, i % 4, cb=lambda md, exc, i=i: calls.append((i, exc)))
    drained = a.drain(c, {1}, 1 << 20, 0)[1]  # some in flight, the rest undrained
    a.abort_incomplete_batches(KafkaError("closing"))
    a.abort_incomplete_batches(KafkaError("again"))
    for b in drained:
        assert not b.complete(0, -1)  # already failed: refused
    assert sorted(i for i, _ in calls) == list(range(50))
    assert all(isinstance(e, KafkaError) and str(e) == "closing" for _, e in calls)


def test_eight_threads_nothing_lost_or_duplicated_order_kept() -> None:
    a = acc(batch_size=2048, linger=0, memory=1 << 24)
    c = cluster(4)
    per = 2000
    futures = {}

    def work(t: int) -> None:
        for i in range(per):
            r = a.append("t", t % 4, 1000, None, b"%d:%d" % (t, i), None, None, 5000.0, False, 0, c)
            futures[(t, i)] = r.future

    threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    offsets = {p: 0 for p in range(4)}
    while a.has_undrained():
        for batches in a.drain(c, {1, 2}, 1 << 20, 0).values():
            for b in batches:
                p = b.topic_partition.partition
                b.complete(offsets[p], -1)
                offsets[p] += b.record_count
    assert sum(offsets.values()) == 8 * per
    seen = set()
    for t in range(8):
        last = -1
        for i in range(per):
            md = futures[(t, i)].get(0)
            assert (md.partition, md.offset) not in seen
            seen.add((md.partition, md.offset))
            assert md.partition == t % 4 and md.offset > last
            last = md.offset
