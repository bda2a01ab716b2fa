"""Clock: the system clocks, the manual clock and the ``time_ms`` function form."""

from __future__ import annotations

import time

import pytest

from cproducer.utils.time import SYSTEM_CLOCK, Clock, FunctionClock, ManualClock, as_clock


def test_system_clock_reads_the_wall_and_the_monotonic_clocks() -> None:
    before_wall, before_mono = time.time_ns() // 1_000_000, time.monotonic_ns()
    wall, mono_ms, mono_ns = (
        SYSTEM_CLOCK.milliseconds(),
        SYSTEM_CLOCK.monotonic_ms(),
        SYSTEM_CLOCK.nanoseconds(),
    )
    after_wall, after_mono = time.time_ns() // 1_000_000, time.monotonic_ns()
    assert before_wall <= wall <= after_wall
    assert before_mono // 1_000_000 <= mono_ms <= after_mono // 1_000_000
    assert before_mono <= mono_ns <= after_mono


def test_manual_clock_steps_the_wall_clock_alone() -> None:
    clock = ManualClock(wall_ms=5_000, monotonic_ns=0)
    clock.sleep(250)
    assert (clock.milliseconds(), clock.monotonic_ms(), clock.nanoseconds()) == (
        5_250,
        250,
        250_000_000,
    )
    clock.step_wall_clock(-3_600_000)  # an NTP step back by an hour
    assert clock.milliseconds() == 5_250 - 3_600_000 and clock.monotonic_ms() == 250


def test_a_time_ms_function_drives_both_clocks() -> None:
    now = [42]
    clock = as_clock(lambda: now[0])
    assert isinstance(clock, FunctionClock)
    now[0] = 50
    assert (clock.milliseconds(), clock.monotonic_ms(), clock.nanoseconds()) == (
        50,
        50,
        50_000_000,
    )
    manual = ManualClock()
    assert as_clock(manual) is manual


def test_bad_clocks_say_what_was_expected() -> None:
    with pytest.raises(TypeError, match="clock must be a cproducer.utils.time.Clock or a zero-arg"):
        as_clock(12)
    with pytest.raises(TypeError, match="time_ms must be a zero-argument function"):
        FunctionClock(12)  # type: ignore[arg-type]
    with pytest.raises(NotImplementedError):
        Clock().milliseconds()
