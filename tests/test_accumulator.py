"""RecordAccumulator with a fake clock and static clusters (no network)."""

from __future__ import annotations

import itertools
import random
import threading
import time
from typing import Any, Dict, List

import pytest
from kafka.record.default_records import DefaultRecordBatch

from cproducer.cluster import Cluster, Node, PartitionInfo, TopicPartition
from cproducer.errors import (
    BufferExhaustedError,
    IllegalStateError,
    KafkaError,
    ProducerClosedError,
)
from cproducer.producer.internals.buffer_pool import BufferPool
from cproducer.producer.internals.producer_batch import ProducerBatch
from cproducer.producer.internals.record_accumulator import (
    BATCH_OVERHEAD_BYTES,
    MIN_BUFFER,
    RecordAccumulator,
)
from cproducer.record.record_batch_builder import RecordBatchBuilder

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


def test_a_retry_skips_its_backoff_once_its_partition_has_a_newer_leader() -> None:
    """KIP-951: the answer named partition 0's new leader (node 2, epoch 6): the batch goes
    there at once. The same leader epoch as when it was sent keeps the backoff."""
    a = acc(linger=0)
    base = cluster()  # partition 0 led by node 1
    sent_to = Cluster(base.nodes, base.partitions_for_topic("t"), leader_epochs={TP0: 5})
    append(a, sent_to, 0)
    [batch] = a.drain(sent_to, {1}, 1 << 20, 0)[1]
    assert batch.leader_epoch == 5
    a.reenqueue(batch, 100)
    assert batch.backoff_ms >= 80
    same = Cluster(sent_to.nodes, sent_to.partitions_for_topic("t"), leader_epochs={TP0: 5})
    assert a.ready(same, 101).ready_nodes == set()
    assert a.drain(same, {1}, 1 << 20, 101)[1] == []
    moved_parts = [p for p in sent_to.partitions_for_topic("t") if p.partition != 0]
    moved = Cluster(
        sent_to.nodes,
        moved_parts + [PartitionInfo("t", 0, N2)],
        leader_epochs={TP0: 6},
    )
    assert moved.leader_epoch_for(TP0) == 6 and moved.leader_epoch_for(("t", 1)) == -1
    assert a.ready(moved, 101).ready_nodes == {2}
    assert a.drain(moved, {2}, 1 << 20, 101)[2] == [batch]
    assert batch.leader_epoch == 6


def test_memory_exhaustion_blocks_appender_and_makes_partition_ready() -> None:
    # room for two batches: their buffers and their own objects (charged too)
    a, c = acc(batch_size=1024, linger=10_000, memory=2 * (1024 + BATCH_OVERHEAD_BYTES)), cluster()
    append(a, c, 0)
    append(a, c, 1)  # both batches' memory in use
    done = threading.Event()
    results: List[Any] = []

    def blocked() -> None:
        results.append(append(a, c, 2, block_ms=5000))
        done.set()

    th = threading.Thread(target=blocked)
    th.start()
    deadline = time.monotonic() + 5
    while a.pool.queued == 0:
        assert time.monotonic() < deadline
        time.sleep(0.001)
    assert a.ready(c, 0).ready_nodes == {1, 2}  # exhausted: everything is sendable
    batches = a.drain(c, {1}, 1 << 20, 0)[1]
    time.sleep(0.02)
    assert not done.is_set()  # drained is not freed: still waiting for memory
    batches[0].complete(0, -1)
    a.deallocate(batches[0])
    assert done.wait(5)
    th.join()
    assert results[0].new_batch_created and a.queue_size(TopicPartition("t", 2)) == 1
    assert a.ready(c, 0).ready_nodes == set()  # nobody waits for memory any more


def test_memory_exhaustion_times_out_and_leaves_nothing_behind() -> None:
    a, c = acc(batch_size=1024, linger=10_000, memory=1024), cluster()
    append(a, c, 0)
    with pytest.raises(BufferExhaustedError):
        append(a, c, 1, block_ms=20)
    assert a.queue_size(TopicPartition("t", 1)) == 0 and a.appends_in_progress == 0
    assert a.pool.queued == 0


