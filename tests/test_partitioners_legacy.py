"""Legacy partitioners (Java's), custom partitioners, and name resolution."""

from __future__ import annotations

import random
import threading
from collections import Counter
from typing import Any, Iterable, List

import numpy as np
import pytest

from cproducer.cluster import Cluster, Node, PartitionInfo
from cproducer.errors import ConfigError
from cproducer.producer.partitioners import (
    CallablePartitioner,
    DefaultPartitioner,
    Partitioner,
    RoundRobinPartitioner,
    UniformStickyPartitioner,
    reruns_on_new_batch,
    resolve_partitioner,
)
from cproducer.utils.murmur2 import partition_for_key

N = Node(1, "h", 1)


def cluster(n: int = 4, leaderless: Iterable[int] = (), topic: str = "t") -> Cluster:
    down = set(leaderless)
    parts = [PartitionInfo(topic, p, None if p in down else N, (), ()) for p in range(n)]
    return Cluster([N], parts)


def unkeyed(p: Any, c: Cluster, count: int, topic: str = "t") -> List[int]:
    return [p.partition(topic, None, None, b"v", b"v", c) for _ in range(count)]


# -- DefaultPartitioner (Kafka 2.4 to 3.x: KIP-480 for unkeyed records) ---------------------------


def test_default_partitioner_sticks_to_one_partition_until_a_new_batch() -> None:
    # Java's DefaultPartitioner since 2.4: unkeyed records stay on one partition (not round robin)
    p = DefaultPartitioner(rng=random.Random(3))
    c = cluster(4)
    first = unkeyed(p, c, 1)[0]
    assert unkeyed(p, c, 50) == [first] * 50
    p.on_new_batch("t", c, first)
    second = unkeyed(p, c, 1)[0]
    assert second != first and unkeyed(p, c, 20) == [second] * 20
    p.on_new_batch("t", c, first)  # stale: the partition stays
    assert unkeyed(p, c, 1) == [second]


def test_default_partitioner_keyed_records_do_not_move_the_sticky_partition() -> None:
    p = DefaultPartitioner(rng=random.Random(4))
    c = cluster(5)
    sticky = unkeyed(p, c, 1)[0]
    key = next(k for k in (b"a", b"b", b"c", b"d", b"e", b"f") if partition_for_key(k, 5) != sticky)
    assert p.partition("t", key, key, None, None, c) == partition_for_key(key, 5)
    # Java calls onNewBatch for a keyed record's new batch too: not the sticky one, no move
    p.on_new_batch("t", c, partition_for_key(key, 5))
    assert unkeyed(p, c, 1) == [sticky]


def test_default_partitioner_sticky_moves_over_available_partitions_per_topic() -> None:
    p = DefaultPartitioner(rng=random.Random(6))
    c = cluster(4, leaderless=(1, 3))
    seen = set()
    current = unkeyed(p, c, 1)[0]
    for _ in range(40):
        seen.add(current)
        p.on_new_batch("t", c, current)
        new = unkeyed(p, c, 1)[0]
        assert new != current
        current = new
    assert seen == {0, 2}
    both = Cluster([N], [PartitionInfo(t, i, N) for t in ("a", "b") for i in range(3)])
    a = unkeyed(p, both, 1, "a")[0]
    p.on_new_batch("b", both, unkeyed(p, both, 1, "b")[0])
    assert unkeyed(p, both, 1, "a") == [a]  # one topic's new batch leaves the other's choice


def test_the_producer_reruns_the_default_partitioner_on_a_new_batch() -> None:
    assert reruns_on_new_batch(DefaultPartitioner())
    assert reruns_on_new_batch(UniformStickyPartitioner())


def _slow_partition_share(p: Any, records: int = 3000, capacity: int = 30) -> float:
    """Java's append with the abort-for-new-batch protocol, on 3 partitions: partition 0's leader
    is slow, so its batches wait (and fill up to ``capacity`` records) while partitions 1 and 2
    send theirs right after each record (linger.ms=0 on a fast broker). The share of the records
    partition 0 got."""
    c = cluster(3)
    open_batch = {0: 0, 1: 0, 2: 0}  # records in the partition's open batch (0: none open)
    counts: Counter = Counter()
    for _ in range(records):
        part = p.partition("t", None, None, b"v", b"v", c)
        if open_batch[part] in (0, capacity):  # append would make a new batch
            p.on_new_batch("t", c, part)
            part = p.partition("t", None, None, b"v", b"v", c)
            if open_batch[part] == capacity:
                open_batch[part] = 0
        open_batch[part] += 1
        counts[part] += 1
        for fast in (1, 2):
            open_batch[fast] = 0  # sent at once
    return counts[0] / records


