"""The verdict of benchmarks/kip794_slow_broker.py: `--check` exits 1 on what it finds, so it must
find each departure from KIP-794's ordering and nothing in rows that keep it."""

from __future__ import annotations

import importlib.util
import os
from typing import Any, Dict, List

import pytest

_PATH = os.path.join(os.path.dirname(__file__), "..", "benchmarks", "kip794_slow_broker.py")
_spec = importlib.util.spec_from_file_location("kip794_slow_broker", _PATH)
assert _spec is not None and _spec.loader is not None
kip794 = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(kip794)


def rows(**by_setting: Dict[str, float]) -> List[Dict[str, Any]]:
    """One throughput's rows in the KIP's ordering, with the given settings' figures changed."""
    figures = {
        kip794.LEGACY: {"p99_ms": 9553, "node0_share": 0.68},
        kip794.UNIFORM: {"p99_ms": 3178, "node0_share": 0.46},
        kip794.DEFAULTS: {"p99_ms": 194, "node0_share": 0.31},
        "partitioner.availability.timeout.ms=5": {"p99_ms": 163, "node0_share": 0.27},
    }
    names = {"legacy": kip794.LEGACY, "uniform": kip794.UNIFORM, "defaults": kip794.DEFAULTS}
    for short, changed in by_setting.items():
        figures[names[short]].update(changed)
    return [{"setting": name, **f} for name, f in figures.items()]


def test_rows_in_the_kips_ordering_pass() -> None:
    assert kip794.verdict(rows()) == []


def test_a_legacy_p99_that_is_not_the_worst_fails() -> None:
    problems = kip794.verdict(rows(legacy={"p99_ms": 122, "node0_share": 0.333}))
    assert any("legacy p99 122 ms is not the worst" in p for p in problems), problems
    assert any("KIP-794 defaults p99 194 ms is not below legacy's 122 ms" in p for p in problems)


def test_adaptive_partitioning_that_does_not_spare_the_slow_node_fails() -> None:
    problems = kip794.verdict(rows(defaults={"node0_share": 0.47}))
    assert problems == [
        "node 0 share with adaptive partitioning 47.0% is not below uniform sticky's 46.0%"
    ]


def test_a_setting_without_a_row_fails() -> None:
    assert kip794.verdict(rows()[1:]) == ["a run failed: not every setting has a row"]


def test_a_row_is_the_median_of_its_runs_and_names_its_client() -> None:
    runs = [
        {"mb_per_s": m, "avg_ms": 1.0, "p99_ms": p, "p999_ms": p, "node0_share": s}
        for m, p, s in [(1.0, 300, 0.5), (2.0, 100, 0.3), (1.5, 200, 0.4)]
    ]
    row = kip794.median_row("java", kip794.LEGACY, 4096, runs)
    assert (row["client"], row["mb_per_s"], row["p99_ms"], row["node0_share"]) == (
        "java",
        1.5,
        200,
        0.4,
    )
    assert row["p99_ms_each"] == [300, 100, 200]


def test_an_unknown_client_is_refused_before_any_broker_starts(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exc:
        kip794.main(["--clients", "cproducer,rdkafka"])
    assert exc.value.code == 2
    assert "--clients: unknown rdkafka; use cproducer, java" in capsys.readouterr().err


def test_java_without_its_jars_is_refused_before_any_broker_starts(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    monkeypatch.setenv("CPRODUCER_KAFKA3_LIBS", str(tmp_path))
    with pytest.raises(SystemExit) as exc:
        kip794.main(["--clients", "cproducer,java"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert f"--clients java: no kafka-tools 3.9.1 jar in {tmp_path}" in err
    assert "./dev.sh kafka3-libs" in err
