"""BuiltInPartitioner (KIP-794): sticky switching points, the CFT, distributions, threads."""

from __future__ import annotations

import itertools
import threading
from typing import Any, Callable, Iterable, List, Sequence

import numpy as np
import pytest

from cproducer.cluster import Cluster, Node, PartitionInfo
from cproducer.producer.internals.built_in_partitioner import (
    BuiltInPartitioner,
    StickyPartitionInfo,
)
from cproducer.utils.murmur2 import murmur2

N1, N2 = Node(1, "a", 1), Node(2, "b", 1)


def cluster(n: int = 3, leaderless: Iterable[int] = (), topic: str = "t") -> Cluster:
    down = set(leaderless)
    parts = [
        PartitionInfo(topic, p, None if p in down else (N1 if p % 2 else N2), (), ())
        for p in range(n)
    ]
    return Cluster([N1, N2], parts)


def seq(*values: int) -> Callable[[], int]:
    it = itertools.cycle(values)
    return lambda: next(it)


def i32(values: Sequence[int]) -> np.ndarray:
    return np.array(values, dtype=np.int32)


def load_stats(bp: BuiltInPartitioner) -> Any:
    stats = bp.load_stats
    assert stats is not None
    return stats


def chi_square(observed: Any, expected: Any) -> float:
    return float(sum((o - e) ** 2 / e for o, e in zip(observed, expected)))


# -- sticky partition ---------------------------------------------------------------------------


def test_sticky_switch_after_batch_size_only_when_allowed_forced_at_twice() -> None:
    bp = BuiltInPartitioner("t", 100, random=seq(0, 1, 2))
    c = cluster()
    assert bp.current_partition_info is None
    info = bp.peek_current_partition_info(c)
    assert info.index == 0 and info.produced_bytes == 0
    assert bp.peek_current_partition_info(c) is info  # peeking does not switch
    bp.update_partition_info(info, 99, c, enable_switch=True)
    assert bp.peek_current_partition_info(c) is info  # 99 < batch.size
    bp.update_partition_info(info, 50, c, enable_switch=False)
    assert bp.peek_current_partition_info(c) is info  # 149: switching not allowed yet
    bp.update_partition_info(info, 50, c, enable_switch=False)
    assert bp.peek_current_partition_info(c) is info  # 199: still < 2 x batch.size
    assert not bp.is_partition_changed(info)
    bp.update_partition_info(info, 1, c, enable_switch=False)  # 200 = 2 x batch.size: forced
    new = bp.peek_current_partition_info(c)
    assert new is not info and new.index == 1 and new.produced_bytes == 0
    assert bp.is_partition_changed(info) and not bp.is_partition_changed(new)
    assert info.produced_bytes == 200
    bp.update_partition_info(new, 100, c)  # exactly batch.size, switching allowed by default
    assert bp.peek_current_partition_info(c).index == 2


def test_a_stale_info_counts_bytes_but_does_not_switch_again() -> None:
    bp = BuiltInPartitioner("t", 10, random=seq(0, 1, 2))
    c = cluster()
    old = bp.peek_current_partition_info(c)
    bp.update_partition_info(old, 10, c)
    current = bp.peek_current_partition_info(c)
    assert current.index == 1
    bp.update_partition_info(old, 50, c)  # a late update for the old partition
    assert bp.peek_current_partition_info(c) is current


def test_none_info_means_no_builtin_partitioning() -> None:
    bp = BuiltInPartitioner("t", 10, random=seq(0))
    assert not bp.is_partition_changed(None)
    bp.update_partition_info(None, 1000, cluster())  # nothing to count
    assert bp.current_partition_info is None


def test_constructor_checks() -> None:
    with pytest.raises(ValueError, match="sticky_batch_size must be >= 1, got 0"):
        BuiltInPartitioner("t", 0)
    with pytest.raises(TypeError, match="random must be None or a zero-argument callable"):
        BuiltInPartitioner("t", 10, random=5)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        BuiltInPartitioner(None, 10)  # type: ignore[arg-type]
    assert StickyPartitionInfo(3).index == 3


# -- uniform choice -----------------------------------------------------------------------------