def test_default_partitioner_gives_a_slow_broker_more_records() -> None:
    # KIP-794's finding about KIP-480: batches that wait fill up before the partition moves on
    assert _slow_partition_share(DefaultPartitioner(rng=random.Random(7))) > 0.8
    assert _slow_partition_share(UniformStickyPartitioner(rng=random.Random(7))) > 0.8
    # round robin ignores the batches: an even third
    assert abs(_slow_partition_share(RoundRobinPartitioner()) - 1 / 3) < 0.01


def test_default_partitioner_keyed_is_murmur2_over_all_partitions() -> None:
    p = DefaultPartitioner()
    c = cluster(5, leaderless=(0, 1))
    for key in (b"a", b"user-7", b"xyz" * 10, b""):
        assert p.partition("t", key, key, None, None, c) == partition_for_key(key, 5)


def test_unknown_topics_are_refused_by_name() -> None:
    for p in (DefaultPartitioner(), RoundRobinPartitioner(), UniformStickyPartitioner()):
        with pytest.raises(ValueError, match="topic 'x' has no partitions"):
            p.partition("x", None, None, None, None, cluster(3, leaderless=(0, 1, 2)))


# -- UniformStickyPartitioner (KIP-480) ---------------------------------------------------------


def test_uniform_sticky_sticks_until_a_new_batch_whatever_the_key() -> None:
    p = UniformStickyPartitioner(rng=random.Random(1))
    c = cluster(4)
    first = p.partition("t", b"k", b"k", None, None, c)
    assert all(p.partition("t", b"k2", b"k2", None, None, c) == first for _ in range(20))
    p.on_new_batch("t", c, first)
    second = p.partition("t", None, None, None, None, c)
    assert second != first
    p.on_new_batch("t", c, first)  # a stale notification: the partition stays
    assert p.partition("t", None, None, None, None, c) == second


def test_uniform_sticky_moves_to_every_other_available_partition_evenly() -> None:
    p = UniformStickyPartitioner(rng=random.Random(5))
    c = cluster(6, leaderless=(2,))
    moves: Counter = Counter()
    current = p.partition("t", None, None, None, None, c)
    for _ in range(4000):
        p.on_new_batch("t", c, current)
        new = p.partition("t", None, None, None, None, c)
        assert new != current and new != 2
        moves[new] += 1
        current = new
    assert set(moves) == {0, 1, 3, 4, 5}
    expected = 4000 / 5
    chi2 = sum((moves[k] - expected) ** 2 / expected for k in moves)
    assert chi2 < 18.467, moves  # dof 4, p = 0.001


def test_uniform_sticky_with_one_or_no_available_partition() -> None:
    p = UniformStickyPartitioner(rng=random.Random(2))
    one = cluster(4, leaderless=(0, 1, 3))
    assert p.partition("t", None, None, None, None, one) == 2
    p.on_new_batch("t", one, 2)
    assert p.partition("t", None, None, None, None, one) == 2  # nowhere else to go
    p2 = UniformStickyPartitioner(rng=random.Random(3))
    none = cluster(3, leaderless=(0, 1, 2))
    assert p2.partition("t", None, None, None, None, none) in (0, 1, 2)


# -- RoundRobinPartitioner ----------------------------------------------------------------------


def test_round_robin_over_available_partitions_then_all() -> None:
    p = RoundRobinPartitioner()
    assert unkeyed(p, cluster(3), 4) == [0, 1, 2, 0]
    p = RoundRobinPartitioner()
    assert unkeyed(p, cluster(5, leaderless=(1, 2)), 4) == [0, 3, 4, 0]
    assert p.partition("t", b"key", b"key", None, None, cluster(5)) == 4  # keys ignored
    p = RoundRobinPartitioner()
    assert unkeyed(p, cluster(3, leaderless=(0, 1, 2)), 4) == [0, 1, 2, 0]


def test_round_robin_new_batch_reuses_the_partition() -> None:
    p = RoundRobinPartitioner()
    c = cluster(3)
    assert unkeyed(p, c, 4) == [0, 1, 2, 0]
    p.on_new_batch("t", c, 0)  # the record aborted for a new batch keeps partition 0
    assert unkeyed(p, c, 2) == [0, 1]
    p.on_new_batch("u", c, 2)  # queues are per topic
    assert unkeyed(p, c, 1) == [2]


def test_round_robin_stays_even_when_every_other_record_starts_a_batch() -> None:
    # KAFKA-9965: with the producer calling partition() again after an aborted append, a plain
    # counter would send nothing to every other partition; the queue keeps the walk even
    p = RoundRobinPartitioner()
    c = cluster(4)
    counts: Counter = Counter()
    for i in range(400):
        part = p.partition("t", None, None, None, None, c)
        if i % 2 == 0:  # the append was aborted: a new batch is needed
            p.on_new_batch("t", c, part)
            part = p.partition("t", None, None, None, None, c)
        counts[part] += 1
    assert counts == {0: 100, 1: 100, 2: 100, 3: 100}


