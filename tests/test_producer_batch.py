"""ProducerBatch, ProduceRequestResult, FutureRecordMetadata and RecordMetadata (no network).

Batches are completed by hand with fake offsets; the finished bytes are read back with
kafka-python's decoder.
"""

from __future__ import annotations

import logging
import pickle
import threading
import time
from typing import Any, List, Optional, Tuple

import numpy as np
import pytest
from kafka.record.default_records import DefaultRecordBatch

from cproducer.cluster import TopicPartition
from cproducer.errors import (
    IllegalStateError,
    KafkaError,
    KafkaTimeoutError,
    NotEnoughReplicasError,
    RecordTooLargeError,
)
from cproducer.producer.batch_future import BatchFuture
from cproducer.producer.internals.produce_request_result import (
    FutureRecordMetadata,
    ProduceRequestResult,
    RecordMetadata,
)
from cproducer.producer.internals.producer_batch import (
    ABORTED,
    FAILED,
    IN_FLIGHT,
    SPLIT,
    SUCCEEDED,
    ProducerBatch,
)
from cproducer.record.record_batch_builder import RecordBatchBuilder

TP = TopicPartition("topic", 3)


def new_batch(size: int = 4096, created_ms: int = 100, codec: int = 0) -> ProducerBatch:
    return ProducerBatch(TP, RecordBatchBuilder(bytearray(size), codec, size), created_ms)


def append(
    batch: ProducerBatch,
    value: Optional[bytes] = b"v",
    key: Optional[bytes] = None,
    ts: int = 1000,
    cb: Any = None,
    headers: Any = None,
) -> FutureRecordMetadata:
    fut = batch.try_append(ts, key, value, headers, cb, 200)
    assert fut is not None
    return fut


class Recorder:
    """A callback that records (label, metadata, exception) calls."""

    def __init__(self, calls: List[Tuple[Any, Any, Any]], label: Any) -> None:
        self.calls, self.label = calls, label

    def __call__(self, md: Any, exc: Any) -> None:
        self.calls.append((self.label, md, exc))


# ---------------------------------------------------------------- RecordMetadata


def test_record_metadata_is_kafka_pythons_namedtuple() -> None:
    from kafka.producer.future import RecordMetadata as KafkaPythonRecordMetadata

    assert RecordMetadata._fields == KafkaPythonRecordMetadata._fields
    tp = TopicPartition("t", 2)
    args = ("t", 2, tp, 40, 1234, None, 3, 7, -1)
    md, theirs = RecordMetadata(*args), KafkaPythonRecordMetadata(*args)
    assert isinstance(md, tuple) and md == theirs and tuple(md) == args
    assert repr(md) == repr(theirs)
    assert md.has_offset() and md.has_timestamp()
    assert not RecordMetadata("t", 0, tp, -1, -1, None, -1, -1, -1).has_offset()
    assert pickle.loads(pickle.dumps(md)) == md
    with pytest.raises(AttributeError):
        md.offset = 5  # type: ignore[misc]


def test_record_metadata_made_by_a_batch_completion() -> None:
    """The batch builds RecordMetadata tuples in C: they must be real, complete, collectable."""
    import gc
    import sys

    seen: list = []
    type_refs = sys.getrefcount(RecordMetadata)
    for _round in range(3):
        b = new_batch(size=1 << 20)
        for i in range(1000):
            headers = [("h", b"xy")] if i == 0 else None
            append(
                b, b"v" * i, b"k" if i else None, 1000 + i, lambda md, exc: seen.append(md), headers
            )
        b.complete(500, -1)
    first = seen[0]
    assert type(first) is RecordMetadata and isinstance(first, tuple)
    assert first == ("topic", 3, TP, 500, 1000, None, -1, 0, 3)
    assert first._asdict()["serialized_header_size"] == 3  # "h" + b"xy"
    assert seen[1].serialized_header_size == -1 and seen[1].offset == 501
    assert seen[1].serialized_key_size == 1 and seen[1].timestamp == 1001
    assert pickle.loads(pickle.dumps(seen[5])) == seen[5]
    del seen[:], first
    gc.collect()
    assert sys.getrefcount(RecordMetadata) == type_refs  # each tuple gave its type back


