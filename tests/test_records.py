"""RecordBatchBuilder: bytes equal kafka-python's builder; every codec decodes with kafka-python.

Peers that prove the bytes: kafka-python's ``DefaultRecordBatchBuilder`` (uncompressed bytes and
record sizes), its ``DefaultRecordBatch`` decoder (every codec) and the ``crc32c`` package.
"""

from __future__ import annotations

import random
import threading
import time
from typing import Any

import crc32c as reference_crc
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

from cproducer.producer.internals.buffer_pool import BufferPool
from cproducer.record import compression
from cproducer.record.compression import (
    CODEC_GZIP,
    CODEC_LZ4,
    CODEC_NONE,
    CODEC_SNAPPY,
    CODEC_ZSTD,
)
from cproducer.record.record_batch_builder import (
    COMPRESSION_RATE_ESTIMATION_FACTOR,
    RECORD_BATCH_OVERHEAD,
    RecordBatchBuilder,
    estimate_size_in_bytes_upper_bound,
    record_size_in_bytes,
    set_gil_release_threshold,
)
from cproducer.record.record_batch_reader import read_records

CODECS = [CODEC_NONE, CODEC_GZIP, CODEC_SNAPPY, CODEC_LZ4, CODEC_ZSTD]
NOW = 1_700_000_000_000


def sample_records(n=60):
    out = []
    for i in range(n):
        key = None if i % 5 == 0 else (b"" if i % 11 == 1 else f"key-{i}".encode())
        value = None if i % 7 == 3 else (b"value-%d-" % i) * (i % 9) + b"x" * (i * 3)
        headers = [("trace", b"t%d" % i), ("ключ-ü", None), ("e", b"")] if i % 2 else []
        # timestamps go up and down: negative deltas and a max that is not the last one
        out.append((NOW + i * 3 - (i % 4) * 5, key, value, headers))
    return out


def kafka_python_batch(records, producer_id=-1, epoch=-1, base_sequence=-1, txn=False):
    kb = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=0,
        is_transactional=txn,
        producer_id=producer_id,
        producer_epoch=epoch,
        base_sequence=base_sequence,
        batch_size=10**9,
    )
    for offset, (ts, key, value, headers) in enumerate(records):
        kb.append(offset, ts, key, value, headers)
    return bytes(kb.build())


def space_for(records) -> int:
    return sum(estimate_size_in_bytes_upper_bound(k, v, h) for _, k, v, h in records)


def ours(records, codec=CODEC_NONE, size=None, **state):
    size = size or space_for(records) + 100
    b = RecordBatchBuilder(bytearray(size), codec, 2 * size, **state)
    for i, (ts, key, value, headers) in enumerate(records):
        assert b.try_append(ts, key, value, headers or None) == i
    b.close()
    return b, bytes(b.buffer())


def same_but_leader_epoch(a: bytes, b: bytes) -> bool:
    # kafka-python writes partitionLeaderEpoch 0; Java (and we) write -1 (bytes 12..15, outside
    # the CRC). Everything else must be identical.
    return len(a) == len(b) and a[:12] == b[:12] and a[16:] == b[16:]


def decode(buf: bytes):
    """Records as kafka-python reads them, after checking the CRC with two peers."""
    assert int.from_bytes(buf[8:12], "big") == len(buf) - 12
    assert buf[12:17] == b"\xff\xff\xff\xff\x02"
    batch = DefaultRecordBatch(buf)
    assert batch.validate_crc()
    assert reference_crc.crc32c(buf[21:]) == int.from_bytes(buf[17:21], "big")
    return [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in batch]


def expected(records):
    return [
        (i, ts, k, v, [tuple(h) for h in (hs or [])]) for i, (ts, k, v, hs) in enumerate(records)
    ]


# ------------------------------------------------------------------ bytes and decoding


def test_uncompressed_equals_kafka_python_byte_for_byte() -> None:
    recs = sample_records(300)  # offset deltas and lengths past one varint byte
    _, data = ours(recs)
    assert same_but_leader_epoch(data, kafka_python_batch(recs))
    assert data[12:16] == b"\xff\xff\xff\xff"


@pytest.mark.parametrize(
    "state",
    [(123456789, 3, 77, True), (2**62, 32767, 2**31 - 1, False), (0, 0, 0, True)],
)
def test_producer_state_and_transactional_flag_equal_kafka_python(state) -> None:
    recs = sample_records(10)
    pid, epoch, seq, txn = state
    b, data = ours(
        recs, producer_id=pid, producer_epoch=epoch, base_sequence=seq, is_transactional=txn
    )
    assert same_but_leader_epoch(data, kafka_python_batch(recs, pid, epoch, seq, txn))
    assert (b.producer_id, b.producer_epoch, b.base_sequence, b.is_transactional) == state