def test_round_robin_threads_hand_out_every_value_once() -> None:
    p = RoundRobinPartitioner()
    c = cluster(8)
    results: List[int] = []
    lock = threading.Lock()

    def work() -> None:
        got = unkeyed(p, c, 1000)
        with lock:
            results.extend(got)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert Counter(results) == {k: 500 for k in range(8)}


# -- custom partitioners ------------------------------------------------------------------------


def test_callable_gets_partition_id_lists() -> None:
    seen = []

    def fn(key_bytes: Any, all_parts: List[int], available: List[int]) -> int:
        seen.append((key_bytes, list(all_parts), list(available)))
        all_parts.clear()  # mutating what it got does not touch the next call's lists
        return available[-1]

    p = resolve_partitioner(fn)
    assert isinstance(p, CallablePartitioner)
    c = cluster(3, leaderless=(1,))
    assert p.partition("t", b"k", b"k", None, None, c) == 2
    assert p.partition("t", None, None, None, None, c) == 2
    assert seen == [(b"k", [0, 1, 2], [0, 2]), (None, [0, 1, 2], [0, 2])]
    other = cluster(2)
    assert p.partition("t", None, None, None, None, other) == 1  # a new view is read


def test_callable_results_are_checked() -> None:
    assert CallablePartitioner(lambda k, a, v: np.int64(1)).partition("t", 0, 0, 0, 0, cluster())
    with pytest.raises(TypeError, match="returned None; expected a partition id"):
        CallablePartitioner(lambda k, a, v: None).partition("t", 0, 0, 0, 0, cluster())
    with pytest.raises(TypeError, match="returned 1.5"):
        CallablePartitioner(lambda k, a, v: 1.5).partition("t", 0, 0, 0, 0, cluster())
    with pytest.raises(TypeError, match="returned True"):
        CallablePartitioner(lambda k, a, v: True).partition("t", 0, 0, 0, 0, cluster())
    with pytest.raises(TypeError, match="fn must be callable"):
        CallablePartitioner(3)  # type: ignore[arg-type]


def test_partitioner_base_class_defaults() -> None:
    class Fixed(Partitioner):
        def partition(
            self, topic: str, key: Any, key_bytes: Any, value: Any, value_bytes: Any, cluster: Any
        ) -> int:
            return -1  # let the built-in logic choose

    p = resolve_partitioner(Fixed)
    assert isinstance(p, Fixed) and p.partition("t", None, None, None, None, cluster()) == -1
    p.configure({"acks": "all"})
    p.on_new_batch("t", cluster(), 0)
    p.close()
    with pytest.raises(NotImplementedError):
        Partitioner().partition("t", None, None, None, None, cluster())


def test_resolution_by_name_object_class_and_callable() -> None:
    for names, cls in (
        (
            (
                "default",
                "DefaultPartitioner",
                "org.apache.kafka.clients.producer.internals.DefaultPartitioner",
            ),
            DefaultPartitioner,
        ),
        (
            (
                "uniform_sticky",
                "UniformStickyPartitioner",
                "org.apache.kafka.clients.producer.UniformStickyPartitioner",
            ),
            UniformStickyPartitioner,
        ),
        (
            (
                "round_robin",
                "RoundRobinPartitioner",
                "org.apache.kafka.clients.producer.RoundRobinPartitioner",
                " round_robin ",
            ),
            RoundRobinPartitioner,
        ),
    ):
        for name in names:
            assert type(resolve_partitioner(name)) is cls, name
    assert resolve_partitioner(None) is None
    instance = RoundRobinPartitioner()
    assert resolve_partitioner(instance) is instance
    assert isinstance(resolve_partitioner(DefaultPartitioner), DefaultPartitioner)

    class Duck:
        def partition(self, *args: Any) -> int:
            return 0

    duck = Duck()
    assert resolve_partitioner(duck) is duck


def test_resolution_errors_name_the_setting_and_what_is_allowed() -> None:
    with pytest.raises(ConfigError, match="partitioner: unknown name 'nope'; allowed: None"):
        resolve_partitioner("nope")
    with pytest.raises(ConfigError, match="partitioner: got int 5; allowed: .*round_robin"):
        resolve_partitioner(5)
    with pytest.raises(ConfigError, match="class dict has no partition"):
        resolve_partitioner(dict)

    class NeedsArgs(Partitioner):
        def __init__(self, x: int) -> None:
            self.x = x

    with pytest.raises(ConfigError, match="NeedsArgs cannot be made without arguments"):
        resolve_partitioner(NeedsArgs)