@pytest.mark.parametrize("log_append_time", [-1, 777])
def test_record_metadata_kept_or_dropped_by_callbacks(log_append_time: int) -> None:
    """A completion reuses a RecordMetadata its callback did not keep: every callback still sees
    its own record's fields, and every tuple kept (or field of one) keeps its values."""
    kept: list = []
    offsets: list = []  # an item of a tuple that was dropped
    read: list = []  # the fields as each callback saw them

    def cb(md: Any, exc: Any) -> None:
        assert exc is None and type(md) is RecordMetadata
        read.append(tuple(md))
        offsets.append(md.offset)
        if md.offset % 3 == 0 or md.serialized_value_size == 7:
            kept.append(md)

    b = new_batch(size=1 << 16)
    expected = []
    for i in range(60):
        ts = 1000 + i // 4  # runs of equal timestamps, as records sent in the same ms
        value = b"v" * (7 if i % 10 == 9 else 3)
        key = None if i % 5 == 0 else b"k" * (i % 3)
        append(b, value, key, ts, cb)
        expected.append(
            (
                "topic",
                3,
                TP,
                500 + i,
                ts if log_append_time == -1 else log_append_time,
                None,
                -1 if key is None else len(key),
                len(value),
                -1,
            )
        )
    b.complete(500, log_append_time)
    assert read == expected
    assert offsets == [e[3] for e in expected]
    assert [tuple(md) for md in kept] == [e for e in expected if e[3] % 3 == 0 or e[7] == 7]
    assert len({id(md) for md in kept}) == len(kept)
    assert all(type(md) is RecordMetadata for md in kept)


# ---------------------------------------------------------------- ProduceRequestResult


def test_produce_request_result_set_done_wait() -> None:
    r = ProduceRequestResult(TP)
    assert not r.completed and not r.wait(0.01)
    with pytest.raises(IllegalStateError, match="set"):
        r.done()  # Java: set() must come first
    r.set(100, 555, None)
    assert not r.completed
    r.done()
    assert r.completed and r.wait(0) and r.wait(None)
    assert (r.base_offset, r.log_append_time, r.error) == (100, 555, None)
    assert r.error_for(3) is None
    with pytest.raises(IllegalStateError, match="already completed"):
        r.done()  # a second completion is refused


def test_produce_request_result_wakes_waiters() -> None:
    r = ProduceRequestResult(TP)
    woke = []
    threads = [threading.Thread(target=lambda: woke.append(r.wait(5))) for _ in range(3)]
    for th in threads:
        th.start()
    time.sleep(0.02)
    r.set(1, -1)
    r.done()
    for th in threads:
        th.join(5)
    assert woke == [True, True, True]


def test_produce_request_result_per_record_errors() -> None:
    top = KafkaError("top")
    per = {0: NotEnoughReplicasError("r0"), 2: RecordTooLargeError("r2")}
    r = ProduceRequestResult(TP)
    r.set(-1, -1, top, per.get)
    assert r.error is top
    assert r.error_for(0) is per[0] and r.error_for(2) is per[2]
    assert r.error_for(1) is top  # the function has nothing for it: the batch's error
    # the error argument may itself be the index -> exception function (Java's form)
    r2 = ProduceRequestResult(TP)
    r2.set(-1, -1, lambda i: KafkaError(f"record {i}"))
    assert str(r2.error_for(4)) == "record 4" and str(r2.error) == "record 0"


