"""RecordBatchBuilder: bytes equal kafka-python's builder; every codec decodes with kafka-python."""

from __future__ import annotations

import time

import crc32c as reference_crc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

from cproducer._records import (
    RECORD_BATCH_OVERHEAD,
    RecordBatchBuilder,
    estimate_size_in_bytes_upper_bound,
    record_size_in_bytes,
)

CODECS = [0, 1, 2, 3, 4]


def sample_records(n=60):
    out = []
    for i in range(n):
        key = None if i % 5 == 0 else f"key-{i}".encode()
        value = None if i % 7 == 3 else (b"value-%d-" % i) * (i % 9)
        headers = [("trace", b"t%d" % i), ("ключ-ü", None)] if i % 2 else []
        out.append((1_700_000_000_000 + i * 3 - (i % 4) * 5, key, value, headers))
    return out


def kafka_python_batch(records, producer_id=-1, epoch=-1, base_sequence=-1, txn=False):
    kb = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=0,
        is_transactional=txn,
        producer_id=producer_id,
        producer_epoch=epoch,
        base_sequence=base_sequence,
        batch_size=10**7,
    )
    for offset, (ts, key, value, headers) in enumerate(records):
        kb.append(offset, ts, key, value, headers)
    return bytes(kb.build())


def ours(records, codec=0, size=10**6, **state):
    b = RecordBatchBuilder(bytearray(size), codec, **state)
    for ts, key, value, headers in records:
        assert b.try_append(ts, key, value, headers or None) >= 0
    b.close()
    return b, bytes(b.buffer())


def same_but_leader_epoch(a: bytes, b: bytes) -> bool:
    # kafka-python writes partitionLeaderEpoch 0; Java (and we) write -1 (bytes 12..15, outside
    # the CRC). Everything else must be identical.
    return len(a) == len(b) and a[:12] == b[:12] and a[16:] == b[16:]


def decode(buf: bytes):
    batch = DefaultRecordBatch(buf)
    assert batch.validate_crc()
    assert reference_crc.crc32c(buf[21:]) == int.from_bytes(buf[17:21], "big")
    return [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in batch]


def test_uncompressed_equals_kafka_python_byte_for_byte() -> None:
    recs = sample_records()
    _, data = ours(recs)
    assert same_but_leader_epoch(data, kafka_python_batch(recs))
    assert data[12:16] == b"\xff\xff\xff\xff"


def test_producer_state_and_transactional_flag_equal_kafka_python() -> None:
    recs = sample_records(10)
    _, data = ours(
        recs, producer_id=123456789, producer_epoch=3, base_sequence=77, is_transactional=True
    )
    ref = kafka_python_batch(recs, 123456789, 3, 77, True)
    assert same_but_leader_epoch(data, ref)


def test_set_producer_state_after_close_rewrites_header_and_crc() -> None:
    recs = sample_records(10)
    b, _ = ours(recs)
    b.set_producer_state(42, 1, 500, False)
    data = bytes(b.buffer())
    assert same_but_leader_epoch(data, kafka_python_batch(recs, 42, 1, 500, False))
    batch = DefaultRecordBatch(data)
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (42, 1, 500)


@pytest.mark.parametrize("codec", CODECS)
def test_every_codec_decodes_with_kafka_python(codec: int) -> None:
    recs = sample_records(200)
    _, data = ours(recs, codec)
    got = decode(data)
    assert got == [(i, ts, k, v, h) for i, (ts, k, v, h) in enumerate(recs)]
    assert DefaultRecordBatch(data).compression_type == codec


def test_try_append_refuses_exactly_when_java_would() -> None:
    limit = 1000
    b = RecordBatchBuilder(bytearray(4096), 0, limit)
    ts0 = 1000
    written = RECORD_BATCH_OVERHEAD
    i = 0
    while True:
        key, value = b"k%d" % i, b"x" * 37
        need = record_size_in_bytes(i, i, key, value, None)
        fits = written + need <= limit
        assert b.has_room_for(ts0 + i, key, value) == fits
        got = b.try_append(ts0 + i, key, value)
        if not fits:
            assert got == -1
            break
        assert got == i
        written += need
        i += 1
    # Java's isFull: only once the estimate reaches the limit
    assert b.num_records == i and b.size_in_bytes == written and not b.is_full


