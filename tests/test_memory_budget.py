"""The BufferPool as the producer's memory budget: what a batch holds beyond its pooled buffer
(uncompressed records grown past it, compressed output that does not fit, completion thunks)
is charged to buffer.memory, and given back when the batch closes or completes."""

from __future__ import annotations

import threading
import time
from typing import Any, List

import pytest
from kafka.record.default_records import DefaultRecordBatch

from cproducer.cluster import TopicPartition
from cproducer.errors import BufferExhaustedError
from cproducer.producer.internals.buffer_pool import BufferPool
from cproducer.producer.internals.producer_batch import ProducerBatch
from cproducer.record.compression import CODEC_LZ4, CODEC_NONE
from cproducer.record.record_batch_builder import RecordBatchBuilder

TP = TopicPartition("t", 0)


def test_try_reserve_takes_only_what_is_free_and_release_gives_it_back() -> None:
    pool = BufferPool(1000, 100)
    assert pool.try_reserve_memory(600)
    assert pool.available_memory == 400
    assert not pool.try_reserve_memory(500)  # refused: nothing taken
    assert pool.available_memory == 400
    pool.release_memory(600)
    assert pool.available_memory == 1000
    with pytest.raises(ValueError, match="n must be >= 0"):
        pool.try_reserve_memory(-1)


def test_try_reserve_never_overtakes_a_waiting_allocation() -> None:
    pool = BufferPool(1000, 100)
    assert pool.try_reserve_memory(1000)
    got: List[Any] = []
    waiter = threading.Thread(target=lambda: got.append(pool.allocate(500, 10_000)))
    waiter.start()
    deadline = time.monotonic() + 5
    while pool.queued == 0 and time.monotonic() < deadline:
        time.sleep(0.001)
    assert pool.queued == 1
    pool.release_memory(300)  # the waiter takes it (it needs 500)
    time.sleep(0.05)
    assert not pool.try_reserve_memory(1)  # the waiter comes first
    pool.release_memory(700)
    waiter.join(5)
    assert len(got) == 1 and len(got[0]) == 500
    assert pool.available_memory == 500 and pool.try_reserve_memory(500)


def test_force_reserve_runs_into_debt_that_blocks_allocations_until_repaid() -> None:
    pool = BufferPool(1000, 100)
    buf = pool.allocate(100, 0)
    pool.force_reserve_memory(950)  # 900 were free: 50 in debt
    assert pool.available_memory == -50
    with pytest.raises(BufferExhaustedError):
        pool.allocate(100, 20)
    pool.deallocate(buf)  # repays the debt instead of going on the free list
    assert pool.free_buffers == 0 and pool.available_memory == 50
    pool.release_memory(950)
    assert pool.available_memory == 1000
    assert len(pool.allocate(100, 0)) == 100


def _lz4_builder(pool: BufferPool, size: int = 1024) -> RecordBatchBuilder:
    # a ratio estimate of 0.1: the uncompressed records may grow ten times past the buffer
    return RecordBatchBuilder(
        pool.allocate(size, 0),
        CODEC_LZ4,
        size,
        compression_ratio_estimate=0.1,
        memory_budget=pool,
    )


def _fill(b: RecordBatchBuilder, value: bytes) -> int:
    n = 0
    while b.try_append(n, b"k", value) >= 0:
        n += 1
    return n


def test_records_compressed_as_they_come_charge_their_compressed_bytes_until_closed() -> None:
    pool = BufferPool(1 << 20, 1024)
    b = _lz4_builder(pool)
    n = _fill(b, b"v" * 100)
    # ten times the buffer went in, the buffer is the stage: only compressed bytes are held
    assert b.uncompressed_size > 8 * 1024 and b.capacity == 1024
    assert 0 < b.charged_memory < 1024 * 5
    assert pool.available_memory == (1 << 20) - 1024 - b.charged_memory
    b.close()  # compressed back into the pooled buffer: the compressed output and its charge go
    assert b.charged_memory == 0 and b.size_in_bytes <= 1024
    assert pool.available_memory == (1 << 20) - 1024
    batch = DefaultRecordBatch(bytes(b.buffer()))
    assert [r.value for r in batch] == [b"v" * 100] * n


def test_without_memory_for_growth_the_batch_is_full_at_its_buffer() -> None:
    pool = BufferPool(1024, 1024)  # the batch's own buffer is all there is
    b = _lz4_builder(pool)
    n = _fill(b, b"v" * 100)
    assert b.charged_memory == 0 and b.uncompressed_size <= 1024 and n == 8
    assert b.is_full  # sendable at once
    pool_only = BufferPool(1 << 20, 1024)
    assert _fill(_lz4_builder(pool_only), b"v" * 100) > 8  # with memory it grows