def sticky_parts(a, c, value_size, n):
    out = []
    for _ in range(n):
        r = a.append("t", -1, 1000, None, b"x" * value_size, None, None, 1000.0, False, 0, c)
        out.append(r.future.topic_partition.partition)
    return out


def test_exact_sticky_switching_when_batches_fill_exactly() -> None:
    # 312-byte values make 321-byte records: 61 + 3 x 321 = 1024, the batch is full after the
    # third record and 1024 bytes were produced, so the partition switches right there
    rnd = itertools.cycle([1, 2, 3]).__next__
    a, c = acc(batch_size=1024, linger=10_000, random=rnd), cluster(4)
    assert sticky_parts(a, c, 312, 10) == [1, 1, 1, 2, 2, 2, 3, 3, 3, 1]
    assert [a.queue_size(TopicPartition("t", p)) for p in range(4)] == [0, 2, 1, 1]


def test_exact_sticky_switching_waits_for_a_full_batch_or_twice_the_size() -> None:
    # 209-byte records: 4 fit in a 1024-byte batch (897 bytes, not full). The 5th opens a new
    # batch (produced 1045 >= 1024, but its last batch is not full: no switch, Java's
    # enable_switch rule). The 9th does not fit in the second batch, which is closed (full): the
    # held-back switch happens before a third batch is made (Java's partitionChanged), and the
    # 9th record goes to the next partition
    rnd = itertools.cycle([1, 2, 3]).__next__
    a, c = acc(batch_size=1024, linger=10_000, random=rnd), cluster(4)
    assert sticky_parts(a, c, 200, 20) == [1] * 8 + [2] * 8 + [3] * 4


def test_a_held_back_sticky_switch_happens_once_the_queue_is_sent() -> None:
    # 209-byte records: the 5th opens a second batch (1045 >= 1024 produced, but that batch is not
    # full: no switch). Once the queue is drained (sent: all its batches "full"), the next append
    # switches before it appends, as Java's partitionChanged does; without that, a partition whose
    # batches leave at once (a fast broker, small linger.ms) kept the records to 2 x batch.size
    rnd = itertools.cycle([1, 2, 3]).__next__
    a, c = acc(batch_size=1024, linger=0, random=rnd), cluster(4)
    assert sticky_parts(a, c, 200, 5) == [1] * 5
    for _ in range(2):  # one batch of a partition per drain
        assert len(a.drain(c, {1, 2}, 1 << 20, 0)[2]) == 1
    assert a.queue_size(TopicPartition("t", 1)) == 0
    assert sticky_parts(a, c, 200, 3) == [2] * 3
    # a queue still holding an incomplete batch keeps the partition
    assert sticky_parts(a, c, 200, 2) == [2] * 2


def test_append_result_fields() -> None:
    a, c = acc(batch_size=1024, linger=10_000), cluster()
    r1 = append(a, c, 0, value=b"x" * 312)
    assert (r1.new_batch_created, r1.batch_is_full, r1.abort_for_new_batch) == (True, False, False)
    assert r1.appended_bytes == 61 + 321
    r2 = append(a, c, 0, value=b"x" * 312)
    assert (r2.new_batch_created, r2.batch_is_full, r2.appended_bytes) == (False, False, 321)
    r3 = append(a, c, 0, value=b"x" * 312)
    assert r3.batch_is_full and not r3.new_batch_created  # exactly 1024 bytes
    r4 = append(a, c, 0, value=b"y")
    assert r4.new_batch_created and r4.batch_is_full  # two batches queued
    assert a.queue_size(TP0) == 2 and a.partitions_with_batches() == [TP0]


def test_abort_on_new_batch_takes_no_memory() -> None:
    a, c = acc(batch_size=1024, memory=4096), cluster()
    r = a.append("t", 0, 1000, None, b"v", None, None, 1000.0, True, 0, c)
    assert r.abort_for_new_batch and r.future is None and not r.new_batch_created
    assert a.pool.available_memory == 4096 and a.queue_size(TP0) == 0
    append(a, c, 0)
    r = a.append("t", 0, 1000, None, b"v", None, None, 1000.0, True, 0, c)
    assert not r.abort_for_new_batch and r.future is not None  # an open batch takes it


