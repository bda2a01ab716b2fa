"""BufferPool: accounting, pooling, blocking, FIFO waiters, exhaustion, close, bad input."""

from __future__ import annotations

import re
import signal
import sys
import threading
import time
from typing import Any, Callable, List

import pytest

from cproducer.errors import BufferExhaustedError, ProducerClosedError
from cproducer.producer.internals.buffer_pool import BufferPool


def wait_until(cond: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.001)


def start(fn: Callable[[], Any]) -> threading.Thread:
    th = threading.Thread(target=fn, daemon=True)
    th.start()
    return th


def test_accounting_and_pooled_reuse() -> None:
    pool = BufferPool(1000, 100)
    assert (pool.total_memory, pool.poolable_size, pool.queued) == (1000, 100, 0)
    a = pool.allocate(100, 10)
    assert isinstance(a, bytearray) and len(a) == 100
    assert pool.available_memory == 900 and pool.unallocated_memory == 900
    pool.deallocate(a)
    assert pool.available_memory == 1000 and pool.unallocated_memory == 900
    assert pool.free_buffers == 1
    assert pool.allocate(100, 10) is a  # recycled through the free list
    b = pool.allocate(250, 10)  # not poolable: from non-pooled memory
    assert len(b) == 250 and pool.available_memory == 650
    pool.deallocate(b)
    assert pool.available_memory == 900 and pool.free_buffers == 0
    assert pool.allocate(0, 10) == bytearray()


def test_free_pooled_buffers_are_released_for_other_sizes() -> None:
    pool = BufferPool(300, 100)
    bufs = [pool.allocate(100, 10) for _ in range(3)]
    for b in bufs:
        pool.deallocate(b)
    assert pool.free_buffers == 3 and pool.unallocated_memory == 0
    big = pool.allocate(250, 10)
    assert len(big) == 250 and pool.free_buffers == 0 and pool.available_memory == 50


def test_only_poolable_bytearrays_returned_whole_are_pooled() -> None:
    pool = BufferPool(1000, 100)
    buf = pool.allocate(100, 10)
    pool.allocate(100, 10)
    pool.deallocate(buf, 60)  # Java's size argument: only 60 bytes are marked free
    assert pool.free_buffers == 0 and pool.available_memory == 860
    pool.deallocate(bytes(100))  # a poolable size, but not a bytearray: memory only
    assert pool.free_buffers == 0 and pool.available_memory == 960
    assert pool.allocate(100, 10) is not buf


def test_too_large_raises_at_once_naming_buffer_memory() -> None:
    pool = BufferPool(1000, 100)
    t0 = time.monotonic()
    with pytest.raises(BufferExhaustedError, match="1001 bytes.*buffer.memory.*limit of 1000"):
        pool.allocate(1001, 5000)
    assert time.monotonic() - t0 < 1
    assert pool.available_memory == 1000 and pool.queued == 0


def test_bad_arguments_leave_the_pool_usable() -> None:
    with pytest.raises(ValueError, match="total_memory"):
        BufferPool(-1, 100)
    with pytest.raises(ValueError, match="poolable_size"):
        BufferPool(100, -1)
    pool = BufferPool(1000, 100)
    with pytest.raises(ValueError, match="size must be >= 0, got -5"):
        pool.allocate(-5, 10)
    with pytest.raises(ValueError, match="NaN"):
        pool.allocate(50, float("nan"))
    with pytest.raises(TypeError):
        pool.allocate("100", 10)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="got None"):
        pool.deallocate(None)  # type: ignore[arg-type]
    assert len(pool.allocate(100, 10)) == 100 and pool.available_memory == 900


def test_returning_more_than_was_taken_is_refused() -> None:
    pool = BufferPool(300, 100)
    a = pool.allocate(100, 10)
    pool.deallocate(a)
    with pytest.raises(ValueError, match="returned twice"):
        pool.deallocate(bytearray(250))
    pool.deallocate(pool.allocate(100, 10))  # still usable, accounting untouched
    assert pool.available_memory == 300 and pool.free_buffers == 1
    b = pool.allocate(300, 10)
    pool.deallocate(b)
    with pytest.raises(ValueError, match="buffer.memory \\(300 bytes\\)"):
        pool.deallocate(b)
    assert pool.available_memory == 300


