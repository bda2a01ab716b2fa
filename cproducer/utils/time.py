"""Clock: the producer's one source of time (Java's ``org.apache.kafka.common.utils.Time``).

Two clocks, for two purposes:

* ``milliseconds()``: the wall clock (ms since the epoch), for what is a point in time to others:
  record timestamps.
* ``monotonic_ms()`` / ``nanoseconds()``: a clock that never goes back, for durations: timeouts,
  backoffs, lingering, latencies. A wall-clock step (NTP, an operator) must not time out a
  request or expire a batch.

``SYSTEM_CLOCK`` is the default everywhere; tests and users inject another (the ``clock`` hook of
``KafkaProducer``; ``ManualClock`` moves only when told to, and can step its wall clock alone).
"""

from __future__ import annotations

import threading
import time
from typing import Callable


class Clock:
    """The interface (Java's ``Time``)."""

    def milliseconds(self) -> int:
        """Wall-clock time in ms since the epoch (record timestamps)."""
        raise NotImplementedError

    def monotonic_ms(self) -> int:
        """Monotonic time in ms, from an arbitrary origin (durations)."""
        return self.nanoseconds() // 1_000_000

    def nanoseconds(self) -> int:
        """Monotonic time in ns, from an arbitrary origin."""
        raise NotImplementedError


class SystemClock(Clock):
    """The operating system's clocks: ``time.time_ns`` and ``time.monotonic_ns``."""

    def milliseconds(self) -> int:
        return time.time_ns() // 1_000_000

    def monotonic_ms(self) -> int:
        return time.monotonic_ns() // 1_000_000

    def nanoseconds(self) -> int:
        return time.monotonic_ns()

    def __repr__(self) -> str:
        return "SystemClock()"


SYSTEM_CLOCK: Clock = SystemClock()


class ManualClock(Clock):
    """A clock that moves when told to (Java's ``MockTime``): ``sleep(ms)`` moves both clocks,
    ``step_wall_clock(ms)`` the wall clock alone (an NTP step). Thread-safe."""

    def __init__(self, wall_ms: int = 1_700_000_000_000, monotonic_ns: int = 0) -> None:
        self._lock = threading.Lock()
        self._wall_ms = wall_ms
        self._monotonic_ns = monotonic_ns

    def milliseconds(self) -> int:
        return self._wall_ms

    def nanoseconds(self) -> int:
        return self._monotonic_ns

    def sleep(self, ms: int) -> None:
        """``ms`` pass on both clocks."""
        with self._lock:
            self._wall_ms += ms
            self._monotonic_ns += ms * 1_000_000

    def step_wall_clock(self, ms: int) -> None:
        """The wall clock jumps by ``ms`` (may be negative); the monotonic clock does not."""
        with self._lock:
            self._wall_ms += ms

    def __repr__(self) -> str:
        return f"ManualClock(wall_ms={self._wall_ms}, monotonic_ns={self._monotonic_ns})"


class FunctionClock(Clock):
    """Both clocks from one function returning ms: what the ``time_ms`` hook gives (a test's fake
    clock that knows no difference between the two)."""

    def __init__(self, time_ms: Callable[[], int]) -> None:
        if not callable(time_ms):
            raise TypeError(
                f"time_ms must be a zero-argument function returning ms, got "
                f"{type(time_ms).__name__}"
            )
        self.time_ms = time_ms

    def milliseconds(self) -> int:
        return int(self.time_ms())

    def monotonic_ms(self) -> int:
        return int(self.time_ms())

    def nanoseconds(self) -> int:
        return int(self.time_ms()) * 1_000_000


def as_clock(value: object, name: str = "clock") -> Clock:
    """A Clock from a Clock, or from a zero-argument function returning ms (``FunctionClock``)."""
    if isinstance(value, Clock):
        return value
    if callable(value):
        return FunctionClock(value)  # type: ignore[arg-type]
    raise TypeError(
        f"{name} must be a cproducer.utils.time.Clock or a zero-argument function returning ms, "
        f"got {type(value).__name__}"
    )