def test_produce_request_result_bad_arguments() -> None:
    r = ProduceRequestResult(TP)
    with pytest.raises(TypeError, match="error must be"):
        r.set(0, -1, "boom")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="record_errors must be"):
        r.set(0, -1, KafkaError("x"), 5)  # type: ignore[arg-type]
    r.set(0, -1)  # still usable
    r.done()
    assert r.completed


# ---------------------------------------------------------------- FutureRecordMetadata


def test_future_metadata_offsets_timestamps_and_sizes() -> None:
    b = new_batch()
    f0 = append(b, b"abc", key=b"kk", ts=1000)
    f1 = append(b, None, key=None, ts=1005)
    f2 = append(b, b"", key=b"", ts=990)
    assert not f0.is_done and not f0.done() and f0.value is None and f0.exception is None
    assert b.complete(500, -1)
    m0, m1, m2 = f0.get(), f1.get(0), f2.get(1.0)
    assert [m.offset for m in (m0, m1, m2)] == [500, 501, 502]
    assert [m.timestamp for m in (m0, m1, m2)] == [1000, 1005, 990]  # create time
    assert (m0.serialized_key_size, m0.serialized_value_size) == (2, 3)
    assert (m1.serialized_key_size, m1.serialized_value_size) == (-1, -1)
    assert (m2.serialized_key_size, m2.serialized_value_size) == (0, 0)
    assert m0.topic_partition == TP and f0.topic_partition == TP
    assert f0.is_done and f0.succeeded() and not f0.failed() and f0.value == m0
    assert f0.relative_offset == 0 and f2.relative_offset == 2


def test_future_log_append_time_and_acks0() -> None:
    b = new_batch()
    f = append(b, ts=1000)
    b.complete(-1, 7777)  # acks=0: no offset; broker log-append time wins
    md = f.get(0)
    assert md.offset == -1 and md.timestamp == 7777 and not md.has_offset()


def test_future_get_times_out_then_raises_the_error() -> None:
    b = new_batch()
    f = append(b)
    t0 = time.monotonic()
    with pytest.raises(KafkaTimeoutError):
        f.get(0.05)
    assert time.monotonic() - t0 >= 0.04
    with pytest.raises(KafkaTimeoutError):
        f.get(0)
    with pytest.raises(TypeError, match="timeout"):
        f.get("1")  # type: ignore[arg-type]
    err = NotEnoughReplicasError("few")
    assert b.complete_exceptionally(err)
    with pytest.raises(NotEnoughReplicasError):
        f.get(0)
    assert f.failed() and not f.succeeded() and f.exception is err and f.value is None
    assert "failed" in repr(f)


def test_future_get_is_woken_by_another_thread() -> None:
    b = new_batch()
    f = append(b)
    out = []
    th = threading.Thread(target=lambda: out.append(f.get(5).offset))
    th.start()
    time.sleep(0.02)
    b.complete(42, -1)
    th.join(5)
    assert out == [42]


class _KafkaPythonFutures:
    """kafka-python's own Future, completed by hand: the reference for the callback order."""

    def __init__(self) -> None:
        from kafka.future import Future

        self.ok, self.bad = Future(), Future()

    def complete(self) -> None:
        from kafka.errors import NotEnoughReplicasError as KafkaPythonNotEnoughReplicas

        self.ok.success(RecordMetadata("topic", 3, TP, 10, 1000, None, -1, 1, -1))
        self.bad.failure(KafkaPythonNotEnoughReplicas("n"))


class _OurFutures:
    def __init__(self) -> None:
        self._ok, self._bad = new_batch(), new_batch()
        self.ok, self.bad = append(self._ok), append(self._bad)

    def complete(self) -> None:
        self._ok.complete(10, -1)
        self._bad.complete_exceptionally(NotEnoughReplicasError("n"))


