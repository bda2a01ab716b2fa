"""ExponentialBackoff: Java's ``org.apache.kafka.common.utils.ExponentialBackoff`` (KIP-580).

``backoff(attempts)`` is ``initial * multiplier ** attempts``, the exponent capped where the term
reaches ``max_interval``, times a random factor in ``[1 - jitter, 1 + jitter)``, truncated to an
int and capped at ``max_interval``. With ``initial >= max`` it is always ``min(initial, max)``.
One object serves many callers (the attempts live with them): the reconnect backoff and the
connection setup timeout of every node, the metadata refresh, the retry of a batch.
"""

from __future__ import annotations

import math
import random as _random
from typing import Callable, Optional


class ExponentialBackoff:
    __slots__ = ("initial_interval", "multiplier", "max_interval", "jitter", "_exp_max", "_random")

    def __init__(
        self,
        initial_interval: int,
        multiplier: float,
        max_interval: int,
        jitter: float,
        random: Optional[Callable[[], float]] = None,
    ) -> None:
        """``random``: a zero-argument function returning a float in [0, 1), as
        ``random.Random(seed).random`` (default: a generator of this object's own)."""
        for name, value in (("initial_interval", initial_interval), ("max_interval", max_interval)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"{name} must be an int >= 0, got {value!r}")
        if isinstance(multiplier, bool) or not isinstance(multiplier, (int, float)):
            raise ValueError(f"multiplier must be a number > 1, got {multiplier!r}")
        if not multiplier > 1:
            raise ValueError(f"multiplier must be > 1, got {multiplier!r}")
        if isinstance(jitter, bool) or not isinstance(jitter, (int, float)) or not 0 <= jitter < 1:
            raise ValueError(f"jitter must be a number in [0, 1), got {jitter!r}")
        if random is not None and not callable(random):
            raise TypeError(
                "random must be None or a zero-argument function returning a float in [0, 1), "
                f"got {type(random).__name__}"
            )
        self.initial_interval = min(max_interval, initial_interval)
        self.multiplier = multiplier
        self.max_interval = max_interval
        self.jitter = float(jitter)
        # the exponent at which the term reaches max_interval (0: no growth at all)
        self._exp_max = (
            math.log(max_interval / max(initial_interval, 1)) / math.log(multiplier)
            if max_interval > initial_interval
            else 0.0
        )
        self._random = random if random is not None else _random.Random().random

    def backoff(self, attempts: int) -> int:
        """The interval before attempt number ``attempts + 1`` (``attempts`` failed so far)."""
        if self._exp_max == 0:
            return self.initial_interval
        term = self.initial_interval * self.multiplier ** min(attempts, self._exp_max)
        jitter = self.jitter
        if jitter > 0:
            term *= 1 - jitter + 2 * jitter * self._random()
        value = int(term)
        return value if value < self.max_interval else self.max_interval

    def __repr__(self) -> str:
        return (
            f"ExponentialBackoff(initial_interval={self.initial_interval}, "
            f"multiplier={self.multiplier}, max_interval={self.max_interval}, "
            f"jitter={self.jitter})"
        )
