"""ExponentialBackoff against the facts of Java's ExponentialBackoffTest, and its random source."""

from __future__ import annotations

import random

import pytest

from cproducer.utils.backoff import ExponentialBackoff


def test_java_exponential_backoff_with_jitter() -> None:
    # Java's testExponentialBackoff: (100, 2, 2000, 0.2); attempts 0..4 within the jitter of
    # 100 * 2^attempts, later ones at most the max with its jitter
    backoff = ExponentialBackoff(100, 2, 2000, 0.2, random.Random(11).random)
    seen = set()
    for _ in range(101):
        for attempts in range(11):
            value = backoff.backoff(attempts)
            seen.add((attempts, value))
            if attempts <= 4:
                assert abs(value - 100 * 2**attempts) <= 100 * 2**attempts * 0.2
            else:
                assert value <= 2000 * 1.2
    assert len({v for a, v in seen if a == 0}) > 1  # the jitter moves it


def test_java_exponential_backoff_without_jitter() -> None:
    backoff = ExponentialBackoff(100, 2, 400, 0.0)
    assert [backoff.backoff(a) for a in range(5)] == [100, 200, 400, 400, 400]


def test_the_random_factor_spans_one_minus_to_one_plus_jitter_and_is_capped() -> None:
    low = ExponentialBackoff(100, 2, 10_000, 0.2, lambda: 0.0)
    high = ExponentialBackoff(100, 2, 10_000, 0.2, lambda: 0.999999)
    assert [low.backoff(a) for a in range(3)] == [80, 160, 320]
    assert [high.backoff(a) for a in range(3)] == [119, 239, 479]  # truncated, as Java's (long)
    capped = ExponentialBackoff(100, 2, 1000, 0.2, lambda: 0.999999)
    assert capped.backoff(3) == 959 and capped.backoff(4) == 1000 and capped.backoff(50) == 1000


def test_an_initial_interval_at_or_above_the_max_does_not_grow() -> None:
    # Java: initialInterval = min(max, initial); expMax 0 -> always the initial interval
    assert [ExponentialBackoff(500, 2, 100, 0.2).backoff(a) for a in (0, 3)] == [100, 100]
    assert [ExponentialBackoff(100, 2, 100, 0.2).backoff(a) for a in (0, 3)] == [100, 100]
    assert ExponentialBackoff(0, 2, 0, 0.2).backoff(7) == 0


def test_a_zero_initial_interval_grows_from_one() -> None:
    # Java's expMax uses max(initial, 1): the term stays 0 * 2^n = 0
    assert [ExponentialBackoff(0, 2, 1000, 0.0).backoff(a) for a in (0, 5, 30)] == [0, 0, 0]


def test_seeded_sources_repeat() -> None:
    a = ExponentialBackoff(50, 2, 1000, 0.2, random.Random(3).random)
    b = ExponentialBackoff(50, 2, 1000, 0.2, random.Random(3).random)
    assert [a.backoff(n) for n in range(8)] == [b.backoff(n) for n in range(8)]


@pytest.mark.parametrize(
    "args,message",
    [
        ((-1, 2, 100, 0.2), "initial_interval must be an int >= 0, got -1"),
        ((10, 2, 1.5, 0.2), "max_interval must be an int >= 0, got 1.5"),
        ((10, 1, 100, 0.2), "multiplier must be > 1, got 1"),
        ((10, "2", 100, 0.2), "multiplier must be a number > 1, got '2'"),
        ((10, 2, 100, 1.0), r"jitter must be a number in \[0, 1\), got 1.0"),
    ],
)
def test_bad_arguments_say_which_and_what_was_expected(args: tuple, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ExponentialBackoff(*args)
    with pytest.raises(TypeError, match="random must be None or a zero-argument function"):
        ExponentialBackoff(10, 2, 100, 0.2, random=3)  # type: ignore[arg-type]