def test_single_records_equal_kafka_python() -> None:
    for rec in [
        (NOW, None, None, []),
        (0, b"", b"", []),
        (-1, b"k", None, [("", None)]),  # no timestamp
        (2**62, None, b"v" * 200, [("h" * 130, b"x" * 300)]),
    ]:
        _, data = ours([rec])
        assert same_but_leader_epoch(data, kafka_python_batch([rec])), rec


@pytest.mark.parametrize("codec", CODECS)
def test_every_codec_decodes_with_kafka_python(codec: int) -> None:
    recs = sample_records(500)
    b, data = ours(recs, codec, producer_id=9, producer_epoch=2, base_sequence=40)
    assert decode(data) == expected(recs)
    batch = DefaultRecordBatch(data)
    assert batch.compression_type == codec
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (9, 2, 40)
    assert batch.first_timestamp == recs[0][0] == b.first_timestamp
    assert batch.max_timestamp == max(r[0] for r in recs) == b.max_timestamp
    assert batch.last_offset_delta == 499 == b.last_offset_delta
    assert batch.records_count == 500 == b.num_records
    assert len(data) == b.size_in_bytes
    assert b.uncompressed_size == RECORD_BATCH_OVERHEAD + sum(
        record_size_in_bytes(i, ts - recs[0][0], k, v, h) for i, (ts, k, v, h) in enumerate(recs)
    )
    if codec:
        assert len(data) < b.uncompressed_size
        assert compression.decompress(codec, data[61:])[:1] != b""


def test_empty_builder_closes_to_a_header_without_records() -> None:
    b = RecordBatchBuilder(bytearray(100))
    b.close()
    data = bytes(b.buffer())
    assert len(data) == RECORD_BATCH_OVERHEAD and b.last_offset_delta == -1
    assert decode(data) == []


# ------------------------------------------------------------------ the buffer


def test_records_are_written_into_the_callers_buffer_and_buffer_is_a_view() -> None:
    buf = bytearray(4096)
    b = RecordBatchBuilder(buf)
    b.try_append(NOW, b"key", b"value")
    b.close()
    view = b.buffer()
    assert view.obj is buf and len(view) == b.size_in_bytes
    assert bytes(buf[: len(view)]) == bytes(view)


@pytest.mark.parametrize("codec", [CODEC_GZIP, CODEC_SNAPPY, CODEC_LZ4, CODEC_ZSTD])
def test_compressed_batch_goes_back_into_the_callers_buffer(codec: int) -> None:
    buf = bytearray(1 << 16)
    recs: list = [(NOW + i, b"k", b"compressible " * 20, []) for i in range(100)]
    b = RecordBatchBuilder(buf, codec)
    for ts, k, v, _ in recs:
        b.try_append(ts, k, v)
    b.close()
    view = b.buffer()
    assert view.obj is buf
    assert decode(bytes(view)) == expected(recs)


@pytest.mark.parametrize("codec", [CODEC_GZIP, CODEC_SNAPPY, CODEC_LZ4, CODEC_ZSTD])
def test_incompressible_batch_larger_than_the_buffer_moves_to_a_new_bytearray(codec) -> None:
    rnd = random.Random(codec)
    recs: list = [(NOW, None, rnd.randbytes(3000), [])]
    # exactly the raw record: the compressed form (a bit larger) does not fit
    buf = bytearray(RECORD_BATCH_OVERHEAD + record_size_in_bytes(0, 0, *recs[0][1:]))
    b = RecordBatchBuilder(buf, codec)
    b.try_append(*recs[0])
    b.close()
    view = b.buffer()
    assert view.obj is not buf and len(view) > len(buf)
    assert decode(bytes(view)) == expected(recs)
    b.set_producer_state(5, 1, 10, False)  # rewrites the header of the new bytearray
    assert DefaultRecordBatch(bytes(b.buffer())).base_sequence == 10
    assert decode(bytes(b.buffer())) == expected(recs)


