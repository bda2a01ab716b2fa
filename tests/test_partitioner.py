"""BuiltInPartitioner (KIP-794): sticky switching points, the CFT, distributions."""

from __future__ import annotations

import itertools
import threading

import numpy as np
import pytest

from cproducer._partitioner import BuiltInPartitioner
from cproducer.cluster import Cluster, Node, PartitionInfo

N1, N2 = Node(1, "a", 1), Node(2, "b", 1)


def cluster(n=3, leaderless=()):
    parts = [
        PartitionInfo("t", p, None if p in leaderless else (N1 if p % 2 else N2), (), ())
        for p in range(n)
    ]
    return Cluster([N1, N2], parts)


def seq(*values):
    it = itertools.cycle(values)
    return lambda: next(it)


def test_sticky_switch_after_batch_size_only_when_batches_full() -> None:
    bp = BuiltInPartitioner("t", 100, random=seq(0, 1, 2))
    c = cluster()
    info = bp.peek_current_partition_info(c)
    assert info.index == 0
    bp.update_partition_info(info, 99, c, enable_switch=True)
    assert bp.peek_current_partition_info(c) is info  # 99 < batch.size
    bp.update_partition_info(info, 50, c, enable_switch=False)
    assert bp.peek_current_partition_info(c) is info  # 149: not allowed to switch yet
    bp.update_partition_info(info, 50, c, enable_switch=False)
    new = bp.peek_current_partition_info(c)  # 199: still < 2 x batch.size
    assert new is info
    bp.update_partition_info(info, 1, c, enable_switch=False)  # 200 = 2 x batch.size: forced
    new = bp.peek_current_partition_info(c)
    assert new is not info and new.index == 1 and bp.is_partition_changed(info)
    bp.update_partition_info(new, 100, c, enable_switch=True)  # exactly batch.size, allowed
    assert bp.peek_current_partition_info(c).index == 2


def test_uniform_over_available_partitions_only() -> None:
    bp = BuiltInPartitioner("t", 100, random=seq(0, 1, 2, 3))
    c = cluster(4, leaderless=(1, 2))
    assert [bp.next_partition(c) for _ in range(4)] == [0, 3, 0, 3]
    c_none = cluster(3, leaderless=(0, 1, 2))
    assert [bp.next_partition(c_none) for _ in range(3)] == [0, 1, 2]  # all partitions then


def test_cft_example_and_mapping_of_every_random_number() -> None:
    values = list(range(8))
    bp = BuiltInPartitioner("t", 100, random=seq(*values))
    sizes = np.array([0, 3, 1], dtype=np.int32)
    bp.update_partition_load_stats(sizes, np.array([0, 1, 2], dtype=np.int32), 3)
    cft, ids, length = bp.load_stats
    assert cft.tolist() == [4, 5, 8] and length == 3 and cft.dtype == np.int32
    picks = [bp.next_partition(cluster()) for _ in values]
    assert picks == [0, 0, 0, 0, 1, 2, 2, 2]


def test_load_stats_none_when_equal_or_trivial() -> None:
    bp = BuiltInPartitioner("t", 100)
    bp.update_partition_load_stats(np.array([2, 2, 2], np.int32), np.array([0, 1, 2], np.int32), 3)
    assert bp.load_stats is None
    bp.update_partition_load_stats(np.array([5], np.int32), np.array([0], np.int32), 1)
    assert bp.load_stats is None
    bp.update_partition_load_stats(None, None, 0)
    assert bp.load_stats is None
    # equal sizes but a partition left out (availability): weighted over the subset
    bp.update_partition_load_stats(np.array([1, 1, 9], np.int32), np.array([4, 5, 6], np.int32), 2)
    cft, ids, length = bp.load_stats
    assert cft[:2].tolist() == [1, 2] and length == 2 and ids[:2].tolist() == [4, 5]


def chi_square(observed, expected) -> float:
    return float(sum((o - e) ** 2 / e for o, e in zip(observed, expected)))


def test_uniform_draws_follow_the_uniform_distribution() -> None:
    bp = BuiltInPartitioner("t", 100)
    c = cluster(6)
    n = 60_000
    counts = np.bincount([bp.next_partition(c) for _ in range(n)], minlength=6)
    # dof 5, p = 0.001 critical value 20.52
    assert chi_square(counts, [n / 6] * 6) < 20.52, counts


def test_weighted_draws_follow_the_cft() -> None:
    bp = BuiltInPartitioner("t", 100)
    bp.update_partition_load_stats(
        np.array([0, 3, 1, 7], np.int32), np.array([0, 1, 2, 3], np.int32), 4
    )
    cft = bp.load_stats[0].tolist()  # weights 8 5 7 1 -> 8 13 20 21
    weights = np.diff([0] + cft)
    assert weights.tolist() == [8, 5, 7, 1]
    n = 63_000
    counts = np.bincount([bp.next_partition(cluster(4)) for _ in range(n)], minlength=4)
    expected = [n * w / 21 for w in weights]
    assert chi_square(counts, expected) < 16.27, counts  # dof 3, p = 0.001


def test_threads_peek_and_update_safely() -> None:
    bp = BuiltInPartitioner("t", 50)
    c = cluster(5)
    seen = set()
    errors = []

    def work() -> None:
        try:
            for _ in range(5000):
                info = bp.peek_current_partition_info(c)
                seen.add(info.index)
                bp.update_partition_info(info, 7, c, True)
        except Exception as exc:  # pragma: no cover - would fail the test below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors and seen <= set(range(5)) and len(seen) == 5


def test_keyed_choice_is_murmur2() -> None:
    from cproducer._murmur2 import murmur2

    assert BuiltInPartitioner.partition_for_key(b"abc", 7) == (murmur2(b"abc") & 0x7FFFFFFF) % 7
    with pytest.raises(ValueError):
        BuiltInPartitioner.partition_for_key(b"abc", 0)
