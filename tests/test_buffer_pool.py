"""BufferPool: accounting, pooling, blocking, FIFO waiters, exhaustion, close."""

from __future__ import annotations

import threading
import time

import pytest

from cproducer._buffer_pool import BufferPool
from cproducer.errors import BufferExhaustedError, ProducerClosedError


def wait_until(cond, timeout=5.0):
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.001)


def test_accounting_and_pooled_reuse() -> None:
    pool = BufferPool(1000, 100)
    a = pool.allocate(100, 10)
    assert isinstance(a, bytearray) and len(a) == 100
    assert pool.available_memory == 900 and pool.unallocated_memory == 900
    pool.deallocate(a)
    assert pool.available_memory == 1000 and pool.unallocated_memory == 900
    assert pool.allocate(100, 10) is a  # recycled through the free list
    b = pool.allocate(250, 10)  # not poolable: from non-pooled memory
    assert len(b) == 250 and pool.available_memory == 650
    pool.deallocate(b)
    assert pool.available_memory == 900 and pool.free_buffers == 0


def test_free_pooled_buffers_are_released_for_other_sizes() -> None:
    pool = BufferPool(300, 100)
    bufs = [pool.allocate(100, 10) for _ in range(3)]
    for b in bufs:
        pool.deallocate(b)
    assert pool.free_buffers == 3 and pool.unallocated_memory == 0
    big = pool.allocate(250, 10)
    assert len(big) == 250 and pool.free_buffers == 0


def test_too_large_raises_at_once() -> None:
    pool = BufferPool(1000, 100)
    t0 = time.monotonic()
    with pytest.raises(BufferExhaustedError, match="hard limit of 1000"):
        pool.allocate(1001, 5000)
    assert time.monotonic() - t0 < 1


def test_exhaustion_after_max_block_ms_with_details() -> None:
    pool = BufferPool(200, 100)
    pool.allocate(100, 10)
    pool.allocate(100, 10)
    t0 = time.monotonic()
    with pytest.raises(BufferExhaustedError, match=r"failed to allocate 100 bytes within .*50 ms"):
        pool.allocate(100, 50)
    assert 0.04 <= time.monotonic() - t0 < 2
    assert pool.queued == 0 and pool.available_memory == 0


def test_blocked_allocation_proceeds_when_another_thread_frees() -> None:
    pool = BufferPool(200, 100)
    held = [pool.allocate(100, 10), pool.allocate(100, 10)]
    got = []
    th = threading.Thread(target=lambda: got.append(pool.allocate(100, 5000)))
    th.start()
    wait_until(lambda: pool.queued == 1)
    pool.deallocate(held.pop())
    th.join(5)
    assert got and len(got[0]) == 100 and pool.queued == 0


def test_waiters_are_served_first_come_first_served() -> None:
    pool = BufferPool(300, 100)
    held = [pool.allocate(100, 10) for _ in range(3)]
    order = []
    threads = []
    for i in range(3):
        th = threading.Thread(target=lambda i=i: (pool.allocate(100, 5000), order.append(i)))
        th.start()
        threads.append(th)
        wait_until(lambda n=i + 1: pool.queued == n)
    for b in held:
        pool.deallocate(b)
        time.sleep(0.02)
    for th in threads:
        th.join(5)
    assert order == [0, 1, 2]


def test_close_wakes_waiters() -> None:
    pool = BufferPool(100, 100)
    pool.allocate(100, 10)
    errors = []

    def wait() -> None:
        try:
            pool.allocate(100, 10_000)
        except ProducerClosedError as exc:
            errors.append(exc)

    th = threading.Thread(target=wait)
    th.start()
    wait_until(lambda: pool.queued == 1)
    pool.close()
    th.join(5)
    assert errors and "closed" in str(errors[0])


def test_eight_threads_accounting_ends_exact() -> None:
    pool = BufferPool(10_000, 100)

    def work(seed: int) -> None:
        for i in range(500):
            size = 100 if (i + seed) % 3 else 37 + seed
            b = pool.allocate(size, 5000)
            pool.deallocate(b)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert pool.available_memory == 10_000 and pool.queued == 0
