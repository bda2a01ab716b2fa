"""The windowed stats behind metrics() (cproducer.utils.sampled_stat), the Sender's per-request
recording (SenderMetrics) and the metrics.* configs. Times are given explicitly: nothing waits.

The peer for the stats is kafka-python's port of Java's stats (``kafka.metrics.stats``): the same
values at the same times must read the same."""

from __future__ import annotations

import math
import threading
import time
from typing import Any, Dict, List, Tuple

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.metrics import MetricConfig as PeerConfig
from kafka.metrics.stats import Avg, Count, Max, Rate

from cproducer.cluster import TopicPartition
from cproducer.errors import BufferExhaustedError, ConfigError
from cproducer.network.network_metrics import NetworkMetrics
from cproducer.producer.config import ProducerConfig
from cproducer.producer.internals.buffer_pool import BufferPool
from cproducer.producer.internals.producer_batch import ProducerBatch, produce_request_stats
from cproducer.producer.internals.sender_metrics import SenderMetrics
from cproducer.record.record_batch_builder import RecordBatchBuilder
from cproducer.utils.sampled_stat import DEBUG, INFO, TRACE, MetricConfig, SampledStat

# ------------------------------------------------------------------ the stats against the peer

# groups of values recorded at one instant: (ms since the previous group, values)
_groups = st.lists(
    st.tuples(st.integers(0, 2500), st.lists(st.integers(0, 10_000), min_size=1, max_size=5)),
    min_size=1,
    max_size=25,
)


@settings(max_examples=200, deadline=None)
@given(
    groups=_groups,
    samples=st.integers(2, 4),
    window_ms=st.sampled_from([100, 1000, 3000]),
    read_after=st.integers(0, 4000),
)
def test_readings_match_kafka_pythons_stats(
    groups: List[Tuple[int, List[int]]], samples: int, window_ms: int, read_after: int
) -> None:
    """Each group goes in once here (its sum, its count, its max: what the Sender does per
    request) and value by value into kafka-python's Avg, Max, Rate and Rate(Count)."""
    ours = SampledStat(MetricConfig(samples, window_ms))
    peer_config = PeerConfig(samples=samples, time_window_ms=window_ms)
    avg, top, rate, count_rate = Avg(), Max(), Rate(), Rate(sampled_stat=Count())
    now = 1_000_000
    for delta, values in groups:
        now += delta
        ours.record(sum(values), now, len(values), max(values))
        for v in values:
            for stat in (avg, top, rate, count_rate):
                stat.record(peer_config, v, now)
    now += read_after
    assert ours.total == sum(sum(v) for _, v in groups)
    assert ours.count == sum(len(v) for _, v in groups)
    assert ours.rate(now) == pytest.approx(rate.measure(peer_config, now))
    assert ours.count_rate(now) == pytest.approx(count_rate.measure(peer_config, now))
    if math.isnan(ours.avg(now)):
        # nothing live: Java reads NaN (kafka-python 0 and -inf)
        assert math.isnan(ours.max(now)) and ours.rate(now) == 0.0
        assert avg.measure(peer_config, now) == 0.0
    else:
        assert ours.avg(now) == pytest.approx(avg.measure(peer_config, now))
        assert ours.max(now) == top.measure(peer_config, now)


def test_a_rate_counts_at_least_samples_minus_one_whole_windows() -> None:
    """Java's Rate.windowSize: 2 samples of 30 s, 10 events in the first second: 10 / 31 s."""
    stat = SampledStat(MetricConfig(2, 30_000))
    stat.record(4, 0, events=2)
    stat.record(6, 1000, events=8)
    assert stat.rate(1000) == pytest.approx(10 / 31)
    assert stat.count_rate(1000) == pytest.approx(10 / 31)
    # 45 s on: one full window passed, so the span itself is the window
    assert stat.rate(45_000) == pytest.approx(10 / 45)
    # one sample (no minimum): what the span since the first value holds
    one = SampledStat(MetricConfig(1, 60_000))
    one.record(10, 0)
    assert one.rate(2000) == pytest.approx(10 / 2)
    assert one.rate(0) == pytest.approx(10 / 0.001)  # at least 1 ms