def test_bad_arguments() -> None:
    a, c = acc(), cluster()
    with pytest.raises(ValueError, match="partition"):
        a.append("t", -2, 1000, None, b"v", None, None, 1000.0, False, 0, c)
    with pytest.raises(TypeError, match="key"):
        a.append("t", 0, 1000, 5, b"v", None, None, 1000.0, False, 0, c)
    assert append(a, c, 0).future is not None  # still usable
    free = a.pool.available_memory
    for p in (0, 1):  # an open batch, and a partition without one
        with pytest.raises(TypeError, match="headers"):
            a.append("t", p, 1000, None, b"v", [("h", 5)], None, 1000.0, False, 0, c)
    assert a.pool.available_memory == free and a.appends_in_progress == 0
    assert a.queue_size(TP0) == 1 and a.queue_size(TopicPartition("t", 1)) == 0
    assert [b.record_count for b in a.batches_of(TP0)] == [1]
    pool = BufferPool(1 << 20, 1024)
    with pytest.raises(ValueError, match="batch_size"):
        RecordAccumulator(0, 0, 0, 100, 1000, 1000, pool)
    with pytest.raises(ValueError, match="compression_type"):
        RecordAccumulator(1024, 9, 0, 100, 1000, 1000, pool)
    with pytest.raises(ValueError, match="linger_ms"):
        RecordAccumulator(1024, 0, -1, 100, 1000, 1000, pool)
    with pytest.raises(TypeError, match="buffer_pool"):
        RecordAccumulator(1024, 0, 0, 100, 1000, 1000, None)


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

    def add_in_flight_batch(self, b):
        self.in_flight.append(b)

    # the accumulator's one call per drained batch: the checks above, then the sequence
    def drain_batch(self, tp, b):
        if self.should_stop_drain(tp, b.base_sequence):
            return True
        if b.base_sequence == -1:
            self.sequence_batch(b)
        return False

    def should_stop_drain(self, tp, base_sequence):
        if not self.is_send_to_partition_allowed(tp) or not self.has_producer_id():
            return True
        head = self.next_batch_by_sequence(tp)
        return base_sequence != -1 and head is not None and head.base_sequence != base_sequence

    def sequence_batch(self, b):
        tp = b.topic_partition
        pid, epoch = self.producer_id_and_epoch
        b.set_producer_state(pid, epoch, self.seq.get(tp, 0), False)
        self.seq[tp] = self.seq.get(tp, 0) + b.record_count
        self.add_in_flight_batch(b)


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
    from cproducer.record.record_batch_builder import RecordBatchBuilder

    a, c = acc(batch_size=1024, linger=0), cluster(1, leaders={0: N1})
    big = ProducerBatch(TP0, RecordBatchBuilder(bytearray(8192), 0, 8192), 0)
    calls = []
    futures = []
    for i in range(30):
        cb = lambda md, exc, i=i: calls.append((i, md, exc))  # noqa: E731
        fut = big.try_append(1000 + i, None, b"%03d" % i * 40, None, cb, 0)
        assert fut is not None
        futures.append(fut)
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


def test_eight_threads_sticky_partitions_keep_per_thread_order() -> None:
    a = acc(batch_size=1024, linger=0, memory=1 << 24)
    c = cluster(4)
    per = 1500
    futures: dict = {}

    def work(t: int) -> None:
        for i in range(per):
            r = a.append("t", -1, 1000, None, b"%d:%d" % (t, i), None, None, 5000.0, False, 0, c)
            futures[(t, i)] = r.future

    threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    offsets = {p: 0 for p in range(4)}
    values = {}
    while a.has_undrained():
        for batches in a.drain(c, {1, 2}, 1 << 20, 0).values():
            for b in batches:
                p = b.topic_partition.partition
                for rel, (_ts, _k, v, _h) in enumerate(b.records()):
                    values[(p, offsets[p] + rel)] = v
                b.complete(offsets[p], -1)
                offsets[p] += b.record_count
    assert sum(offsets.values()) == 8 * per and len(values) == 8 * per
    used = set()
    for t in range(8):
        last: Dict[int, int] = {}
        for i in range(per):
            md = futures[(t, i)].get(0)
            assert values[(md.partition, md.offset)] == b"%d:%d" % (t, i)  # its own bytes
            assert md.offset > last.get(md.partition, -1)
            last[md.partition] = md.offset
            used.add(md.partition)
    assert len(used) > 1  # the sticky partition did move


