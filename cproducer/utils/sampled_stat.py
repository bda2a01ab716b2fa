"""Windowed statistics behind ``KafkaProducer.metrics()`` (Java's ``common.metrics.stats``).

Java measures with a sensor per quantity and one stat per metric (``Avg``, ``Max``, ``Rate``,
``Meter``): each keeps ``metrics.num.samples`` samples of ``metrics.sample.window.ms`` each, the
current one taking values until its window is over, the oldest one then cleared and reused. A
sample older than ``samples x window`` no longer counts. A rate divides what the live samples
hold by the time they span, taken as at least ``samples - 1`` whole windows (so that a fresh
window does not make the rate jump). ``Avg`` and ``Max`` are NaN when no live sample holds a value.

The stats of one sensor are recorded with the same values at the same times, so their samples
start and end together: ``SampledStat`` keeps them in one set of samples (sum, count and max per
window) and gives every reading Java's stats give (``avg``, ``max``, ``rate``, ``count_rate``),
plus the cumulative ``total`` and ``count`` (Java's ``CumulativeSum`` / ``CumulativeCount``, the
``-total`` half of a ``Meter``). One ``record`` may stand for several events (``events``): the
producer records per request what Java records per batch, with the same result.

Not thread-safe by itself: the owner records and reads under its lock.
"""

from __future__ import annotations

from typing import Any, List, Optional, Tuple

NAN = float("nan")

#: ``metrics.recording.level``: a sensor records only when its level is at most the config's
INFO = 0
DEBUG = 1
TRACE = 2
RECORDING_LEVELS = {"INFO": INFO, "DEBUG": DEBUG, "TRACE": TRACE}


class MetricConfig:
    """``metrics.num.samples``, ``metrics.sample.window.ms`` and ``metrics.recording.level``
    (Java's ``MetricConfig``)."""

    __slots__ = ("samples", "window_ms", "recording_level")

    def __init__(self, samples: int = 2, window_ms: int = 30000, recording_level: int = INFO):
        if isinstance(samples, bool) or not isinstance(samples, int) or samples < 1:
            raise ValueError(f"metrics.num.samples must be an integer >= 1, got {samples!r}")
        if isinstance(window_ms, bool) or not isinstance(window_ms, int) or window_ms < 1:
            raise ValueError(f"metrics.sample.window.ms must be an integer >= 1, got {window_ms!r}")
        if recording_level not in (INFO, DEBUG, TRACE):
            raise ValueError(
                f"recording_level must be one of INFO ({INFO}), DEBUG ({DEBUG}), TRACE ({TRACE}),"
                f" got {recording_level!r}"
            )
        self.samples = samples
        self.window_ms = window_ms
        self.recording_level = recording_level

    @classmethod
    def from_config(cls, cfg: Any) -> MetricConfig:
        """From a ``ProducerConfig`` (the three ``metrics.*`` keys)."""
        return cls(
            cfg["metrics.num.samples"],
            cfg["metrics.sample.window.ms"],
            RECORDING_LEVELS[cfg["metrics.recording.level"]],
        )

    def should_record(self, level: int) -> bool:
        return level <= self.recording_level

    def __repr__(self) -> str:
        names = {v: k for k, v in RECORDING_LEVELS.items()}
        return (
            f"MetricConfig(samples={self.samples}, window_ms={self.window_ms}, "
            f"recording_level={names[self.recording_level]})"
        )


# a finished sample: (start_ms, count, sum, max)
_Sample = Tuple[int, int, float, float]


class SampledStat:
    """Sum, count and max of a quantity per sample window, and their cumulative totals.

    The current sample lives in the stat's own fields and the finished ones in a list made at
    the first window change (Java reuses the oldest of ``samples`` slots; keeping the last
    ``samples - 1`` finished ones is the same set): a producer makes dozens of these, and a
    short-lived one allocates nothing more for them."""

    __slots__ = ("_config", "_start", "_count", "_sum", "_max", "_done", "total", "count")

    def __init__(self, config: MetricConfig) -> None:
        self._config = config
        self._start = -1  # the current sample's start (ms); -1: nothing recorded yet
        self._count = 0
        self._sum = 0.0
        self._max = -float("inf")
        self._done: Optional[List[_Sample]] = None  # the finished samples, oldest first
        #: cumulative sum of every value recorded (Java's CumulativeSum)
        self.total = 0.0
        #: cumulative number of events recorded (Java's CumulativeCount)
        self.count = 0

    def record(
        self, value: float, now_ms: int, events: int = 1, max_value: Optional[float] = None
    ) -> None:
        """``events`` events adding up to ``value``, the largest of them ``max_value`` (default:
        ``value``), at ``now_ms``."""
        if self._start < 0:
            self._start = now_ms
        elif now_ms - self._start >= self._config.window_ms:
            self._advance(now_ms)
        self._sum += value
        self._count += events
        top = value if max_value is None else max_value
        if top > self._max:
            self._max = top
        self.total += value
        self.count += events

    def _advance(self, now_ms: int) -> None:
        keep = self._config.samples - 1
        if keep > 0:
            done = self._done
            if done is None:
                done = self._done = []
            done.append((self._start, self._count, self._sum, self._max))
            if len(done) > keep:
                del done[0]
        self._start = now_ms
        self._count = 0
        self._sum = 0.0
        self._max = -float("inf")

    def _live(self, now_ms: int) -> List[_Sample]:
        if self._start < 0:
            return []
        expire_age = self._config.samples * self._config.window_ms
        samples = list(self._done) if self._done else []
        samples.append((self._start, self._count, self._sum, self._max))
        return [s for s in samples if now_ms - s[0] < expire_age]

    # ------------------------------------------------------------------ readings
    def avg(self, now_ms: int) -> float:
        """Java's ``Avg``: the mean of the values in the live samples (NaN: none)."""
        total = 0.0
        count = 0
        for _start, n, value, _max in self._live(now_ms):
            total += value
            count += n
        return total / count if count else NAN

    def max(self, now_ms: int) -> float:
        """Java's ``Max``: the largest value in the live samples (NaN: none)."""
        live = [top for _start, n, _sum, top in self._live(now_ms) if n]
        return float(max(live)) if live else NAN

    def rate(self, now_ms: int, unit_ms: float = 1000.0) -> float:
        """Java's ``Rate`` (of a ``WindowedSum``): the values' sum per ``unit_ms`` (default per
        second; 1e-6 gives the fraction of time a quantity in ns covers, Java's NANOSECONDS)."""
        live = self._live(now_ms)
        return sum(s[2] for s in live) / (self._window_size(live, now_ms) / unit_ms)

    def count_rate(self, now_ms: int) -> float:
        """Java's ``Rate(new WindowedCount())``: events per second."""
        live = self._live(now_ms)
        return sum(s[1] for s in live) / (self._window_size(live, now_ms) / 1000.0)

    def _window_size(self, live: List[_Sample], now_ms: int) -> int:
        """Java's ``Rate.windowSize``: the time the live samples span, at least ``samples - 1``
        whole windows, at least 1 ms."""
        window = self._config.window_ms
        elapsed = now_ms - min(s[0] for s in live) if live else 0
        full_windows = elapsed // window
        missing = self._config.samples - 1 - full_windows
        if missing > 0:
            elapsed += missing * window
        return max(elapsed, 1)