@pytest.mark.parametrize("futures", [_OurFutures, _KafkaPythonFutures])
def test_add_callback_errback_both_as_kafka_python(futures: Any) -> None:
    """kafka-python's order: fn(*args, value, **kwargs); the same test runs on kafka-python's."""
    calls: List[Any] = []
    fs = futures()
    for f in (fs.ok, fs.bad):
        f.add_callback(lambda tag, md: calls.append(("cb", tag, md.offset)), "x")
        f.add_errback(lambda tag, exc: calls.append(("eb", tag, type(exc).__name__)), "y")
        f.add_both(
            lambda tag, res, k=None: calls.append(("both", tag, k, type(res).__name__)), "z", k=1
        )
    assert calls == []
    fs.complete()
    assert calls == [
        ("cb", "x", 10),
        ("both", "z", 1, "RecordMetadata"),
        ("eb", "y", "NotEnoughReplicasError"),
        ("both", "z", 1, "NotEnoughReplicasError"),
    ]
    assert not fs.ok.retriable() and fs.bad.retriable()  # NOT_ENOUGH_REPLICAS is retriable
    # already done: called at once
    calls.clear()
    fs.ok.add_callback(lambda md: calls.append(md.offset))
    fs.ok.add_errback(lambda exc: calls.append("never"))
    fs.bad.add_errback(lambda exc: calls.append(type(exc).__name__))
    assert calls == [10, "NotEnoughReplicasError"]


def test_add_callback_refuses_a_non_callable() -> None:
    f = append(new_batch())
    with pytest.raises(TypeError, match="fn must be callable"):
        f.add_callback(None)  # type: ignore[arg-type]


# ---------------------------------------------------------------- ProducerBatch


def test_try_append_until_full_and_sizes() -> None:
    b = new_batch(size=1024)
    n = 0
    while b.try_append(1000, None, b"x" * 100, None, None, 150) is not None:
        n += 1
    assert n == 8  # 61 + 8 x 109 = 933; a 9th needs 1042 > 1024
    assert b.record_count == 8 and b.estimated_size_in_bytes == 933
    assert not b.is_full()  # Java: full only once the estimate reaches the limit
    assert b.max_record_size == 109 and b.last_append_time == 150


def test_try_append_bad_input_leaves_batch_usable() -> None:
    b = new_batch()
    append(b, b"first")
    with pytest.raises(TypeError, match="key"):
        b.try_append(1000, 123, b"v", None, None, 0)
    with pytest.raises(TypeError, match="value"):
        b.try_append(1000, None, object(), None, None, 0)
    with pytest.raises(TypeError, match="callback"):
        b.try_append(1000, None, b"v", None, "not callable", 0)  # type: ignore[arg-type]
    assert b.record_count == 1
    f = append(b, b"second")
    b.complete(0, -1)
    assert f.get(0).offset == 1


def test_callbacks_run_in_append_order_exactly_once_and_survive_errors(
    caplog: pytest.LogCaptureFixture,
) -> None:
    calls: List[Any] = []
    b = new_batch()

    def boom(md: Any, exc: Any) -> None:
        calls.append(("boom", md.offset))
        raise RuntimeError("user bug")

    futures = []
    for i in range(6):
        cb = boom if i == 2 else (Recorder(calls, i) if i % 2 == 0 else None)
        futures.append(append(b, b"%d" % i, cb=cb))
    # callbacks registered later on earlier records still run in record order
    futures[1].add_callback(lambda md: calls.append(("late", md.offset)))
    futures[5].add_callback(lambda md: calls.append(("late", md.offset)))
    futures[3].add_callback(lambda md: calls.append(("late", md.offset)))
    with caplog.at_level(logging.ERROR, logger="cproducer.accumulator"):
        assert b.complete(100, -1)
    assert [c[:2] if c[0] in ("boom", "late") else (c[0], c[1].offset) for c in calls] == [
        (0, 100),
        ("late", 101),
        ("boom", 102),
        ("late", 103),
        (4, 104),
        ("late", 105),
    ]
    assert "user bug" in caplog.text
    n = len(calls)
    assert not b.complete(200, -1)  # exactly once: refused, nothing runs again
    assert not b.complete_exceptionally(KafkaError("late"))
    assert not b.abort(KafkaError("late"))
    assert len(calls) == n and b.final_state == SUCCEEDED
    assert futures[0].get(0).offset == 100  # the first outcome stands