def test_close_refuses_appends_and_makes_everything_sendable() -> None:
    a, c = acc(linger=10_000), cluster()
    append(a, c, 0)
    assert a.ready(c, 0).ready_nodes == set()
    a.close()
    assert a.ready(c, 0).ready_nodes == {1}
    with pytest.raises(ProducerClosedError):
        append(a, c, 0)
    with pytest.raises(ProducerClosedError):
        append(a, c, 3)  # a new batch is refused too; its memory goes back
    assert a.pool.available_memory == (1 << 20) - 1024 - BATCH_OVERHEAD_BYTES  # the first batch


def test_deallocate_returns_pooled_memory_once_split_batches_never() -> None:
    a, c = acc(batch_size=1024, linger=0, memory=8192), cluster(2, leaders={0: N1, 1: N1})
    append(a, c, 0)
    append(a, c, 1)
    in_use = 2 * (1024 + BATCH_OVERHEAD_BYTES)  # two buffers, two batches' objects
    assert a.pool.available_memory == 8192 - in_use and a.has_incomplete()
    batches = a.drain(c, {1}, 1 << 20, 0)[1]
    for b in batches:
        b.complete(0, -1)
        a.deallocate(b)
        a.deallocate(b)  # twice: ignored
    assert a.pool.available_memory == 8192 and not a.has_incomplete()
    big = ProducerBatch(TP0, RecordBatchBuilder(bytearray(8192), 0, 8192), 0)
    for _ in range(20):
        big.try_append(1000, None, b"s" * 100, None, None, 0)
    big.close()
    n = a.split_and_reenqueue(big)
    assert n == 3 and a.pool.available_memory == 8192
    while a.has_undrained():  # one batch per partition per drain, as Java
        for b in a.drain(c, {1}, 1 << 20, 0)[1]:
            b.complete(0, -1)
            a.deallocate(b)
    assert a.pool.available_memory == 8192 and not a.has_incomplete()


def ratio(batch: Any) -> float:
    return float(batch.builder.compression_ratio)


def test_compression_ratio_estimate_follows_drained_batches_and_resets_on_split() -> None:
    a = RecordAccumulator(4096, 1, 0, 100, 1000, 120_000, BufferPool(1 << 20, 4096))
    c = cluster(1, leaders={0: N1})
    ti = a.topic_info("t")
    assert ti.compression_ratio == 1.0
    for _ in range(20):
        append(a, c, 0, value=b"a" * 150)  # very compressible
    [b] = a.drain(c, {1}, 1 << 20, 0)[1]
    assert ratio(b) < 0.2
    assert ti.compression_ratio == pytest.approx(1.0 - 0.005)  # better ratios: slowly
    ti.compression_ratio = 0.1
    rnd = random.Random(5)
    for _ in range(20):
        append(a, c, 0, value=rnd.randbytes(150))  # incompressible
    [b2] = a.drain(c, {1}, 1 << 20, 0)[1]
    assert ti.compression_ratio == pytest.approx(max(0.15, ratio(b2)))
    a.split_and_reenqueue(b2)
    assert ti.compression_ratio == max(1.0, ratio(b2))