def test_first_record_goes_in_even_above_the_limit() -> None:
    b = RecordBatchBuilder(bytearray(10_000), 0, 100)
    assert b.try_append(1, None, b"x" * 5000) == 0
    assert b.try_append(1, None, b"y") == -1
    b.close()
    assert decode(bytes(b.buffer()))[0][3] == b"x" * 5000


def test_upper_bound_estimate_covers_the_real_size() -> None:
    for key, value, headers in [(None, None, None), (b"k", b"v" * 300, [("a", b"b")])]:
        b = RecordBatchBuilder(bytearray(4096))
        b.try_append(int(time.time() * 1000), key, value, headers)
        b.close()
        assert len(b.buffer()) <= estimate_size_in_bytes_upper_bound(key, value, headers)


def test_bad_input_names_the_argument_and_builder_stays_usable() -> None:
    b = RecordBatchBuilder(bytearray(300))
    assert b.try_append(1, b"k", b"v") == 0
    with pytest.raises(TypeError, match="key must be bytes-like or None, got int"):
        b.try_append(1, 5, b"v")
    with pytest.raises(TypeError, match="value must be bytes-like or None, got str"):
        b.try_append(1, b"k", "text")
    with pytest.raises(TypeError, match=r"headers\[0\]\[0\] \(key\) must be str, got bytes"):
        b.try_append(1, b"k", b"v", [(b"k", b"v")])
    with pytest.raises(TypeError, match=r"headers\[1\]\[1\] \(value\) must be bytes-like"):
        b.try_append(1, b"k", b"v", [("a", None), ("b", 3)])
    with pytest.raises(TypeError, match=r"headers\[0\] must be a \(str, bytes or None\) pair"):
        b.try_append(1, b"k", b"v", [("a",)])
    with pytest.raises(TypeError, match="headers must be a list"):
        b.try_append(1, b"k", b"v", {"a": b"b"})
    assert b.try_append(1, b"k", b"x" * 1000) == -1  # full: refused, nothing written
    with pytest.raises(BufferError, match="buffer too small"):
        RecordBatchBuilder(bytearray(100)).try_append(1, None, b"x" * 200)
    assert b.try_append(2, b"k2", b"v2", [("h", b"1")]) == 1
    b.close()
    assert [r[2:] for r in decode(bytes(b.buffer()))] == [
        (b"k", b"v", []),
        (b"k2", b"v2", [("h", b"1")]),
    ]
    with pytest.raises(RuntimeError, match="closed"):
        b.try_append(1, b"k", b"v")


def test_any_buffer_type_for_key_and_value() -> None:
    import numpy as np

    b = RecordBatchBuilder(np.zeros(1000, dtype=np.uint8))
    b.try_append(5, bytearray(b"ba"), memoryview(b"mv"))
    b.try_append(6, np.frombuffer(b"np", dtype=np.uint8), None)
    b.close()
    assert [(r[2], r[3]) for r in decode(bytes(b.buffer()))] == [(b"ba", b"mv"), (b"np", None)]


header_st = st.tuples(st.text(max_size=20), st.one_of(st.none(), st.binary(max_size=50)))
record_st = st.tuples(
    st.one_of(
        st.integers(1_600_000_000_000, 1_800_000_000_000),  # around now
        st.integers(0, 2**40),  # far from it
    ),
    st.one_of(st.none(), st.binary(max_size=200)),
    st.one_of(st.none(), st.binary(max_size=2000)),
    st.lists(header_st, max_size=50),
)


@pytest.mark.parametrize("codec", CODECS)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(records=st.lists(record_st, min_size=1, max_size=30))
def test_property_round_trip_through_kafka_python(codec: int, records) -> None:
    _, data = ours(records, codec, size=2**21)
    assert decode(data) == [(i, ts, k, v, h) for i, (ts, k, v, h) in enumerate(records)]


@pytest.mark.parametrize("codec", CODECS)
def test_megabyte_keys_and_values(codec: int) -> None:
    import os

    big = os.urandom(1 << 20)
    recs = [(1, big, None, []), (2, None, big, [("x", big[:10])]), (3, b"", b"", [])]
    _, data = ours(recs, codec, size=3 << 20)
    assert decode(data) == [(i, ts, k, v, h) for i, (ts, k, v, h) in enumerate(recs)]