def test_uniform_over_available_partitions_then_all() -> None:
    bp = BuiltInPartitioner("t", 100, random=seq(0, 1, 2, 3))
    c = cluster(4, leaderless=(1, 2))
    assert [bp.next_partition(c) for _ in range(4)] == [0, 3, 0, 3]
    c_none = cluster(3, leaderless=(0, 1, 2))
    assert [bp.next_partition(c_none) for _ in range(4)] == [0, 1, 2, 0]  # all partitions then


def test_random_values_are_made_positive_as_java_to_positive() -> None:
    bp = BuiltInPartitioner("t", 100, random=seq(-1, -7, 1 << 40))
    c = cluster(5)
    # toPositive(-1) = 0x7fffffff; toPositive(-7) = 0x7ffffff9; 1 << 40 keeps its low 31 bits
    assert [bp.next_partition(c) for _ in range(3)] == [0x7FFFFFFF % 5, 0x7FFFFFF9 % 5, 0]


def test_a_new_cluster_view_is_used_at_once() -> None:
    bp = BuiltInPartitioner("t", 100, random=seq(0, 1, 2, 3))
    assert [bp.next_partition(cluster(4)) for _ in range(4)] == [0, 1, 2, 3]
    only_two = cluster(4, leaderless=(0, 1, 3))
    assert {bp.next_partition(only_two) for _ in range(8)} == {2}
    grown = cluster(4).with_partitions([PartitionInfo("t", 4, N1)])
    bp = BuiltInPartitioner("t", 100, random=seq(*range(5)))
    assert [bp.next_partition(grown) for _ in range(5)] == [0, 1, 2, 3, 4]


def test_a_topic_without_partitions_is_refused_and_the_partitioner_stays_usable() -> None:
    bp = BuiltInPartitioner("t", 100)
    with pytest.raises(ValueError, match="topic 't' has no partitions"):
        bp.next_partition(cluster(3, topic="other"))
    with pytest.raises(ValueError):
        bp.peek_current_partition_info(Cluster.empty())
    assert bp.current_partition_info is None
    assert bp.peek_current_partition_info(cluster(3)).index in (0, 1, 2)


def test_uniform_draws_follow_the_uniform_distribution() -> None:
    bp = BuiltInPartitioner("t", 100)  # the built-in generator
    c = cluster(6)
    n = 60_000
    counts = np.bincount([bp.next_partition(c) for _ in range(n)], minlength=6)
    # dof 5, p = 0.001: critical value 20.515
    assert chi_square(counts, [n / 6] * 6) < 20.515, counts


def test_uniform_draws_over_the_available_subset() -> None:
    bp = BuiltInPartitioner("t", 100)
    c = cluster(8, leaderless=(1, 4, 6))
    n = 50_000
    counts = np.bincount([bp.next_partition(c) for _ in range(n)], minlength=8)
    assert counts[[1, 4, 6]].sum() == 0
    live = counts[[0, 2, 3, 5, 7]]
    assert chi_square(live, [n / 5] * 5) < 18.467, counts  # dof 4, p = 0.001


def test_two_partitioners_do_not_share_a_sequence() -> None:
    c = cluster(1000)
    a, b = BuiltInPartitioner("t", 100), BuiltInPartitioner("t", 100)
    assert [a.next_partition(c) for _ in range(20)] != [b.next_partition(c) for _ in range(20)]


# -- adaptive choice (load stats) -----------------------------------------------------------------


def test_cft_example_and_the_mapping_of_every_random_number() -> None:
    bp = BuiltInPartitioner("t", 100, random=seq(*range(8)))
    sizes = i32([0, 3, 1])
    bp.update_partition_load_stats(sizes, i32([0, 1, 2]), 3)
    cft, ids, length = load_stats(bp)
    assert cft.tolist() == [4, 5, 8] and length == 3 and cft.dtype == np.int32
    assert cft is sizes and sizes.tolist() == [4, 5, 8]  # built in place, as Java does
    assert bp.load_stats_range_end == 8
    # 0-3 -> index 0; 4 (= cft[0]) -> index 1; 5 (= cft[1]) .. 7 -> index 2
    picks = [bp.next_partition(cluster()) for _ in range(8)]
    assert picks == [0, 0, 0, 0, 1, 2, 2, 2]


def test_the_mapping_goes_through_the_partition_ids() -> None:
    bp = BuiltInPartitioner("t", 100, random=seq(*range(8)))
    bp.update_partition_load_stats(i32([0, 3, 1]), i32([7, 2, 5]), 3)
    assert [bp.next_partition(cluster()) for _ in range(8)] == [7, 7, 7, 7, 2, 5, 5, 5]