@pytest.mark.parametrize("codec", [CODEC_GZIP, CODEC_LZ4, CODEC_ZSTD])
def test_compressed_records_go_past_the_callers_buffer_under_the_estimate(codec) -> None:
    """Records compressed as they come: the caller's buffer is the stage, the batch holds its
    compressed records and one buffer of uncompressed ones (zstd, compressed at close(): every
    uncompressed record, in a larger private buffer)."""
    buf = bytearray(4096)
    b = RecordBatchBuilder(buf, codec, 4096, compression_ratio_estimate=0.05)
    recs: list = []
    while True:
        rec: tuple = (NOW + len(recs), b"key", b"the same thing again " * 10, [])
        if b.try_append(*rec) < 0:
            break
        recs.append(rec)
        if len(recs) in (1, 40, 100):
            assert read_records(b) == [(ts, k, v, None) for ts, k, v, _ in recs]  # open
    assert b.uncompressed_size > 4 * len(buf)
    if codec == CODEC_ZSTD:
        assert b.capacity >= b.uncompressed_size and b.charged_memory == b.capacity
    else:
        assert b.capacity == len(buf) and b.charged_memory < b.uncompressed_size // 2
    b.close()
    data = bytes(b.buffer())
    assert len(data) <= 4096 and b.buffer().obj is buf and b.charged_memory == 0
    assert decode(data) == expected(recs)


@pytest.mark.parametrize("codec", [CODEC_GZIP, CODEC_SNAPPY, CODEC_LZ4])
def test_records_compressed_already_count_their_real_size(codec) -> None:
    """Java's hasRoomFor (the estimate so far + the new record uncompressed <= batch.size), where
    lz4 and snappy estimate only the stage: the records compressed already count their real
    bytes. A topic estimate far above the real ratio (it rises at once, falls 0.005 a batch) then
    no longer closes batches of compressible records early; the batch stays within batch.size.
    gzip, whose stream keeps bytes inside zlib, keeps Java's estimate for every record."""
    limit, estimate, value = 16384, 0.5, b"v" * 2000
    b = RecordBatchBuilder(bytearray(limit), codec, limit, compression_ratio_estimate=estimate)
    recs: list = []
    while b.try_append(NOW, b"key", value, []) >= 0:
        recs.append((NOW, b"key", value, []))
    java, written = 1, record_size_in_bytes(0, 0, b"key", value)  # the first always goes in
    while True:  # Java's estimatedBytesWritten + the next record <= writeLimit
        size = record_size_in_bytes(java, 0, b"key", value)
        if (
            RECORD_BATCH_OVERHEAD
            + int(written * estimate * COMPRESSION_RATE_ESTIMATION_FACTOR)
            + size
            > limit
        ):
            break
        java, written = java + 1, written + size
    if codec == CODEC_GZIP:
        assert len(recs) == java
    else:
        assert len(recs) > 3 * java
    b.close()
    data = bytes(b.buffer())
    assert len(data) <= limit
    assert decode(data) == expected(recs)


@pytest.mark.parametrize("codec", CODECS)
def test_a_stage_smaller_than_stage_size_grows_before_the_batch_is_full(codec: int) -> None:
    """A producer's batch starts in a small buffer (stage_size: batch.size): it takes records to
    write_limit as one in a buffer of stage_size would, its stage growing (doubling) on memory
    charged to the budget, and gives that memory back when released. Compressed, the records
    are compressed in the same blocks as from a stage of stage_size: the same batch, byte for
    byte. Without stage_size the stage does not grow: an uncompressed batch is full at its
    buffer."""
    recs: list = [(NOW + i, b"key-%d" % i, b"value %d " % i * 12, []) for i in range(400)]

    def build(buf: bytearray, stage_size: int = -1, budget: Any = None) -> RecordBatchBuilder:
        b = RecordBatchBuilder(buf, codec, 16384, memory_budget=budget, stage_size=stage_size)
        for ts, k, v, _ in recs:
            if b.try_append(ts, k, v) < 0:
                break
        return b

    pool = BufferPool(1 << 20, 16384)
    small, large = build(bytearray(1024), 16384, pool), build(bytearray(16384))
    assert small.num_records == large.num_records > 1024 // 100
    assert small.capacity == 16384 and 0 < pool.available_memory < (1 << 20)
    small.close()
    large.close()
    assert bytes(small.buffer()) == bytes(large.buffer())
    assert decode(bytes(small.buffer())) == expected(recs[: small.num_records])
    small.release_memory()
    assert pool.available_memory == 1 << 20
    if codec == CODEC_NONE:
        assert build(bytearray(1024)).num_records < 1024 // 100