def test_incompressible_output_that_does_not_fit_is_charged_until_released() -> None:
    import os

    pool = BufferPool(1 << 20, 1024)
    b = RecordBatchBuilder(pool.allocate(1024, 0), CODEC_LZ4, 1024, memory_budget=pool)
    b.try_append(0, None, os.urandom(950))  # lz4 of random bytes is a little larger
    b.close()
    assert b.size_in_bytes > 1024 and b.charged_memory == b.size_in_bytes
    assert pool.available_memory == (1 << 20) - 1024 - b.size_in_bytes
    b.release_memory()
    assert b.charged_memory == 0 and pool.available_memory == (1 << 20) - 1024
    with pytest.raises(RuntimeError, match="released"):
        b.buffer()


def test_completion_thunks_are_charged_and_given_back_at_completion() -> None:
    pool = BufferPool(1 << 20, 1 << 16)
    b = RecordBatchBuilder(pool.allocate(1 << 16, 0), CODEC_NONE, memory_budget=pool)
    batch = ProducerBatch(TP, b, 0)
    seen: List[Any] = []
    for i in range(100):
        assert batch.try_append(i, None, b"v", None, lambda md, exc: seen.append(md), 0)
    charge = batch.charged_memory
    assert charge >= 100 * 32  # a thunk and a list slot per record
    assert pool.available_memory == (1 << 20) - (1 << 16) - charge
    assert batch.complete(7, -1)
    assert len(seen) == 100 and seen[-1].offset == 106
    assert batch.charged_memory == 0 and pool.available_memory == (1 << 20) - (1 << 16)


def test_a_batch_without_memory_for_more_thunks_is_full() -> None:
    pool = BufferPool(1 << 16, 1 << 16)  # nothing beyond the batch's buffer
    b = RecordBatchBuilder(pool.allocate(1 << 16, 0), CODEC_NONE, memory_budget=pool)
    batch = ProducerBatch(TP, b, 0)
    cb = lambda md, exc: None  # noqa: E731
    appended = 0
    while batch.try_append(appended, None, b"v", None, cb, 0) is not None:
        appended += 1
    # the first record's thunks cannot be refused (16 of them, in debt); the 17th is refused
    assert appended == 16 and pool.available_memory < 0
    # refused once, the batch is full for good: ready() sends it at once, freeing memory
    assert batch.is_full() and batch.try_append(99, None, b"v", None, None, 0) is None
    batch.complete(0, -1)
    assert pool.available_memory == 0


def test_a_batch_charges_its_own_objects_and_gives_them_back_with_its_buffer() -> None:
    from cproducer.producer.internals.record_accumulator import (
        BATCH_OVERHEAD_BYTES,
        RecordAccumulator,
    )

    pool = BufferPool(1 << 20, 1024)
    acc = RecordAccumulator(1024, CODEC_NONE, 5, 100, 1000, 120_000, pool)
    acc.append("t", 0, 0, b"k", b"v", None, None, 1000.0, False, 0, None)
    (batch,) = acc.incomplete_batches()
    assert pool.available_memory == (1 << 20) - 1024 - BATCH_OVERHEAD_BYTES
    batch.complete(0, -1)
    acc.deallocate(batch)
    assert pool.available_memory == 1 << 20 and pool.free_buffers == 1


def test_a_released_builder_compresses_nothing_more() -> None:
    """After release_memory() (the batch is done, its pooled buffer back in the pool) the stage
    is not the batch's any more: ending appends charges nothing, close() refuses."""
    pool = BufferPool(1 << 20, 1024)
    b = _lz4_builder(pool)
    _fill(b, b"v" * 100)
    assert b.charged_memory > 0
    b.release_memory()
    b.close_for_record_appends()
    assert b.charged_memory == 0 and pool.available_memory == (1 << 20) - 1024
    with pytest.raises(RuntimeError, match="released"):
        b.close()


def test_a_large_lz4_value_is_refused_when_its_compressed_blocks_have_no_room() -> None:
    """A value lz4 compresses straight from the caller's memory (8 KiB or more) has its
    compressed blocks reserved before anything is written: when the budget has no room for them
    the record is refused (the batch full) and the batch holds what it had."""
    pool = BufferPool(70000, 16384)
    b = RecordBatchBuilder(
        bytearray(16384), CODEC_LZ4, 1 << 22, compression_ratio_estimate=0.05, memory_budget=pool
    )
    first = b"a" * 10000
    assert b.try_append(0, b"k", first) == 0  # the first record always goes in
    charged = b.charged_memory
    assert 10000 < charged < 70000 and pool.available_memory == 70000 - charged
    assert b.try_append(0, b"k", b"b" * 100000) == -1
    assert b.is_full and b.num_records == 1 and b.charged_memory == charged
    b.close()
    records = list(DefaultRecordBatch(bytes(b.buffer())))
    assert [(r.key, r.value) for r in records] == [(b"k", first)]
    assert pool.available_memory == 70000