def test_complete_exceptionally_with_record_exceptions() -> None:
    calls: List[Any] = []
    b = new_batch()
    futures = [append(b, cb=Recorder(calls, i)) for i in range(3)]
    per = {1: RecordTooLargeError("record 1 too large")}
    top = KafkaError("batch failed")
    assert b.complete_exceptionally(top, per.get)
    assert b.final_state == FAILED and b.is_done
    assert [(i, md, exc) for i, md, exc in calls] == [
        (0, None, top),
        (1, None, per[1]),
        (2, None, top),
    ]
    with pytest.raises(RecordTooLargeError):
        futures[1].get(0)
    assert futures[2].exception is top


def test_complete_exceptionally_and_abort_check_arguments() -> None:
    b = new_batch()
    append(b)
    with pytest.raises(TypeError, match="top_level_exception"):
        b.complete_exceptionally(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="record_exceptions"):
        b.complete_exceptionally(KafkaError("x"), "nope")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="exc"):
        b.abort("nope")  # type: ignore[arg-type]
    assert b.final_state == IN_FLIGHT and not b.is_done


def test_an_empty_batch_closed_for_appends_takes_no_first_record() -> None:
    b = new_batch()
    b.close_for_record_appends()
    assert b.is_full() and b.try_append(1000, None, b"first", None, None, 0) is None
    assert b.record_count == 0


def test_abort_fails_records_and_closes_for_appends() -> None:
    calls: List[Any] = []
    b = new_batch()
    f = append(b, cb=Recorder(calls, 0))
    exc = KafkaError("aborted")
    assert b.abort(exc)
    assert b.final_state == ABORTED and calls == [(0, None, exc)]
    assert b.try_append(1000, None, b"more", None, None, 0) is None
    with pytest.raises(KafkaError, match="aborted"):
        f.get(0)


def test_state_accessors_retry_and_timeouts() -> None:
    b = new_batch(created_ms=1000)
    append(b)
    assert (b.attempts, b.retry, b.in_retry()) == (0, False, False)
    assert b.waited_time_ms(1500) == 500 and b.waited_time_ms(900) == 0
    assert not b.has_reached_delivery_timeout(1000, 1999)
    assert b.has_reached_delivery_timeout(1000, 2000)
    b.drained(3000)
    b.drained(2000)
    assert b.drained_ms == 3000
    b.reenqueued(3500, 120)
    assert (b.attempts, b.retry, b.in_retry(), b.backoff_ms) == (1, True, True, 120)
    assert b.last_attempt_ms == 3500 and b.waited_time_ms(3600) == 100
    assert b.topic_partition == TP and b.topic == "topic" and b.partition == 3
    assert b.created_ms == 1000 and not b.is_splitting_batch
    assert "IN_FLIGHT" in repr(b)


def test_producer_state_written_into_the_batch_and_rewritten_after_close() -> None:
    b = new_batch()
    for i in range(5):
        append(b, b"r%d" % i, key=b"k", headers=[("h", b"1")])
    assert not b.has_sequence() and b.base_sequence == -1 and b.last_sequence == -1
    b.set_producer_state(9000, 4, 2**31 - 3, True)
    assert b.has_sequence() and b.last_sequence == 1  # wraps at 2**31
    b.close()
    parsed = DefaultRecordBatch(bytes(b.buffer()))
    assert parsed.validate_crc()
    assert (parsed.producer_id, parsed.producer_epoch, parsed.base_sequence) == (9000, 4, 2**31 - 3)
    assert parsed.is_transactional
    # Java's resetProducerState after close: header and CRC rewritten in place
    b.set_producer_state(9001, 5, 10, False)
    parsed = DefaultRecordBatch(bytes(b.buffer()))
    assert parsed.validate_crc()
    assert (parsed.producer_id, parsed.producer_epoch, parsed.base_sequence) == (9001, 5, 10)
    assert (b.producer_id, b.producer_epoch, b.base_sequence) == (9001, 5, 10)
    assert not parsed.is_transactional and not b.is_transactional
    assert [(r.key, r.value, r.headers) for r in parsed] == [
        (b"k", b"r%d" % i, [("h", b"1")]) for i in range(5)
    ]