def test_retry_backoff_is_exponential_with_jitter_and_capped() -> None:
    a = RecordAccumulator(1024, 0, 0, 100, 1000, 120_000, BufferPool(1 << 20, 1024))
    for attempts, base in ((0, 100), (1, 200), (2, 400), (3, 800)):
        values = [a.retry_backoff(attempts) for _ in range(200)]
        assert all(int(base * 0.8) <= v <= min(1000, int(base * 1.2)) for v in values)
        assert len(set(values)) > 1  # jittered
    assert all(800 <= a.retry_backoff(n) <= 1000 for n in (4, 10, 60, 1000))
    flat = RecordAccumulator(1024, 0, 0, 100, 100, 120_000, BufferPool(1 << 20, 1024))
    assert {flat.retry_backoff(n) for n in range(5)} == {100}


def test_drain_skips_batches_in_backoff() -> None:
    a, c = acc(linger=0), cluster(2, leaders={0: N1, 1: N1})
    append(a, c, 0)
    [b] = a.drain(c, {1}, 1 << 20, 0)[1]
    a.reenqueue(b, 1000)
    append(a, c, 1)
    assert [x.topic_partition.partition for x in a.drain(c, {1}, 1 << 20, 1001)[1]] == [1]
    assert a.drain(c, {1}, 1 << 20, 1001)[1] == []
    again = a.drain(c, {1}, 1 << 20, 1000 + b.backoff_ms)[1]
    assert again == [b] and b.attempts == 1 and b.in_retry()


def test_muted_partitions_are_skipped_by_ready_and_drain() -> None:
    a, c = acc(linger=0), cluster(2, leaders={0: N1, 1: N1})
    append(a, c, 0)
    a.mute_partition(TP0)
    assert a.ready(c, 0).ready_nodes == set()
    assert a.drain(c, {1}, 1 << 20, 0)[1] == []
    a.unmute_partition(TP0)
    assert a.ready(c, 0).ready_nodes == {1}
    assert len(a.drain(c, {1}, 1 << 20, 0)[1]) == 1


def test_ready_reports_unknown_leaders_and_the_next_check_delay() -> None:
    a, c = acc(linger=100), cluster(2)
    append(a, c, 0, now=0)
    append(a, c, 1, now=30)
    append(a, c, 7, now=0)  # not in the cluster view: no leader
    r = a.ready(c, 50)
    assert r.ready_nodes == set() and r.unknown_leader_topics == {"t"}
    assert r.next_ready_check_delay_ms == 50  # partition 0 lingers until 100
    r = a.ready(c, 100)
    assert r.ready_nodes == {1} and r.next_ready_check_delay_ms == 30


def test_node_latency_stats_only_with_an_availability_timeout() -> None:
    a = acc()
    a.update_node_latency_stats(1, 10, True)
    assert a.node_stats == {}
    b = acc(partitioner_availability_timeout_ms=10)
    b.update_node_latency_stats(1, 10, True)
    b.update_node_latency_stats(1, 30, False)
    assert b.node_stats == {1: [30, 10]}  # [ready time, drain time]


class ScriptedTM(FakeTM):
    def __init__(self):
        super().__init__()
        self.allowed = True
        self.pid = True

    def is_send_to_partition_allowed(self, tp):
        return self.allowed

    def has_producer_id(self):
        return self.pid

    def next_batch_by_sequence(self, tp):
        batches = [b for b in self.in_flight if b.topic_partition == tp and not b.is_done]
        return min(batches, key=lambda b: b.base_sequence) if batches else None


def test_transaction_manager_can_stop_the_drain() -> None:
    tm = ScriptedTM()
    a, c = acc(linger=0, transaction_manager=tm), cluster(1, leaders={0: N1})
    append(a, c, 0)
    tm.allowed = False
    assert a.drain(c, {1}, 1 << 20, 0)[1] == []
    tm.allowed, tm.pid = True, False
    assert a.drain(c, {1}, 1 << 20, 0)[1] == []
    tm.pid = True
    [b] = a.drain(c, {1}, 1 << 20, 0)[1]
    assert b.base_sequence == 0 and tm.in_flight == [b]