def test_every_random_value_maps_to_the_first_greater_cft_entry() -> None:
    # exhaustive check of the binary search against a linear scan, exact hits included
    rng = np.random.default_rng(7)
    for length in range(1, 12):
        sizes = rng.integers(0, 6, size=length + 1).astype(np.int32)
        sizes[0] = 9  # never all equal
        bp = BuiltInPartitioner("t", 100)
        bp.update_partition_load_stats(
            sizes.copy(), np.arange(100, 101 + length, dtype=np.int32), length
        )
        cft = load_stats(bp)[0][:length].tolist()
        bp2 = BuiltInPartitioner("t", 100, random=seq(*range(cft[-1])))
        bp2.update_partition_load_stats(
            sizes.copy(), np.arange(100, 101 + length, dtype=np.int32), length
        )
        for r in range(cft[-1]):
            expected = 100 + next(i for i, v in enumerate(cft) if v > r)
            assert bp2.next_partition(None) == expected, (cft, r)


def test_lists_are_copied_not_modified() -> None:
    bp = BuiltInPartitioner("t", 100)
    sizes = [2, 0, 5]
    bp.update_partition_load_stats(sizes, [0, 1, 2], 3)
    assert sizes == [2, 0, 5]
    assert load_stats(bp)[0].tolist() == [4, 10, 11]  # weights 4 6 1
    wide = np.array([1, 0], dtype=np.int64)  # another dtype: converted, not modified
    bp.update_partition_load_stats(wide, np.array([0, 1]), 2)
    assert wide.tolist() == [1, 0] and load_stats(bp)[0].tolist() == [1, 3]


def test_no_stats_when_equal_trivial_or_none() -> None:
    bp = BuiltInPartitioner("t", 100)
    bp.update_partition_load_stats(i32([2, 2, 2]), i32([0, 1, 2]), 3)
    assert bp.load_stats is None and bp.load_stats_range_end is None
    bp.update_partition_load_stats(i32([5]), i32([0]), 1)  # fewer than 2 partitions
    assert bp.load_stats is None
    bp.update_partition_load_stats(i32([5, 1]), i32([0, 1]), 0)  # nothing left
    assert bp.load_stats is None
    bp.update_partition_load_stats(i32([5, 1]), i32([0, 1]), 2)
    assert bp.load_stats is not None
    bp.update_partition_load_stats(None, None, 0)  # adaptive off: back to uniform
    assert bp.load_stats is None


def test_equal_sizes_with_a_partition_left_out_still_use_the_subset() -> None:
    bp = BuiltInPartitioner("t", 100, random=seq(0, 1, 2, 3))
    bp.update_partition_load_stats(i32([1, 1, 9]), i32([4, 5, 6]), 2)
    cft, ids, length = load_stats(bp)
    assert cft[:2].tolist() == [1, 2] and length == 2 and ids[:2].tolist() == [4, 5]
    assert [bp.next_partition(cluster(7)) for _ in range(4)] == [4, 5, 4, 5]
    # even a single partition left (the others are too slow): Java keeps adaptive logic
    bp.update_partition_load_stats(i32([3, 0, 0]), i32([6, 1, 2]), 1)
    assert {bp.next_partition(cluster(7)) for _ in range(5)} == {6}


def test_bad_load_stats_are_refused_and_the_previous_ones_kept() -> None:
    bp = BuiltInPartitioner("t", 100, random=seq(0))
    bp.update_partition_load_stats(i32([0, 3, 1]), i32([0, 1, 2]), 3)
    before = load_stats(bp)[0].tolist()
    sizes = i32([1, 2, 3])
    with pytest.raises(ValueError, match="length 4 is larger than queue_sizes"):
        bp.update_partition_load_stats(sizes, i32([0, 1, 2]), 4)
    with pytest.raises(ValueError, match="length 3 is larger than partition_ids"):
        bp.update_partition_load_stats(sizes, i32([0, 1]), 3)
    with pytest.raises(TypeError, match="partition_ids must be given"):
        bp.update_partition_load_stats(sizes, None, 3)
    with pytest.raises(TypeError, match="queue_sizes must be a sequence or array of int32"):
        bp.update_partition_load_stats(["a", "b"], [0, 1], 2)
    with pytest.raises(ValueError, match="one-dimensional"):
        bp.update_partition_load_stats([[1, 2], [3, 4]], [0, 1], 2)
    with pytest.raises(ValueError, match="too wide"):
        bp.update_partition_load_stats(i32([0, 2**31 - 2, 0]), i32([0, 1, 2]), 3)
    assert sizes.tolist() == [1, 2, 3]  # untouched by the refused calls
    assert load_stats(bp)[0].tolist() == before
    assert bp.next_partition(cluster()) == 0