def test_records_decodes_open_and_closed_compressed_batches() -> None:
    recs = [
        (1000, None, b"a", None),
        (1003, b"k", None, [("x", b"1"), ("y", None)]),
        (999, b"", b"", None),
    ]
    for codec in (0, 1, 3, 4):
        b = new_batch(codec=codec)
        for ts, k, v, h in recs:
            b.try_append(ts, k, v, h, None, 0)
        assert b.records() == recs
        b.close()
        assert b.is_closed and b.records() == recs


# ---------------------------------------------------------------- split


def _big_batch(n: int, sequence: int = -1) -> Tuple[ProducerBatch, List[Any], list]:
    calls: List[Any] = []
    big = ProducerBatch(TP, RecordBatchBuilder(bytearray(1 << 16), 0, 1 << 16), 50)
    futures = []
    for i in range(n):
        cb = Recorder(calls, i) if i % 3 else None
        futures.append(append(big, b"%04d" % i * 25, key=b"k%d" % i, ts=2000 + i, cb=cb))
    if sequence >= 0:
        big.set_producer_state(77, 1, sequence, False)
    big.close()
    return big, futures, calls


def test_split_keeps_records_order_futures_and_callbacks() -> None:
    big, futures, calls = _big_batch(40)
    futures[0].add_callback(lambda md: calls.append(("added", md.offset)))
    parts = big.split(1024)
    assert big.final_state == SPLIT and big.is_done
    assert len(parts) == 5  # 61 + 8 x ~113 per 1024-byte batch
    assert all(p.is_splitting_batch and p.created_ms == 50 for p in parts)
    assert [r for p in parts for r in p.records()] == [
        (2000 + i, b"k%d" % i, b"%04d" % i * 25, None) for i in range(40)
    ]
    # closed for appends (Java's closeForRecordAppends): nothing more goes into them
    assert all(p.is_full() and p.try_append(1, None, b"", None, None, 0) is None for p in parts)
    assert not futures[0].is_done
    offset = 1000
    for p in parts:
        assert p.complete(offset, -1)
        offset += p.record_count
    assert [f.get(0).offset for f in futures] == list(range(1000, 1040))
    assert [f.get(0).timestamp for f in futures] == [2000 + i for i in range(40)]
    # every callback once, in record order, with its record's new offset
    got = [c[:2] if c[0] == "added" else (c[0], c[1].offset) for c in calls]
    assert got == [("added", 1000)] + [(i, 1000 + i) for i in range(40) if i % 3]
    # each callback's metadata keeps its record's timestamp and sizes through the split
    assert [
        (md.topic, md.partition, md.timestamp, md.serialized_key_size, md.serialized_value_size)
        for _, md, _ in calls[1:]
    ] == [("topic", 3, 2000 + i, len(b"k%d" % i), 100) for i in range(40) if i % 3]
    assert not big.complete(0, -1)  # the split batch itself can no longer complete


def test_split_assigns_consecutive_sequences() -> None:
    big, _futures, _calls = _big_batch(30, sequence=2**31 - 10)
    parts = big.split(1024)
    seqs = [p.base_sequence for p in parts]
    expected, s = [], 2**31 - 10
    for p in parts:
        expected.append(s)
        s = (s + p.record_count) & 0x7FFFFFFF
        assert (p.producer_id, p.producer_epoch) == (77, 1)
    assert seqs == expected