def test_exhaustion_after_max_block_ms_with_details() -> None:
    pool = BufferPool(200, 100)
    pool.allocate(100, 10)
    pool.allocate(100, 10)
    t0 = time.monotonic()
    with pytest.raises(BufferExhaustedError) as info:
        pool.allocate(100, 50)
    elapsed_ms = (time.monotonic() - t0) * 1000
    assert 45 <= elapsed_ms < 2000
    message = str(info.value)
    assert "Failed to allocate 100 bytes" in message
    assert "max blocking time 50 ms" in message
    assert "Available memory: 0 bytes" in message and "Total memory: 200 bytes" in message
    waited = float(re.search(r"waited ([0-9.]+) ms", message).group(1))  # type: ignore[union-attr]
    assert 45 <= waited <= elapsed_ms + 1
    assert pool.queued == 0 and pool.available_memory == 0
    with pytest.raises(BufferExhaustedError, match="waited 0.0 ms"):
        pool.allocate(100, 0)  # no time to block: fails at once
    with pytest.raises(BufferExhaustedError):
        pool.allocate(100, -5)  # a negative time counts as none


def test_a_timed_out_waiter_gives_back_what_it_gathered() -> None:
    pool = BufferPool(300, 100)
    held = pool.allocate(250, 10)
    small = pool.allocate(30, 10)  # 20 bytes left
    errors: List[BaseException] = []

    def wait() -> None:
        try:
            pool.allocate(100, 300)
        except BufferExhaustedError as exc:
            errors.append(exc)

    th = start(wait)
    wait_until(lambda: pool.queued == 1)
    pool.deallocate(small)  # 50 free now: the waiter takes all 50 and keeps waiting
    wait_until(lambda: pool.unallocated_memory == 0)
    assert pool.queued == 1
    th.join(5)
    assert errors and "Available memory: 50 bytes" in str(errors[0])
    assert pool.available_memory == 50 and pool.queued == 0
    pool.deallocate(held)
    assert pool.available_memory == 300


def test_blocked_allocation_proceeds_when_another_thread_frees() -> None:
    pool = BufferPool(200, 100)
    held = [pool.allocate(100, 10), pool.allocate(100, 10)]
    got: List[bytearray] = []
    th = start(lambda: got.append(pool.allocate(100, 5000)))
    wait_until(lambda: pool.queued == 1)
    returned = held.pop()
    pool.deallocate(returned)
    th.join(5)
    assert got and got[0] is returned and pool.queued == 0  # the pooled buffer itself


def test_an_unbounded_wait_ends_when_memory_comes_back() -> None:
    pool = BufferPool(100, 100)
    held = pool.allocate(100, 10)
    got: List[bytearray] = []
    th = start(lambda: got.append(pool.allocate(100, float("inf"))))
    wait_until(lambda: pool.queued == 1)
    pool.deallocate(held)
    th.join(5)
    assert got == [held] and pool.queued == 0


def test_a_large_request_gathers_memory_across_deallocations() -> None:
    pool = BufferPool(300, 100)
    held = [pool.allocate(100, 10) for _ in range(3)]
    got: List[bytearray] = []
    th = start(lambda: got.append(pool.allocate(250, 5000)))
    wait_until(lambda: pool.queued == 1)
    pool.deallocate(held.pop())
    pool.deallocate(held.pop())
    wait_until(lambda: pool.available_memory == 0)  # the waiter took both, still 50 short
    assert pool.queued == 1 and not got
    pool.deallocate(held.pop())
    th.join(5)
    assert len(got[0]) == 250 and pool.available_memory == 50 and pool.queued == 0


def test_waiters_are_served_first_come_first_served() -> None:
    pool = BufferPool(300, 100)
    held = [pool.allocate(100, 10) for _ in range(3)]
    order: List[int] = []
    threads = []

    def waiter(i: int) -> Callable[[], None]:
        def run() -> None:
            pool.allocate(100, 5000)
            order.append(i)

        return run

    for i in range(3):
        threads.append(start(waiter(i)))
        wait_until(lambda: pool.queued == len(threads))
    for n, b in enumerate(held, 1):
        pool.deallocate(b)
        wait_until(lambda n=n: len(order) == n)  # type: ignore[misc]
    for th in threads:
        th.join(5)
    assert order == [0, 1, 2]