def test_weighted_draws_follow_the_cft() -> None:
    bp = BuiltInPartitioner("t", 100)
    bp.update_partition_load_stats(i32([0, 3, 1, 7]), i32([0, 1, 2, 3]), 4)
    cft = load_stats(bp)[0].tolist()  # weights 8 5 7 1 -> 8 13 20 21
    weights = np.diff([0] + cft)
    assert weights.tolist() == [8, 5, 7, 1]
    n = 63_000
    counts = np.bincount([bp.next_partition(cluster(4)) for _ in range(n)], minlength=4)
    expected = [n * w / 21 for w in weights]
    assert chi_square(counts, expected) < 16.266, counts  # dof 3, p = 0.001


def test_weighted_draws_over_many_partitions() -> None:
    rng = np.random.default_rng(3)
    sizes = rng.integers(0, 20, size=100).astype(np.int32)
    weights = (sizes.max() + 1 - sizes).astype(float)
    bp = BuiltInPartitioner("t", 100)
    bp.update_partition_load_stats(sizes, np.arange(100, dtype=np.int32), 100)
    n = 200_000
    counts = np.bincount([bp.next_partition(None) for _ in range(n)], minlength=100)
    expected = n * weights / weights.sum()
    assert chi_square(counts, expected) < 148.23, counts  # dof 99, p = 0.001


# -- threads ------------------------------------------------------------------------------------


def test_threads_peek_and_update_safely() -> None:
    bp = BuiltInPartitioner("t", 50)
    c = cluster(5, leaderless=(3,))
    seen: List[StickyPartitionInfo] = []
    errors: List[BaseException] = []
    lock = threading.Lock()  # stands for the partition queue lock (Java's protocol)

    def work() -> None:
        try:
            for _ in range(5000):
                info = bp.peek_current_partition_info(c)
                with lock:
                    if bp.is_partition_changed(info):
                        continue
                    seen.append(info)
                    bp.update_partition_info(info, 7, c, True)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors
    infos = list({id(i): i for i in seen}.values())
    assert {i.index for i in infos} == {0, 1, 2, 4}  # every switch lands on an available one
    # a partition switches at 50 bytes: 8 appends of 7 bytes each (56), never more under the lock
    assert all(i.produced_bytes == 56 for i in infos if i is not bp.current_partition_info)
    assert len(infos) == -(-len(seen) // 8)  # 8 appends per partition, the last one open


def test_threads_racing_stats_updates_and_draws() -> None:
    bp = BuiltInPartitioner("t", 50)
    errors: List[BaseException] = []
    stop = threading.Event()

    def draw() -> None:
        try:
            while not stop.is_set():
                assert bp.next_partition(None) in (10, 11, 12)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    bp.update_partition_load_stats(i32([0, 2, 1]), i32([10, 11, 12]), 3)
    readers = [threading.Thread(target=draw) for _ in range(3)]
    for th in readers:
        th.start()
    for k in range(3000):
        bp.update_partition_load_stats(i32([k % 5, 2, 1]), i32([10, 11, 12]), 3)
    stop.set()
    for th in readers:
        th.join()
    assert not errors


# -- keyed choice -------------------------------------------------------------------------------


def test_keyed_choice_is_murmur2() -> None:
    for key in (b"abc", bytearray(b"abc"), memoryview(b"abc"), b""):
        expected = (murmur2(bytes(key)) & 0x7FFFFFFF) % 7
        assert BuiltInPartitioner.partition_for_key(key, 7) == expected
    with pytest.raises(ValueError, match="num_partitions must be > 0"):
        BuiltInPartitioner.partition_for_key(b"abc", 0)
    with pytest.raises(TypeError):
        BuiltInPartitioner.partition_for_key(12, 3)