def test_reenqueue_in_sequence_order_and_retry_waits_for_its_turn() -> None:
    tm = ScriptedTM()
    a, c = acc(batch_size=1024, linger=0, transaction_manager=tm), cluster(1, leaders={0: N1})
    drained = []
    for _ in range(3):
        append(a, c, 0, value=b"x" * 900)  # one record per batch
        drained += a.drain(c, {1}, 1 << 20, 0)[1]
    assert [b.base_sequence for b in drained] == [0, 1, 2]
    append(a, c, 0, value=b"new")  # never drained: no sequence
    # the batches come back out of order; they queue by sequence, before the new one
    for b in (drained[2], drained[0], drained[1]):
        a.reenqueue(b, 0)
    queued = a.batches_of(TP0)
    assert [b.base_sequence for b in queued] == [0, 1, 2, -1]
    # only the head of the in-flight sequence may go first
    tm.in_flight = [drained[1], drained[2]]  # as if sequence 0 completed meanwhile
    assert a.drain(c, {1}, 1 << 20, 10_000)[1] == []  # seq 0 is queued but 1 is next
    tm.in_flight = list(drained)
    again = a.drain(c, {1}, 1 << 20, 10_000)[1]
    assert [b.base_sequence for b in again] == [0]


def test_reenqueue_without_sequence_under_idempotence_is_refused() -> None:
    tm = ScriptedTM()
    a = acc(linger=0, transaction_manager=tm)
    b = ProducerBatch(TP0, RecordBatchBuilder(bytearray(1024), 0, 1024), 0)
    b.try_append(1, None, b"v", None, None, 0)
    with pytest.raises(IllegalStateError, match="sequence"):
        a.reenqueue(b, 0)


def test_split_with_sequences_goes_back_in_order_and_in_flight() -> None:
    tm = ScriptedTM()
    a, c = acc(batch_size=1024, linger=0, transaction_manager=tm), cluster(1, leaders={0: N1})
    big = ProducerBatch(TP0, RecordBatchBuilder(bytearray(8192), 0, 8192), 0)
    for _ in range(20):
        big.try_append(1000, None, b"s" * 100, None, None, 0)
    big.set_producer_state(77, 3, 40, False)
    big.close()
    append(a, c, 0)  # a newer batch without a sequence stays behind the split ones
    assert a.split_and_reenqueue(big) == 3
    queued = a.batches_of(TP0)
    assert [b.base_sequence for b in queued] == [40, 48, 56, -1]
    assert all(b in tm.in_flight for b in queued[:3])


def test_abort_undrained_batches_leaves_sent_ones() -> None:
    a, c = acc(linger=0), cluster(2, leaders={0: N1, 1: N1})
    calls = []
    append(a, c, 0, cb=lambda md, exc: calls.append((0, exc)))
    [sent] = a.drain(c, {1}, 1 << 20, 0)[1]
    append(a, c, 1, cb=lambda md, exc: calls.append((1, exc)))
    exc = KafkaError("fatal")
    a.abort_undrained_batches(exc)
    assert calls == [(1, exc)] and not a.has_undrained()
    assert a.incomplete_batches() == [sent]
    assert sent.complete(5, -1) and calls[-1] == (0, None)
    with pytest.raises(TypeError, match="exc"):
        a.abort_undrained_batches("nope")


def test_abort_undrained_with_idempotence_uses_the_sequence() -> None:
    tm = ScriptedTM()
    a, c = acc(linger=0, transaction_manager=tm), cluster(1, leaders={0: N1})
    append(a, c, 0)
    [sent] = a.drain(c, {1}, 1 << 20, 0)[1]
    a.reenqueue(sent, 0)  # back in the deque, but it has a sequence: it was sent once
    append(a, c, 0, value=b"x" * 2000)  # a new batch behind it, no sequence
    a.abort_undrained_batches(KafkaError("fatal"))
    assert a.batches_of(TP0) == [sent] and not sent.is_done