def test_old_samples_stop_counting_and_the_totals_stay() -> None:
    stat = SampledStat(MetricConfig(2, 1000))
    stat.record(5, 0)
    stat.record(7, 1500)  # a second window
    assert stat.avg(1600) == 6.0 and stat.max(1600) == 7.0
    stat.record(9, 2600)  # a third: the first window's slot is reused
    assert stat.avg(2600) == 8.0 and stat.max(2600) == 9.0
    # 2 x 1000 ms after a sample began, it no longer counts
    assert stat.avg(3500) == 9.0
    assert math.isnan(stat.avg(4600)) and math.isnan(stat.max(4600))
    assert stat.rate(4600) == 0.0 and stat.count_rate(4600) == 0.0
    assert stat.total == 21.0 and stat.count == 3


def test_a_time_in_ns_reads_as_a_fraction_of_the_window() -> None:
    """bufferpool-wait-ratio / io-wait-ratio: Java's Rate in NANOSECONDS."""
    stat = SampledStat(MetricConfig(2, 1000))
    stat.record(250_000_000, 0)  # 250 ms waited
    stat.record(250_000_000, 1000)
    assert stat.rate(2000, 1e-6) == pytest.approx(0.5 / 2)


def test_nothing_recorded_reads_nan_averages_and_zero_rates() -> None:
    stat = SampledStat(MetricConfig())
    assert math.isnan(stat.avg(5)) and math.isnan(stat.max(5))
    assert stat.rate(5) == 0.0 and stat.total == 0.0 and stat.count == 0


def test_a_record_standing_for_several_events_keeps_their_largest() -> None:
    stat = SampledStat(MetricConfig(2, 1000))
    stat.record(10, 0, 3, 6)  # 3 events adding up to 10, the largest 6
    stat.record(2, 10, events=1)
    assert stat.avg(10) == pytest.approx(12 / 4) and stat.max(10) == 6.0
    assert stat.count_rate(10) == pytest.approx(4 / 1.01)  # 10 ms + one whole window
    assert (stat.total, stat.count) == (12.0, 4)
    assert isinstance(stat.total, float) and isinstance(stat.count, int)


def test_a_value_without_events_counts_in_sums_not_in_averages_or_maxima() -> None:
    stat = SampledStat(MetricConfig(2, 1000))
    stat.record(5, 0, events=0)
    assert math.isnan(stat.avg(0)) and math.isnan(stat.max(0))  # no event: nothing to average
    assert stat.rate(0) == pytest.approx(5 / 1.0) and stat.count_rate(0) == 0.0
    assert (stat.total, stat.count) == (5.0, 0)


def test_only_the_last_samples_minus_one_finished_windows_are_kept() -> None:
    stat = SampledStat(MetricConfig(3, 100))
    for i, at in enumerate((0, 100, 200, 300)):
        stat.record(i + 1, at)
    assert stat._start == 300
    assert stat._done == [(100, 1, 2.0, 2.0), (200, 1, 3.0, 3.0)]
    assert stat.avg(300) == 3.0 and stat.max(300) == 4.0
    assert stat.rate(300) == pytest.approx(9 / 0.2)  # 200 ms spanned: the 2 windows minimum
    # one sample: no finished windows at all
    one = SampledStat(MetricConfig(1, 100))
    one.record(1, 0)
    one.record(2, 150)
    assert one._done is None and one.avg(150) == 2.0 and one.total == 3.0


