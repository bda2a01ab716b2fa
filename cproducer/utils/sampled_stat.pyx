# cython: freethreading_compatible=False
# Free-threaded Python: keeps the GIL. A stat is not thread-safe by itself: its owner records and
# reads it under its own lock.
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

``SampledStat`` is a C type: the I/O thread records into about twenty of them per Produce
request, and every Python step it takes holds the GIL the application's threads append under.
``MetricConfig`` is read once per stat and stays a Python class.

Not thread-safe by itself: the owner records and reads under its lock.
"""

NAN = float("nan")

#: ``metrics.recording.level``: a sensor records only when its level is at most the config's
INFO = 0
DEBUG = 1
TRACE = 2
RECORDING_LEVELS = {"INFO": INFO, "DEBUG": DEBUG, "TRACE": TRACE}

cdef double _INF = float("inf")
cdef double _NAN = NAN


class MetricConfig:
    """``metrics.num.samples``, ``metrics.sample.window.ms`` and ``metrics.recording.level``
    (Java's ``MetricConfig``)."""

    __slots__ = ("samples", "window_ms", "recording_level")

    def __init__(self, samples=2, window_ms=30000, recording_level=INFO):
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
    def from_config(cls, cfg):
        """From a ``ProducerConfig`` (the three ``metrics.*`` keys)."""
        return cls(
            cfg["metrics.num.samples"],
            cfg["metrics.sample.window.ms"],
            RECORDING_LEVELS[cfg["metrics.recording.level"]],
        )

    def should_record(self, level):
        return level <= self.recording_level

    def __repr__(self):
        names = {v: k for k, v in RECORDING_LEVELS.items()}
        return (
            f"MetricConfig(samples={self.samples}, window_ms={self.window_ms}, "
            f"recording_level={names[self.recording_level]})"
        )


# What the live samples hold at one reading (see SampledStat._gather).
cdef struct Live:
    bint any          # a live sample exists
    double sum        # their values' sum, oldest sample first
    long long count   # their events
    bint has_max      # one of them holds an event
    double max        # the largest value of those that do
    long long first   # the oldest live sample's start


# Python's floor division (a rate's whole windows): a reading may come a few ms before the start
# of a sample recorded meanwhile on the I/O thread, and C division truncates towards zero.
cdef inline long long _floordiv(long long a, long long b) noexcept:
    cdef long long q = a / b
    if a % b != 0 and (a < 0) != (b < 0):
        q -= 1
    return q


cdef class SampledStat:
    """Sum, count and max of a quantity per sample window, and their cumulative totals.

    The current sample lives in the stat's C fields and the finished ones in a list of
    ``(start_ms, count, sum, max)`` made at the first window change (Java reuses the oldest of
    ``samples`` slots; keeping the last ``samples - 1`` finished ones is the same set): a producer
    makes dozens of these, and a short-lived one allocates nothing more for them."""

    cdef readonly object _config
    # the config's numbers, read once: a MetricConfig is not changed after it is made
    cdef long long _samples
    cdef long long _window_ms
    cdef readonly long long _start  # the current sample's start (ms); -1: nothing recorded yet
    cdef readonly long long _count
    cdef readonly double _sum
    cdef readonly double _max
    cdef readonly list _done  # the finished samples, oldest first (None: no window change yet)
    #: cumulative sum of every value recorded (Java's CumulativeSum)
    cdef public double total
    #: cumulative number of events recorded (Java's CumulativeCount)
    cdef public long long count

    def __init__(self, config):
        self._config = config
        self._samples = config.samples
        self._window_ms = config.window_ms
        self._start = -1
        self._count = 0
        self._sum = 0.0
        self._max = -_INF
        self._done = None
        self.total = 0.0
        self.count = 0

    def record(self, double value, long long now_ms, long long events=1, max_value=None):
        """``events`` events adding up to ``value``, the largest of them ``max_value`` (default:
        ``value``), at ``now_ms``."""
        cdef double top = value if max_value is None else <double>max_value
        if self._start < 0:
            self._start = now_ms
        elif now_ms - self._start >= self._window_ms:
            self._advance(now_ms)
        self._sum += value
        self._count += events
        if top > self._max:
            self._max = top
        self.total += value
        self.count += events

    cdef int _advance(self, long long now_ms) except -1:
        cdef long long keep = self._samples - 1
        if keep > 0:
            if self._done is None:
                self._done = []
            self._done.append((self._start, self._count, self._sum, self._max))
            if len(self._done) > keep:
                del self._done[0]
        self._start = now_ms
        self._count = 0
        self._sum = 0.0
        self._max = -_INF
        return 0

    cdef Live _gather(self, long long now_ms) except *:
        # one pass over the live samples, oldest first (the order Java sums them in)
        cdef Live live
        cdef long long expire_age = self._samples * self._window_ms
        cdef long long start, n
        cdef double total, top
        live.any = False
        live.sum = 0.0
        live.count = 0
        live.has_max = False
        live.max = -_INF
        live.first = 0
        if self._start < 0:
            return live
        if self._done is not None:
            for sample in self._done:
                start, n, total, top = sample
                if now_ms - start < expire_age:
                    _add(&live, start, n, total, top)
        if now_ms - self._start < expire_age:
            _add(&live, self._start, self._count, self._sum, self._max)
        return live

    # ------------------------------------------------------------------ readings
    def avg(self, long long now_ms):
        """Java's ``Avg``: the mean of the values in the live samples (NaN: none)."""
        cdef Live live = self._gather(now_ms)
        return live.sum / live.count if live.count else _NAN

    def max(self, long long now_ms):
        """Java's ``Max``: the largest value in the live samples (NaN: none)."""
        cdef Live live = self._gather(now_ms)
        return live.max if live.has_max else _NAN

    def rate(self, long long now_ms, double unit_ms=1000.0):
        """Java's ``Rate`` (of a ``WindowedSum``): the values' sum per ``unit_ms`` (default per
        second; 1e-6 gives the fraction of time a quantity in ns covers, Java's NANOSECONDS)."""
        cdef Live live = self._gather(now_ms)
        return live.sum / (self._window_size(&live, now_ms) / unit_ms)

    def count_rate(self, long long now_ms):
        """Java's ``Rate(new WindowedCount())``: events per second."""
        cdef Live live = self._gather(now_ms)
        return live.count / (self._window_size(&live, now_ms) / 1000.0)

    cdef double _window_size(self, Live* live, long long now_ms) noexcept:
        # Java's Rate.windowSize: the time the live samples span, at least samples - 1 whole
        # windows, at least 1 ms
        cdef long long window = self._window_ms
        cdef long long elapsed = now_ms - live.first if live.any else 0
        cdef long long missing = self._samples - 1 - _floordiv(elapsed, window)
        if missing > 0:
            elapsed += missing * window
        return <double>(elapsed if elapsed > 1 else 1)


cdef inline void _add(Live* live, long long start, long long n, double total,
                      double top) noexcept:
    if not live.any or start < live.first:
        live.first = start
    live.any = True
    live.sum += total
    live.count += n
    if n and (not live.has_max or top > live.max):
        live.max = top
        live.has_max = True