def test_flush_waits_for_the_batches_a_split_made() -> None:
    # gzip with an optimistic ratio estimate: one batch takes far more than batch.size of
    # records, the broker refuses it, the Sender splits it (Java's scenario)
    a = RecordAccumulator(1024, 1, 10_000, 100, 1000, 120_000, BufferPool(1 << 20, 1024))
    c = cluster(1, leaders={0: N1})
    a.topic_info("t").compression_ratio = 0.1
    rnd = random.Random(7)
    futures = [append(a, c, 0, value=rnd.randbytes(100)).future for _ in range(60)]
    [big] = a.drain(c, {1}, 1 << 20, 0)[1]
    assert big.record_count == 60
    a.begin_flush()
    done = threading.Event()

    def flusher() -> None:
        a.await_flush_completion(5)
        done.set()

    th = threading.Thread(target=flusher)
    th.start()
    assert a.split_and_reenqueue(big) >= 6
    a.deallocate(big)
    time.sleep(0.05)
    assert not done.is_set()  # the split batches are not complete yet
    offset = 0
    while a.has_undrained():
        for b in a.drain(c, {1}, 1 << 20, 0)[1]:
            b.complete(offset, -1)
            offset += b.record_count
            a.deallocate(b)
    th.join(5)
    assert done.is_set() and not a.flush_in_progress()
    assert [f.get(0).offset for f in futures] == list(range(60))


def test_await_flush_completion_times_out() -> None:
    a, c = acc(linger=10_000), cluster()
    append(a, c, 0)
    a.begin_flush()
    assert a.await_flush_completion(0.02) is False
    assert not a.flush_in_progress()


def test_expired_batches_leave_in_order_and_take_no_more_records() -> None:
    a = RecordAccumulator(1024, 0, 10_000, 100, 1000, 500, BufferPool(1 << 20, 1024))
    c = cluster()
    append(a, c, 0, now=0, value=b"x" * 900)
    append(a, c, 0, now=100, value=b"x" * 900)
    append(a, c, 2, now=300)
    expired = a.expired_batches(600)
    assert [(b.topic_partition.partition, b.created_ms) for b in expired] == [(0, 0), (0, 100)]
    assert all(b.try_append(1, None, b"", None, None, 0) is None for b in expired)
    assert a.queue_size(TP0) == 0 and a.queue_size(TopicPartition("t", 2)) == 1


def test_abort_queued_batches_fails_the_unsent_and_returns_the_retries() -> None:
    """An authentication failure: everything in a queue goes; batches in flight stay."""
    a, c = acc(batch_size=1024, linger=10_000), cluster()
    calls: List[Any] = []
    for i in range(8):
        append(a, c, i % 2, cb=lambda md, exc, i=i: calls.append((i, exc)))
    in_flight = a.drain(c, {1}, 1 << 20, 0)[1]  # partition 0's batch: sent
    retried = a.drain(c, {2}, 1 << 20, 0)[2]  # partition 1's batch: sent, then back for a retry
    a.reenqueue(retried[0], 0)
    for i in range(8, 12):
        append(a, c, 2 + i % 2, cb=lambda md, exc, i=i: calls.append((i, exc)))  # never sent
    back = a.abort_queued_batches(KafkaError("refused"))
    assert back == retried and not a.has_undrained()
    assert sorted(i for i, _ in calls) == [8, 9, 10, 11]  # only the never-sent ones failed here
    assert all(str(e) == "refused" for _, e in calls)
    assert not back[0].is_done  # the Sender fails it, through the transaction manager
    assert in_flight[0].complete(0, -1)  # the one in flight is still open


def test_max_batch_records_closes_a_batch_at_that_count() -> None:
    a, c = acc(batch_size=1 << 16, linger=10_000, max_batch_records=3), cluster()
    results = [append(a, c, 0, value=b"v%d" % i) for i in range(7)]
    assert [r.new_batch_created for r in results] == [True, False, False] * 2 + [True]
    assert [r.batch_is_full for r in results[:3]] == [False, False, True]  # full at 3: send it
    assert a.ready(c, 0).ready_nodes == {1}  # before linger.ms
    batches = a.batches_of(TP0)
    assert [b.record_count for b in batches] == [3, 3, 1]
    unlimited = acc(batch_size=1 << 16, linger=10_000)
    for i in range(7):
        append(unlimited, c, 0, value=b"v%d" % i)
    assert [b.record_count for b in unlimited.batches_of(TP0)] == [7]
    with pytest.raises(ValueError, match="max_batch_records must be >= 0"):
        acc(max_batch_records=-1)