def test_a_large_waiter_at_the_head_is_not_starved_by_small_ones() -> None:
    pool = BufferPool(200, 100)
    held = [pool.allocate(100, 10), pool.allocate(100, 10)]
    order: List[str] = []
    big: List[bytearray] = []

    def run_big() -> None:
        big.append(pool.allocate(200, 5000))
        order.append("big")

    def run_small() -> None:
        pool.allocate(100, 5000)
        order.append("small")

    th_big = start(run_big)
    wait_until(lambda: pool.queued == 1)
    th_small = start(run_small)
    wait_until(lambda: pool.queued == 2)
    pool.deallocate(held.pop())  # goes to the head (big), not to small
    wait_until(lambda: pool.available_memory == 0)
    assert order == [] and pool.queued == 2
    pool.deallocate(held.pop())
    th_big.join(5)
    assert order == ["big"] and pool.queued == 1
    pool.deallocate(big[0])
    th_small.join(5)
    assert order == ["big", "small"] and pool.available_memory == 100


def test_close_wakes_waiters_and_refuses_allocations() -> None:
    pool = BufferPool(100, 100)
    held = pool.allocate(100, 10)
    errors: List[BaseException] = []

    def wait() -> None:
        try:
            pool.allocate(100, 10_000)
        except ProducerClosedError as exc:
            errors.append(exc)

    threads = [start(wait) for _ in range(3)]
    wait_until(lambda: pool.queued == 3)
    t0 = time.monotonic()
    pool.close()
    for th in threads:
        th.join(5)
    assert time.monotonic() - t0 < 2 and pool.closed
    assert [str(e) for e in errors] == ["Producer closed while allocating memory"] * 3
    assert pool.queued == 0
    with pytest.raises(ProducerClosedError):
        pool.allocate(10, 10)
    pool.deallocate(held)  # giving memory back still works after close
    assert pool.available_memory == 100
    with pytest.raises(ProducerClosedError):
        pool.allocate(100, 10)  # even with a pooled buffer on the free list


def test_a_signal_handler_error_interrupts_a_blocked_allocation() -> None:
    class Interrupted(Exception):
        pass

    def handler(signum: int, frame: Any) -> None:
        raise Interrupted()

    pool = BufferPool(300, 100)
    held = pool.allocate(250, 10)
    main = threading.main_thread().ident
    assert threading.get_ident() == main
    previous = signal.signal(signal.SIGUSR1, handler)
    try:

        def poke() -> None:
            wait_until(lambda: pool.queued == 1)
            signal.pthread_kill(main, signal.SIGUSR1)  # type: ignore[arg-type]

        th = start(poke)
        t0 = time.monotonic()
        with pytest.raises(Interrupted):
            pool.allocate(100, 10_000)
        assert time.monotonic() - t0 < 5
        th.join(5)
    finally:
        signal.signal(signal.SIGUSR1, previous)
    assert pool.queued == 0 and pool.available_memory == 50
    pool.deallocate(held)
    assert pool.available_memory == 300


def test_eight_threads_accounting_ends_exact() -> None:
    pool = BufferPool(2_000, 100)  # smaller than the demand: threads block and wake each other
    errors: List[BaseException] = []

    def work(seed: int) -> None:
        try:
            bufs = []
            for i in range(2000):
                size = 100 if (i + seed) % 3 else 37 + seed
                bufs.append(pool.allocate(size, 10_000))
                if len(bufs) == 3:
                    for b in bufs:
                        pool.deallocate(b)
                    bufs.clear()
            for b in bufs:
                pool.deallocate(b)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(60)
    assert not errors
    assert pool.available_memory == 2_000 and pool.queued == 0
    assert pool.unallocated_memory + pool.free_buffers * 100 == 2_000


def test_the_free_list_owns_exactly_one_reference_per_buffer() -> None:
    pool = BufferPool(1000, 100)
    buf = pool.allocate(100, 10)
    base = sys.getrefcount(buf)
    pool.deallocate(buf)
    assert sys.getrefcount(buf) == base + 1  # held by the free list
    again = pool.allocate(100, 10)
    assert again is buf and sys.getrefcount(buf) == base + 1  # `again` now, not the pool
    del again
    pool.deallocate(buf)
    pool.allocate(950, 10)  # frees the pooled buffer up for non-pooled memory
    assert sys.getrefcount(buf) == base and pool.free_buffers == 0
    pool.deallocate(bytearray(950))
    other = pool.allocate(100, 10)
    assert other is not buf
    pool.deallocate(other)
    assert sys.getrefcount(other) == base + 1
    del pool  # the free list's reference goes with the pool
    assert sys.getrefcount(other) == base