@pytest.mark.parametrize("codec", [CODEC_GZIP, CODEC_SNAPPY, CODEC_LZ4, CODEC_ZSTD])
def test_records_larger_than_the_callers_buffer_among_compressed_ones(codec) -> None:
    """A record larger than the stage moves it to a larger private buffer; the batch decodes."""
    rnd = random.Random(codec)
    buf = bytearray(2048)
    b = RecordBatchBuilder(buf, codec, 1 << 20, compression_ratio_estimate=0.05)
    recs: list = []
    for i in range(30):
        size = 5000 if i % 7 == 3 else 300
        value = (rnd.randbytes(16) * (size // 16 + 1))[:size]
        rec: tuple = (NOW + i, b"k%d" % i, value, [])
        assert b.try_append(*rec) == i
        recs.append(rec)
    assert b.capacity > len(buf)
    assert read_records(b) == [(ts, k, v, None) for ts, k, v, _ in recs]
    b.close()
    assert decode(bytes(b.buffer())) == expected(recs)


def test_lz4_large_values_are_compressed_from_the_callers_memory() -> None:
    """lz4 compresses a value of 8 KiB or more without copying it into the stage: a value four
    times the caller's buffer leaves the stage as it was (no private stage), and the batch
    (records with and without headers, null keys, values over lz4's 64 KiB block among small
    ones) reads back whole with kafka-python."""
    rnd = random.Random(7)
    buf = bytearray(16384)
    b = RecordBatchBuilder(buf, CODEC_LZ4, 1 << 22, compression_ratio_estimate=0.05)
    recs: list = []
    sizes = [100, 8192, 65536, 70000, 300, 8191, 20000, 0, 9000, 150000]
    for i, size in enumerate(sizes):
        value = (rnd.randbytes(64) * (size // 64 + 1))[:size]
        key = None if i % 4 == 3 else b"k%d" % i
        headers = [("h", b"x")] if i == 8 else []
        assert b.try_append(NOW + i, key, value, headers) == i
        recs.append((NOW + i, key, value, headers))
        assert b.capacity == len(buf)
    big = rnd.randbytes(40000)  # incompressible: lz4 stores its blocks as they are
    assert b.try_append(NOW + 20, b"r", big, []) == len(sizes)
    recs.append((NOW + 20, b"r", big, []))
    assert read_records(b) == [(ts, k, v, hs or None) for ts, k, v, hs in recs]
    b.close()
    assert decode(bytes(b.buffer())) == expected(recs)


def test_lz4_values_a_large_stage_holds_together_still_compress_together() -> None:
    """With a stage of 1 MiB a 10 kB value is copied in and compressed with the records beside
    it, as Java's 64 KiB lz4 blocks do: values sharing 8 of their 10 kB come out at about a
    third of their size, where a 16 KiB stage compresses each value on its own (random bytes:
    no smaller). Both batches read back whole with kafka-python."""
    rnd = random.Random(11)
    shared = rnd.randbytes(8000)
    values = [shared + rnd.randbytes(2000) for _ in range(40)]
    sizes = {}
    for stage in (16384, 1 << 20):
        b = RecordBatchBuilder(bytearray(stage), CODEC_LZ4, 1 << 22, compression_ratio_estimate=0.5)
        for i, value in enumerate(values):
            assert b.try_append(NOW, b"k", value) == i
        b.close()
        data = bytes(b.buffer())
        assert decode(data) == expected([(NOW, b"k", v, []) for v in values])
        sizes[stage] = len(data)
    assert sizes[16384] > 40 * 10000
    assert sizes[1 << 20] < 0.5 * sizes[16384]


def test_numpy_and_memoryview_buffers() -> None:
    arr = np.zeros(1000, dtype=np.uint8)
    b = RecordBatchBuilder(arr)
    b.try_append(5, bytearray(b"ba"), memoryview(b"mv"))
    b.try_append(6, np.frombuffer(b"np", dtype=np.uint8), None)
    b.try_append(7, np.arange(3, dtype=np.int32), b"")  # any contiguous buffer, its bytes
    b.close()
    assert decode(bytes(b.buffer())) == [
        (0, 5, b"ba", b"mv", []),
        (1, 6, b"np", None, []),
        (2, 7, np.arange(3, dtype=np.int32).tobytes(), b"", []),
    ]
    assert bytes(arr[: b.size_in_bytes]) == bytes(b.buffer())
    backing = bytearray(2000)
    b = RecordBatchBuilder(memoryview(backing)[100:900])
    b.try_append(1, b"k", b"v")
    b.close()
    assert bytes(backing[100 : 100 + b.size_in_bytes]) == bytes(b.buffer())
    assert decode(bytes(b.buffer())) == [(0, 1, b"k", b"v", [])]


@pytest.mark.parametrize("codec", [CODEC_NONE, CODEC_GZIP])
def test_copies_and_crc_without_the_gil_write_the_same_bytes(codec: int) -> None:
    rnd = random.Random(3)
    recs: list = [(NOW + i, rnd.randbytes(i * 100), rnd.randbytes(i * 5000), []) for i in range(20)]
    old = set_gil_release_threshold(1)  # every copy and the CRC released
    try:
        _, released = ours(recs, codec)
        ticks = []
        stop = threading.Event()

        def spin():
            while not stop.is_set():
                ticks.append(1)

        t = threading.Thread(target=spin)
        t.start()
        try:
            _, contended = ours(recs, codec)
        finally:
            stop.set()
            t.join()
    finally:
        assert set_gil_release_threshold(old) == 1
    _, held = ours(recs, codec)
    assert released == contended == held
    assert decode(held) == expected(recs)


# ------------------------------------------------------------------ limits (Java's hasRoomFor)


def java_has_room(codec, ratio, limit, count, uncompressed_records, record_size) -> bool:
    """MemoryRecordsBuilder.hasRoomFor: isFull(), first record, then the estimate."""
    if codec == CODEC_NONE:
        estimated = RECORD_BATCH_OVERHEAD + uncompressed_records
    else:
        estimated = RECORD_BATCH_OVERHEAD + int(
            uncompressed_records * ratio * COMPRESSION_RATE_ESTIMATION_FACTOR
        )
    if count > 0 and limit <= estimated:
        return False  # isFull
    return count == 0 or limit >= estimated + record_size


@pytest.mark.parametrize(
    "codec,ratio,limit",
    [(CODEC_NONE, 1.0, 1000), (CODEC_NONE, 1.0, 16384), (CODEC_LZ4, 1.0, 5000),
     (CODEC_ZSTD, 0.4, 5000), (CODEC_GZIP, 2.5, 20000)],
)  # fmt: skip
def test_try_append_refuses_exactly_when_java_would(codec, ratio, limit) -> None:
    rnd = random.Random(limit)
    b = RecordBatchBuilder(bytearray(1 << 16), codec, limit, compression_ratio_estimate=ratio)
    ts0 = NOW
    records = 0
    refused = 0
    while refused < 20:
        ts = ts0 + rnd.randint(-5000, 5000)
        key = None if rnd.random() < 0.2 else rnd.randbytes(rnd.randint(0, 30))
        value = rnd.randbytes(rnd.randint(0, 200))
        headers = [("h", rnd.randbytes(rnd.randint(0, 9)))] * rnd.randint(0, 3)
        size = record_size_in_bytes(records, 0 if not records else ts - ts0, key, value, headers)
        fits = java_has_room(codec, ratio, limit, records, b.uncompressed_size - 61, size)
        assert b.has_room_for(ts, key, value, headers) == fits
        before = (b.uncompressed_size, b.num_records)
        got = b.try_append(ts, key, value, headers)
        if fits:
            assert got == records
            if records == 0:
                ts0 = ts
            records += 1
        else:
            assert got == -1 and (b.uncompressed_size, b.num_records) == before
            refused += 1
    estimate = java_has_room(codec, ratio, limit, records, b.uncompressed_size - 61, 0)
    assert b.is_full == (not estimate)
    b.close()
    assert b.is_full and len(decode(bytes(b.buffer()))) == records


def test_is_full_and_estimated_size_follow_java() -> None:
    b = RecordBatchBuilder(bytearray(4096), CODEC_LZ4, 1000, compression_ratio_estimate=0.5)
    assert not b.is_full and b.estimated_size_in_bytes == RECORD_BATCH_OVERHEAD
    b.try_append(NOW, None, b"x" * 500)
    raw = b.uncompressed_size - RECORD_BATCH_OVERHEAD
    assert b.estimated_size_in_bytes == RECORD_BATCH_OVERHEAD + int(raw * 0.5 * 1.05)
    assert b.size_in_bytes == b.uncompressed_size and not b.is_full
    while b.try_append(NOW, None, b"x" * 100) >= 0:
        pass
    n = b.num_records
    size = record_size_in_bytes(n, 0, None, b"x" * 100)
    assert b.estimated_size_in_bytes + size > 1000 >= b.estimated_size_in_bytes
    b.close()
    assert b.estimated_size_in_bytes == b.size_in_bytes == len(b.buffer())
    assert b.is_closed and b.is_full and b.compression_type == CODEC_LZ4 and b.write_limit == 1000


def test_close_for_record_appends_refuses_even_a_first_record() -> None:
    """Java's closeForRecordAppends makes isFull true at once; a zero write limit (batch.size=0)
    does not: it still takes one record per batch."""
    b = RecordBatchBuilder(bytearray(1024), CODEC_NONE, 1000)
    b.close_for_record_appends()
    assert b.is_full and not b.is_closed and not b.has_room_for(NOW, None, b"x")
    assert b.try_append(NOW, None, b"x") == -1 and b.num_records == 0
    b.close()
    assert len(decode(bytes(b.buffer()))) == 0
    one = RecordBatchBuilder(bytearray(1024), CODEC_NONE, 0)
    assert not one.is_full and one.has_room_for(NOW, None, b"x")
    assert one.try_append(NOW, None, b"x") == 0
    assert one.is_full and one.try_append(NOW, None, b"y") == -1
    half = RecordBatchBuilder(bytearray(1024), CODEC_NONE, 1000)
    assert half.try_append(NOW, b"k", b"v") == 0
    half.close_for_record_appends()
    assert half.is_full and half.try_append(NOW, b"k", b"w") == -1
    half.close()
    assert [(r[2], r[3]) for r in decode(bytes(half.buffer()))] == [(b"k", b"v")]


def test_write_limit_above_the_buffer_refuses_at_the_buffer_end() -> None:
    b = RecordBatchBuilder(bytearray(200), CODEC_NONE, 10_000)
    assert b.try_append(1, None, b"x" * 100) == 0
    assert b.try_append(1, None, b"x" * 100) == -1  # the buffer, not the limit, is full
    assert b.try_append(1, None, b"x" * 10) == 1
    b.close()
    assert [r[3] for r in decode(bytes(b.buffer()))] == [b"x" * 100, b"x" * 10]


def test_first_record_goes_in_even_above_the_limit() -> None:
    b = RecordBatchBuilder(bytearray(10_000), 0, 100)
    assert b.try_append(1, None, b"x" * 5000) == 0
    assert b.is_full
    assert b.try_append(1, None, b"y") == -1
    b.close()
    assert decode(bytes(b.buffer()))[0][3] == b"x" * 5000


def test_first_record_larger_than_the_buffer_is_a_buffer_error_and_nothing_changes() -> None:
    b = RecordBatchBuilder(bytearray(300), CODEC_GZIP)
    need = RECORD_BATCH_OVERHEAD + record_size_in_bytes(0, 0, None, b"x" * 400)
    with pytest.raises(BufferError, match=f"buffer too small.*need {need} bytes, have 300"):
        b.try_append(1, None, b"x" * 400)
    assert b.num_records == 0 and b.uncompressed_size == 61
    assert b.try_append(7, b"k", b"v") == 0
    b.close()
    assert decode(bytes(b.buffer())) == [(0, 7, b"k", b"v", [])]


def test_upper_bound_estimate_covers_the_real_size_and_equals_kafka_python() -> None:
    cases = [
        (None, None, None),
        (b"", b"", []),
        (b"k", b"v" * 300, [("a", b"b"), ("ключ", None)]),
        (b"k" * 70_000, None, [("x" * 200, b"y" * 20_000)]),
    ]
    for key, value, headers in cases:
        b = RecordBatchBuilder(bytearray(1 << 17))
        b.try_append(int(time.time() * 1000), key, value, headers)
        b.close()
        bound = estimate_size_in_bytes_upper_bound(key, value, headers)
        assert len(b.buffer()) <= bound
        assert bound == DefaultRecordBatchBuilder.estimate_size_in_bytes(key, value, headers or [])


@settings(max_examples=200, deadline=None)
@given(
    offset_delta=st.integers(0, 2**31 - 1),
    timestamp_delta=st.integers(-(2**63), 2**63 - 1),
    key=st.one_of(st.none(), st.binary(max_size=300)),
    value=st.one_of(st.none(), st.binary(max_size=300)),
    headers=st.lists(st.tuples(st.text(max_size=70), st.none() | st.binary(max_size=140))),
)
def test_record_size_equals_kafka_python(offset_delta, timestamp_delta, key, value, headers):
    assert record_size_in_bytes(
        offset_delta, timestamp_delta, key, value, headers
    ) == DefaultRecordBatchBuilder.size_in_bytes(offset_delta, timestamp_delta, key, value, headers)


# ------------------------------------------------------------------ producer state


@pytest.mark.parametrize("codec", CODECS)
def test_set_producer_state_after_close_rewrites_header_and_crc(codec: int) -> None:
    recs = sample_records(30)
    b, before = ours(recs, codec)
    b.set_producer_state(42, 1, 500, True)
    after = bytes(b.buffer())
    assert len(after) == len(before) and after[61:] == before[61:]
    assert after[17:21] != before[17:21]
    batch = DefaultRecordBatch(after)
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (42, 1, 500)
    assert batch.is_transactional
    assert decode(after) == expected(recs)
    if codec == CODEC_NONE:
        assert same_but_leader_epoch(after, kafka_python_batch(recs, 42, 1, 500, True))
    b.close()  # idempotent: nothing changes
    assert bytes(b.buffer()) == after


def test_set_producer_state_before_close() -> None:
    recs = sample_records(5)
    b = RecordBatchBuilder(bytearray(4096))
    for ts, k, v, h in recs:
        b.try_append(ts, k, v, h)
    b.set_producer_state(7, 0, 3, False)
    b.close()
    assert same_but_leader_epoch(bytes(b.buffer()), kafka_python_batch(recs, 7, 0, 3, False))


# ------------------------------------------------------------------ the C-level path


# ------------------------------------------------------------------ bad input


def good_then_decode(b: RecordBatchBuilder, first: int = 0) -> None:
    """The builder is still usable after an error: a good record goes in and decodes."""
    assert b.try_append(NOW + 1, b"ok", b"fine", [("h", b"1")]) == first
    b.close()
    assert decode(bytes(b.buffer()))[-1] == (first, NOW + 1, b"ok", b"fine", [("h", b"1")])


BAD_RECORDS = [
    ((NOW, 5, b"v", None), TypeError, "key must be bytes-like or None, got int"),
    ((NOW, "text", b"v", None), TypeError, "key must be bytes-like or None, got str"),
    ((NOW, b"k", "text", None), TypeError, "value must be bytes-like or None, got str"),
    ((NOW, b"k", 1.5, None), TypeError, "value must be bytes-like or None, got float"),
    (
        (NOW, memoryview(b"abcdef")[::2], b"v", None),
        TypeError,
        r"key must be bytes-like \(a C-contiguous buffer\) or None, got memoryview",
    ),
    (
        (NOW, b"k", b"v", [("ok", b"1"), ("b", b"2"), ("c", None), (b"k", b"v")]),
        TypeError,
        r"headers\[3\]\[0\] \(key\) must be str, got bytes",
    ),
    (
        (NOW, b"k", b"v", [("a", None), ("b", 3)]),
        TypeError,
        r"headers\[1\]\[1\] \(value\) must be bytes-like .*or None, got int",
    ),
    (
        (NOW, b"k", b"v", [("a", "text")]),
        TypeError,
        r"headers\[0\]\[1\] \(value\) must be bytes-like .*or None, got str",
    ),
    (
        (NOW, b"k", b"v", [("a", memoryview(b"abcd")[::2])]),
        TypeError,
        r"headers\[0\]\[1\] \(value\) must be bytes-like \(a C-contiguous buffer\)",
    ),
    (
        (NOW, b"k", b"v", [("a",)]),
        TypeError,
        r"headers\[0\] must be a \(str, bytes or None\) pair",
    ),
    (
        (NOW, b"k", b"v", [("a", b"1", b"2")]),
        TypeError,
        r"headers\[0\] must be a \(str, bytes or None\) pair",
    ),
    ((NOW, b"k", b"v", ["ab"]), TypeError, r"headers\[0\] must be a \(str, bytes or None\) pair"),
    ((NOW, b"k", b"v", {"a": b"b"}), TypeError, "headers must be a list or tuple .* got dict"),
    ((NOW, b"k", b"v", "ab"), TypeError, "headers must be a list or tuple .* got str"),
    (
        (NOW, b"k", b"v", [("\ud800", b"x")]),
        ValueError,
        r"headers\[0\]\[0\] \(key\) cannot be encoded as UTF-8",
    ),
    ((-2, b"k", b"v", None), ValueError, "timestamp must be >= 0 .* or -1 .*, got -2"),
]


@pytest.mark.parametrize("codec", [CODEC_NONE, CODEC_ZSTD])
@pytest.mark.parametrize("args,exc,message", BAD_RECORDS)
def test_bad_record_is_refused_with_the_argument_named(codec, args, exc, message) -> None:
    for already in (0, 1):  # as the first record and after one
        b = RecordBatchBuilder(bytearray(1000), codec)
        if already:
            b.try_append(NOW, b"first", b"record")
        before = (b.num_records, b.uncompressed_size)
        with pytest.raises(exc, match=message):
            b.try_append(*args)
        assert (b.num_records, b.uncompressed_size) == before
        if "timestamp" not in message:  # has_room_for checks the record's contents too
            with pytest.raises(exc, match=message):
                b.has_room_for(*args)
        good_then_decode(b, already)


def test_bad_sizes_functions_input_names_the_argument() -> None:
    with pytest.raises(TypeError, match="key must be bytes-like or None, got int"):
        estimate_size_in_bytes_upper_bound(3, None)
    with pytest.raises(TypeError, match="value must be bytes-like or None, got str"):
        record_size_in_bytes(0, 0, None, "x")
    with pytest.raises(TypeError, match=r"headers\[0\]\[0\] \(key\) must be str"):
        estimate_size_in_bytes_upper_bound(None, None, [(1, b"")])  # type: ignore[list-item]


def test_headers_as_tuples_lists_and_list_pairs() -> None:
    b = RecordBatchBuilder(bytearray(1000))
    b.try_append(1, None, None, (("a", b"1"),))
    b.try_append(2, None, None, [["b", bytearray(b"2")], ("c", memoryview(b"3"))])
    b.try_append(3, None, None, [])
    b.close()
    assert [r[4] for r in decode(bytes(b.buffer()))] == [
        [("a", b"1")],
        [("b", b"2"), ("c", b"3")],
        [],
    ]


def test_full_buffer_then_closed_builder() -> None:
    b = RecordBatchBuilder(bytearray(300))
    assert b.try_append(1, b"k", b"v") == 0
    assert b.try_append(1, b"k", b"x" * 1000) == -1  # full: refused, nothing written
    assert not b.has_room_for(1, b"k", b"x" * 1000)
    assert b.try_append(2, b"k2", b"v2", [("h", b"1")]) == 1
    b.close()
    with pytest.raises(RuntimeError, match="closed"):
        b.try_append(1, b"k", b"v")
    assert not b.has_room_for(1, b"k", b"v")
    assert decode(bytes(b.buffer())) == [
        (0, 1, b"k", b"v", []),
        (1, 2, b"k2", b"v2", [("h", b"1")]),
    ]


def test_bad_builder_arguments() -> None:
    with pytest.raises(ValueError, match="compression_type must be 0 .* got 5"):
        RecordBatchBuilder(bytearray(100), 5)
    with pytest.raises(TypeError, match="buffer must be a writable C-contiguous buffer.*bytes"):
        RecordBatchBuilder(b"x" * 100)
    with pytest.raises(TypeError, match="buffer must be a writable .* got list"):
        RecordBatchBuilder([0] * 100)
    with pytest.raises(ValueError, match="buffer too small: a batch needs at least 61 bytes"):
        RecordBatchBuilder(bytearray(60))
    with pytest.raises(ValueError, match="producer_epoch must fit in an int16, got 40000"):
        RecordBatchBuilder(bytearray(100), producer_epoch=40000)
    with pytest.raises(ValueError, match="compression_ratio_estimate must be > 0"):
        RecordBatchBuilder(bytearray(100), 3, compression_ratio_estimate=0.0)
    b = RecordBatchBuilder(bytearray(100))
    with pytest.raises(ValueError, match="producer_epoch must fit in an int16"):
        b.set_producer_state(1, -40000, 0, False)
    assert b.producer_epoch == -1
    with pytest.raises(RuntimeError, match="close"):
        b.buffer()
    good_then_decode(RecordBatchBuilder(bytearray(100)))


# ------------------------------------------------------------------ property tests


def _big_bytes(n: int, seed: int) -> bytes:
    return random.Random(seed).randbytes(n)


payload_st = st.one_of(
    st.none(),
    st.binary(max_size=100),
    st.builds(_big_bytes, st.integers(100, 1 << 20), st.integers(0, 2**32)),
)
# repeated text: compressible large payloads too
repeated_st = st.builds(
    lambda s, n: s * n, st.binary(min_size=1, max_size=20), st.integers(1, 5000)
)
header_st = st.tuples(
    st.text(max_size=20),  # any code point but surrogates: non-ASCII keys
    st.one_of(st.none(), st.binary(max_size=50)),
)
timestamp_st = st.one_of(
    st.integers(NOW - 10**6, NOW + 10**6),  # around now (deltas of either sign)
    st.integers(0, 2**50),  # far from it
    st.just(-1),
)
record_st = st.tuples(
    timestamp_st,
    st.one_of(payload_st, repeated_st),
    st.one_of(payload_st, repeated_st),
    st.one_of(st.lists(header_st, max_size=5), st.lists(header_st, min_size=40, max_size=50)),
)


@pytest.mark.parametrize("codec", CODECS)
@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(records=st.lists(record_st, min_size=1, max_size=20))
def test_property_round_trip_through_kafka_python(codec: int, records) -> None:
    b, data = ours(records, codec)
    assert decode(data) == expected(records)
    assert b.max_timestamp == max(r[0] for r in records)
    if codec == CODEC_NONE:
        assert same_but_leader_epoch(data, kafka_python_batch(records))


@pytest.mark.parametrize("codec", CODECS)
def test_megabyte_keys_and_values(codec: int) -> None:
    big = random.Random(7).randbytes(1 << 20)
    recs = [(1, big, None, []), (2, None, big, [("x", big[:10])]), (3, b"", b"", [])]
    _, data = ours(recs, codec)
    assert decode(data) == expected(recs)


def test_demo_reads_back_every_codec(capsys) -> None:
    from cproducer import demo

    demo.main()
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0].strip() for line in lines] == list(compression.NAMES.values())
    assert all("read back: same; kafka-python: same" in line for line in lines)