def test_a_partitions_batches_start_at_the_size_its_last_batch_reached() -> None:
    """Memory follows the records, not batch.size times the partitions: a partition's first
    batch starts in MIN_BUFFER bytes, each next one in room for twice what its last batch
    reached (a power of two), or in batch.size (a pooled buffer) once its batches come near it.
    A batch grows to batch.size on memory from the pool as records come."""
    a, c = acc(batch_size=16384, linger=0, memory=1 << 20), cluster()
    pool = a.pool
    base = pool.available_memory

    def one_batch(records: int) -> Any:
        results = [append(a, c, 0) for _ in range(records)]
        assert [r.new_batch_created for r in results] == [True] + [False] * (records - 1)
        [batch] = a.drain(c, {1}, 1 << 20, 0)[1]
        return batch

    first = one_batch(1)
    assert first.builder.capacity == MIN_BUFFER
    assert base - pool.available_memory == MIN_BUFFER + BATCH_OVERHEAD_BYTES
    a.deallocate(first)
    grown = one_batch(140)  # ~15.5 kB of records: one batch, grown from 1 kB
    assert grown.builder.capacity == 16384
    a.deallocate(grown)
    assert pool.available_memory == base
    full = one_batch(1)  # its last batch came near batch.size: a pooled buffer
    assert full.builder.capacity == 16384 and full.builder.charged_memory == 0
    a.deallocate(full)
    assert one_batch(3).builder.capacity == MIN_BUFFER  # 1 record reached: room for 2 x that
    # a thousand partitions with a record each hold about a kilobyte each, not batch.size
    b, c1000 = acc(batch_size=16384, linger=0, memory=32 << 20), cluster(1000)
    start = b.pool.available_memory
    for p in range(1000):
        append(b, c1000, p)
    assert start - b.pool.available_memory == 1000 * (MIN_BUFFER + BATCH_OVERHEAD_BYTES)


def test_send_many_chunk_over_many_partitions_holds_memory_per_record() -> None:
    """send_many's columnar append starts a partition's batch in the buffer send() would
    (MIN_BUFFER for a new partition), not batch.size: a chunk of a thousand records spread over
    a thousand partitions takes about a kilobyte per partition, and each batch grows as its
    records come, to batch.size."""
    import numpy as np

    from cproducer.producer.send_many import append_columns, objects_column, size_upper_bounds

    a, c = acc(batch_size=16384, linger=0, memory=32 << 20), cluster(1000)
    start = a.pool.available_memory
    values = objects_column([b"v" * 100] * 1000, "value")
    sizes = size_upper_bounds(
        np.full(1000, -1, dtype=np.int64), values.lengths, np.zeros(1000, dtype=np.int64)
    )
    parts = np.arange(1000, dtype=np.int32)
    appended, _, err = append_columns(
        a, "t", values, None, parts, None, None, 0, None, None, 1000.0, 0, c, sizes
    )
    assert (appended, err) == (1000, None)
    assert start - a.pool.available_memory == 1000 * (MIN_BUFFER + BATCH_OVERHEAD_BYTES)
    # 100 records of 100 bytes into one partition: one batch, grown past its first buffer
    one = np.zeros(100, dtype=np.int32)
    many = objects_column([b"w" * 100] * 100, "value")
    sizes = size_upper_bounds(
        np.full(100, -1, dtype=np.int64), many.lengths, np.zeros(100, dtype=np.int64)
    )
    appended, _, err = append_columns(
        a, "t", many, None, one, None, None, 0, None, None, 1000.0, 0, c, sizes
    )
    assert (appended, err) == (100, None)
    batches = a.drain(c, {1}, 1 << 20, 0)[1]
    first = next(b for b in batches if b.topic_partition == TP0)
    assert first.record_count == 101
    assert MIN_BUFFER < first.builder.capacity <= 16384
