"""cproducer-perf-test: embedded broker, Java's output lines, both APIs, metrics."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

FINAL = re.compile(
    r"^(\d+) records sent, [\d.]+ records/sec \([\d.]+ MB/sec\), [\d.]+ ms avg latency, "
    r"[\d.]+ ms max latency, \d+ ms 50th, \d+ ms 95th, \d+ ms 99th, \d+ ms 99\.9th\.$",
    re.M,
)


@pytest.mark.parametrize("api", ["send", "send_many"])
def test_perf_cli_with_embedded_broker(api: str) -> None:
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "cproducer.perf",
            "--topic",
            "perf",
            "--num-records",
            "20000",
            "--record-size",
            "100",
            "--throughput",
            "-1",
            "--api",
            api,
            "--print-metrics",
            "--producer-props",
            "linger.ms=2",
            "compression.type=lz4",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    assert "started an embedded local broker" in out
    m = FINAL.search(out)
    assert m, out
    assert int(m.group(1)) == 20000
    # Java's --print-metrics lines: group:name:{tags} : value
    node_bytes = r"^producer-node-metrics:outgoing-byte-total:\{client-id=[^,]+, node-id=node-\d+\}"
    assert re.search(node_bytes + r"\s+: [1-9][\d.]+$", out, re.M), out
    sent = re.search(
        r"^producer-metrics:record-send-total:\{client-id=[^}]+\}\s+: ([\d.]+)$", out, re.M
    )
    assert sent and float(sent.group(1)) == 20000, out


def test_throttled_run_takes_its_time(broker) -> None:
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "cproducer.perf",
            "--topic",
            "perf2",
            "--num-records",
            "300",
            "--record-size",
            "10",
            "--throughput",
            "1000",
            "--bootstrap-server",
            broker.bootstrap_servers,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    m = re.search(r"^300 records sent, ([\d.]+) records/sec", out, re.M)
    assert m and float(m.group(1)) < 1300, out