def test_a_reading_a_few_ms_before_the_current_sample_began() -> None:
    """metrics() reads its clock, then the I/O thread records at a later ms before the reading
    takes the lock: the span since the oldest live sample is negative. -10 ms floors to -1
    whole window, so two windows are added (Java's division truncates to 0 and adds one)."""
    stat = SampledStat(MetricConfig(2, 1000))
    stat.record(10, 0)
    stat.record(20, 5000)  # a new window; the first one is 2 x 1000 ms old at 4990
    assert stat.rate(4990) == pytest.approx(20 / 1.99)
    assert stat.avg(4990) == 20.0 and stat.max(4990) == 20.0


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"samples": 0}, "metrics.num.samples"),
        ({"window_ms": 0}, "metrics.sample.window.ms"),
        ({"recording_level": 7}, "recording_level"),
    ],
)
def test_metric_config_refuses_what_cannot_work(kwargs: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        MetricConfig(**kwargs)


# ------------------------------------------------------------------ the configs


def test_metrics_configs_have_javas_defaults_and_checks() -> None:
    cfg = ProducerConfig(bootstrap_servers="h:1")
    assert MetricConfig.from_config(cfg).__repr__() == (
        "MetricConfig(samples=2, window_ms=30000, recording_level=INFO)"
    )
    cfg = ProducerConfig(
        {
            "bootstrap.servers": "h:1",
            "metrics.num.samples": "3",
            "metrics.recording.level": "debug",
        },
        metrics_sample_window_ms=5000,
    )
    mc = MetricConfig.from_config(cfg)
    assert (mc.samples, mc.window_ms, mc.recording_level) == (3, 5000, DEBUG)
    assert MetricConfig.from_config(
        ProducerConfig(bootstrap_servers="h:1", metrics_recording_level="TRACE")
    ).should_record(DEBUG)
    bad: Dict[str, Any]
    for bad in (
        {"metrics_num_samples": 0},
        {"metrics_sample_window_ms": 0},
        {"metrics_recording_level": "VERBOSE"},
    ):
        with pytest.raises(ConfigError, match=next(iter(bad)).replace("_", ".")):
            ProducerConfig(bootstrap_servers="h:1", **bad)


def test_the_window_configs_change_the_readings() -> None:
    """The same values read differently under other metrics.num.samples /
    metrics.sample.window.ms: the configs reach the stats."""
    readings = []
    for samples, window in ((2, 30_000), (1, 10_000), (2, 1000)):
        cfg = ProducerConfig(
            bootstrap_servers="h:1",
            metrics_num_samples=samples,
            metrics_sample_window_ms=window,
        )
        m = SenderMetrics(MetricConfig.from_config(cfg))
        m.record_errors("t", 10, 0)
        m.record_errors("t", 10, 2500)
        out: dict = {}
        m.producer_metrics(2500, out)
        readings.append(out["record-error-rate"])
        assert out["record-error-total"] == 20.0
    # 20 in 2.5 s + one window; 20 in 2.5 s (one sample, no minimum); the first window is
    # older than 2 x 1 s: the last 10 in its 1 s window
    assert readings == pytest.approx([20 / 32.5, 20 / 2.5, 10 / 1])
    cfg = ProducerConfig(bootstrap_servers="h:1", metrics_num_samples=2)
    m = SenderMetrics(MetricConfig.from_config(cfg))
    m.record_errors("t", 10, 0)
    out = {}
    m.producer_metrics(61_000, out)
    assert out["record-error-rate"] == 0.0  # 2 x 30 s later: gone from the windows


@pytest.mark.parametrize("level, io", [(INFO, False), (DEBUG, True), (TRACE, True)])
def test_the_recording_level_decides_the_io_thread_time_metrics(level: int, io: bool) -> None:
    metrics = NetworkMetrics(MetricConfig(recording_level=level))
    assert metrics.record_io_time is io
    metrics.poll_time(3_000_000, 1_000_000, 10)
    out: dict = {}
    metrics.read(10, out)
    names = {"io-wait-ratio", "io-ratio", "io-wait-time-ns-avg", "select-total"}
    assert (names <= set(out)) is io
    if io:
        assert out["io-wait-time-ns-avg"] == 3_000_000.0 and out["select-total"] == 1.0


# ------------------------------------------------------------------ SenderMetrics per request


def _batch(topic: str, values: List[bytes], created_ms: int, drained_ms: int) -> ProducerBatch:
    builder = RecordBatchBuilder(bytearray(4096), 0, 4096)
    b = ProducerBatch(TopicPartition(topic, 0), builder, created_ms)
    for v in values:
        assert b.try_append(created_ms, None, v, None, None, created_ms) is not None
    b.close()
    b.drained(drained_ms)
    return b


def test_one_request_counts_its_batches_records_bytes_and_topics() -> None:
    m = SenderMetrics()
    a1 = _batch("a", [b"x" * 10, b"y" * 50], 100, 130)
    a2 = _batch("a", [b"z" * 20], 110, 130)
    b1 = _batch("b", [b"w" * 5] * 4, 120, 130)
    m.update_produce_request_metrics([a1, a2, b1], 130)
    m.record_retries("b", 4, 140)
    m.record_errors("a", 1, 150)
    m.record_errors("never-sent", 3, 150)  # Java: producer-wide only
    m.record_produce_response(7, 12, 0, 150)
    out: dict = {}
    m.producer_metrics(150, out)
    sizes = [len(b.buffer()) for b in (a1, a2, b1)]
    assert out["record-send-total"] == 7.0 and m.records_sent == 7
    assert out["records-per-request-avg"] == 7.0
    assert out["batch-size-avg"] == pytest.approx(sum(sizes) / 3)
    assert out["batch-size-max"] == max(sizes)
    assert out["record-queue-time-avg"] == pytest.approx((30 + 20 + 10) / 3)
    assert out["record-queue-time-max"] == 30.0
    # each batch's largest record, as encoded (value + its framing)
    assert out["record-size-max"] == a1.max_record_size and 50 < a1.max_record_size < 60
    assert out["compression-rate-avg"] == 1.0
    assert out["record-retry-total"] == 4.0 and out["record-error-total"] == 4.0
    assert out["request-latency-avg"] == 12.0 and out["request-latency-max"] == 12.0
    topics = m.topic_metrics(150)
    assert set(topics) == {"a", "b"}
    assert topics["a"]["record-send-total"] == 3.0 and topics["b"]["record-send-total"] == 4.0
    assert (
        topics["a"]["byte-total"] == sizes[0] + sizes[1] and topics["b"]["byte-total"] == sizes[2]
    )
    assert topics["a"]["record-error-total"] == 1.0 and topics["b"]["record-retry-total"] == 4.0
    assert topics["a"]["record-retry-total"] == 0.0
    assert m.node_latencies(150) == {7: {"request-latency-avg": 12.0, "request-latency-max": 12.0}}
    assert (m.requests_sent, m.batches_sent) == (1, 3)


def test_a_compressed_batch_reports_its_ratio() -> None:
    m = SenderMetrics()
    b = ProducerBatch(
        TopicPartition("c", 0), RecordBatchBuilder(bytearray(1 << 16), 1, 1 << 16), 0
    )  # gzip
    for _ in range(200):
        assert b.try_append(0, None, b"the same words again " * 4, None, None, 0) is not None
    b.close()
    m.update_produce_request_metrics([b], 0)
    out: dict = {}
    m.producer_metrics(0, out)
    assert 0 < out["compression-rate-avg"] < 0.2
    assert m.topic_metrics(0)["c"]["compression-rate"] == out["compression-rate-avg"]


def _codec_batch(topic: str, codec: int, n: int, created_ms: int, close: bool) -> ProducerBatch:
    b = ProducerBatch(
        TopicPartition(topic, 0), RecordBatchBuilder(bytearray(1 << 16), codec, 1 << 16), created_ms
    )
    for i in range(n):
        value = b"the same words again " * (1 + i % 5)
        assert b.try_append(created_ms, None, value, None, None, created_ms) is not None
    if close:
        b.close()
    return b


def test_a_requests_batches_are_summed_as_their_properties_read() -> None:
    """produce_request_stats reads the batches' fields in C: its sums and maxima are the ones
    the batches' Python properties give (closed, compressed, still open with an estimated size,
    drained before their creation time), per topic in the order of its first batch."""
    a1 = _codec_batch("a", 0, 7, 100, close=True)
    b1 = _codec_batch("b", 1, 200, 90, close=True)  # gzip
    a2 = _codec_batch("a", 3, 50, 120, close=False)  # lz4, open: its size is estimated
    c1 = _codec_batch("c", 4, 30, 100, close=True)  # zstd
    a3 = _codec_batch("a", 0, 1, 500, close=True)
    for b, at in ((a1, 130), (b1, 140), (a2, 130), (c1, 100), (a3, 450)):  # a3: clock went back
        b.drained(at)
    batches = [a1, b1, a2, c1, a3]
    sizes = [b.estimated_size_in_bytes for b in batches]
    ratios = [b.builder.compression_ratio for b in batches]
    assert sizes[2] > 0 and ratios[2] == 1.0 and 0 < ratios[1] < 0.2 and ratios[0] == 1.0
    queues = [30, 50, 10, 0, 0]
    biggest = [b.max_record_size for b in batches]
    records = [7, 200, 50, 30, 1]
    assert [b.record_count for b in batches] == records
    ratio_sum = 0.0
    for r in ratios:
        ratio_sum += r  # in the batches' order, as SampledStat sums them
    stats = produce_request_stats(batches)
    assert stats[:8] == (
        sum(records),
        sum(sizes),
        max(sizes),
        sum(queues),
        max(queues),
        sum(biggest),
        max(biggest),
        ratio_sum,
    )
    per_topic = stats[8]
    assert list(per_topic) == ["a", "b", "c"]
    assert per_topic["a"] == (58, sizes[0] + sizes[2] + sizes[4], ratios[0] + ratios[2] + 1.0, 3)
    assert per_topic["b"] == (200, sizes[1], ratios[1], 1)
    assert per_topic["c"] == (30, sizes[3], ratios[3], 1)
    # equal topic strings that are different objects are one topic
    t1, t2 = (
        _codec_batch("topic-x", 0, 1, 0, True),
        _codec_batch("".join(["topic-", "x"]), 0, 2, 0, True),
    )
    assert t1.topic is not t2.topic
    assert produce_request_stats([t1, t2])[8] == {
        "topic-x": (3, t1.estimated_size_in_bytes + t2.estimated_size_in_bytes, 2.0, 2)
    }
    assert produce_request_stats([]) == (0, 0, 0, 0, 0, 0, 0, 0.0, {})
    with pytest.raises(TypeError):
        produce_request_stats([a1, object()])


def test_an_answered_request_records_its_latency_and_throttle_time_in_one_call() -> None:
    m = SenderMetrics(MetricConfig(2, 1000))
    for node, latency, throttle, now in ((1, 12, 0, 100), (2, 30, 250, 900), (1, 4, 5, 1500)):
        m.record_produce_response(node, latency, throttle, now)
    out: dict = {}
    m.producer_metrics(1600, out)
    assert out["request-latency-avg"] == pytest.approx((12 + 30 + 4) / 3)
    assert out["request-latency-max"] == 30.0
    assert out["produce-throttle-time-avg"] == pytest.approx((0 + 250 + 5) / 3)
    assert out["produce-throttle-time-max"] == 250.0
    assert m.node_latencies(1600) == {
        1: {"request-latency-avg": 8.0, "request-latency-max": 12.0},
        2: {"request-latency-avg": 30.0, "request-latency-max": 30.0},
    }


class _Pool:
    total_memory = 1000
    available_memory = 400
    queued = 1
    wait_time_ns_total = 0
    exhausted_total = 0


def test_the_pools_wait_counters_become_a_ratio_and_a_rate() -> None:
    pool = _Pool()
    m = SenderMetrics(MetricConfig(2, 1000), pool)
    m.sample_pool(0)  # nothing yet
    pool.wait_time_ns_total = 500_000_000  # 0.5 s waited
    pool.exhausted_total = 2
    m.sample_pool(1000)
    m.sample_pool(1500)  # unchanged: nothing more
    out: dict = {}
    m.producer_metrics(2000, out)
    assert out["bufferpool-wait-time-ns-total"] == 5e8
    # recorded at 1000 (its window began then), read 1 s later: half of that second
    assert out["bufferpool-wait-ratio"] == pytest.approx(0.5)
    assert out["buffer-exhausted-total"] == 2.0
    assert out["buffer-exhausted-rate"] == pytest.approx(2 / 1)


def test_the_buffer_pool_counts_the_time_allocations_wait_and_those_that_give_up() -> None:
    pool = BufferPool(1000, 100)
    held = pool.allocate(1000, 0)
    assert (pool.wait_time_ns_total, pool.exhausted_total) == (0, 0)  # no wait: nothing
    with pytest.raises(BufferExhaustedError):
        pool.allocate(100, 20)  # gives up after its 20 ms
    assert pool.exhausted_total == 1 and pool.wait_time_ns_total >= 20_000_000
    gave_up = pool.wait_time_ns_total
    got: List[Any] = []
    waiter = threading.Thread(target=lambda: got.append(pool.allocate(100, 60_000)))
    waiter.start()
    while pool.queued == 0:
        time.sleep(0.001)
    pool.deallocate(held)  # the waiter gets its memory
    waiter.join()
    assert len(got[0]) == 100 and pool.exhausted_total == 1
    assert pool.wait_time_ns_total > gave_up
    m = SenderMetrics(MetricConfig(), pool)
    m.sample_pool(5)
    out: dict = {}
    m.producer_metrics(5, out)
    assert out["bufferpool-wait-time-ns-total"] == pool.wait_time_ns_total
    assert out["buffer-exhausted-total"] == 1.0
