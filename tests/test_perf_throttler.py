"""cproducer-perf-test paces records as Java's ProducerPerformance does (ThroughputThrottler):
over the target rate, 1/target of sleep is owed per record and slept once 2 ms are owed, so
records leave in bursts of about 2 ms worth. The bursts decide how full a sticky partition's
batches get at linger.ms=0, hence the legacy partitioner's shares in the KIP-794 benchmark."""

from __future__ import annotations

from typing import List

import pytest

from cproducer.tools import perf
from cproducer.tools.perf import ThroughputThrottler


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> List[float]:
    slept: List[float] = []
    monkeypatch.setattr(perf.time, "sleep", slept.append)
    return slept


def test_the_sleep_owed_is_slept_in_2_ms_chunks(sleeps: List[float]) -> None:
    t = ThroughputThrottler(2048, start=0.0)
    # 100 records after the first, all sent in the first 0.1 ms: far ahead of 2048/s (the
    # first is judged with no record before it, as Java's i)
    throttled = [i for i in range(101) if t.should_throttle(i, 0.0001)]
    for _ in throttled:
        t.throttle()
    assert throttled == list(range(1, 101))
    # five records owe 5/2048 s = 2.44 ms, the first sum at or over 2 ms
    assert sleeps == pytest.approx([5 / 2048] * 20)


def test_no_sleep_while_the_rate_is_at_or_under_the_target(sleeps: List[float]) -> None:
    t = ThroughputThrottler(2048, start=0.0)
    assert not t.should_throttle(2048, 1.0)  # exactly on target
    assert not t.should_throttle(100, 1.0)
    assert t.should_throttle(2049, 1.0)
    assert not t.should_throttle(5, 0.0)  # no time has passed yet: Java's elapsed > 0
    assert sleeps == []


def test_no_target_never_throttles() -> None:
    t = ThroughputThrottler(-1, start=0.0)
    assert not t.should_throttle(10**9, 0.001)


def test_a_chunk_owes_the_sleep_of_all_its_records(sleeps: List[float]) -> None:
    t = ThroughputThrottler(1000, start=0.0)
    t.throttle(10_000)
    assert sleeps == pytest.approx([10.0])
    t.throttle(1)  # 1 ms owed: not slept yet
    assert sleeps == pytest.approx([10.0])