def test_split_wakes_a_blocked_get_which_follows_the_new_batch() -> None:
    big, futures, _calls = _big_batch(20)
    out: List[Any] = []
    th = threading.Thread(target=lambda: out.append(futures[19].get(5)))
    th.start()
    time.sleep(0.02)
    parts = big.split(1024)
    time.sleep(0.02)
    assert out == []  # woke up, found the record moved, waits on its new batch
    late: List[int] = []
    futures[19].add_callback(lambda md: late.append(md.offset))  # registers on the new batch
    last = parts[-1]
    last.complete(300, -1)
    th.join(5)
    assert out[0].offset == 300 + last.record_count - 1 == late[0]


def test_split_refused_for_completed_batch_and_bad_size() -> None:
    big, _f, _c = _big_batch(5)
    with pytest.raises(ValueError, match="split_batch_size"):
        big.split(0)
    big.complete(0, -1)
    with pytest.raises(IllegalStateError):
        big.split(1024)


def test_split_single_record_larger_than_split_size() -> None:
    big = new_batch(size=8192)
    f0 = append(big, b"x" * 3000)
    f1 = append(big, b"y" * 10)
    parts = big.split(1024)
    assert [p.record_count for p in parts] == [1, 1]
    parts[0].complete(5, -1)
    parts[1].complete(6, -1)
    assert (f0.get(0).offset, f1.get(0).offset) == (5, 6)


@pytest.mark.parametrize("trial", range(12))
def test_callbacks_added_from_threads_while_the_batch_completes_run_once_each(trial: int) -> None:
    """Threads register callbacks on random records of a batch while another thread completes
    it: each callback runs exactly once, with its own record's offset, whether it was added before
    (run by the completion, in record order) or after (run at once by add_callback)."""
    import random

    b = new_batch(size=1 << 17)
    futures = [append(b, b"%d" % i, cb=None) for i in range(600)]
    # (record, offset given, run by the completing thread)
    seen: List[Tuple[int, int, bool]] = []
    main = threading.current_thread()
    lock = threading.Lock()
    start = threading.Barrier(4)

    def register(tid: int) -> None:
        rnd = random.Random(trial * 10 + tid)
        start.wait()
        for k in range(300):
            i = rnd.randrange(600)

            def cb(md: Any, i: int = i) -> None:
                with lock:
                    seen.append((i, md.offset, threading.current_thread() is main))

            futures[i].add_callback(cb)
            if k % 5 == 0:
                time.sleep(0)  # let the others (and the completing thread) in

    threads = [threading.Thread(target=register, args=(t,)) for t in range(3)]
    for t in threads:
        t.start()
    start.wait()
    time.sleep(0.0002 * (1 + trial % 8))
    assert b.complete(5000, -1)
    for t in threads:
        t.join()
    assert len(seen) == 900  # 3 threads x 300 registrations: none lost, none run twice
    assert all(offset == 5000 + i for i, offset, _ in seen)
    # those registered before the completion ran in it, in record order
    by_completion = [i for i, _, by_main in seen if by_main]
    assert by_completion == sorted(by_completion)


def test_record_exceptions_reach_each_send_many_record() -> None:
    """A send_many call's records in a batch refused with record errors get their own errors in
    the call's result, as the batch's send() records do."""
    b = new_batch()
    for _ in range(4):
        append(b)
    bf = BatchFuture("t", 3)
    order = np.array([2, 0, 1], dtype=np.int64)
    b.add_segment((bf, order, 0, 3, 1))  # the call's records 2, 0, 1 at relative offsets 1..3
    per = {2: RecordTooLargeError("record 2 too large")}
    top = KafkaError("batch failed")
    assert b.complete_exceptionally(top, per.get)
    result = bf.get(timeout=1)
    assert result.errors == {2: top, 0: per[2], 1: top}
    assert result.offsets.tolist() == [-1, -1, -1] and result.delivered == 0
