"""cproducer-perf-test: embedded broker, Java's output lines, both APIs, metrics, transactions,
one-line errors."""

from __future__ import annotations

import re
import socket
import subprocess
import sys

import pytest

from tests.integration.readback import read_back

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


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "cproducer.perf", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_bad_input_is_one_line_and_a_nonzero_exit() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        refused = f"127.0.0.1:{s.getsockname()[1]}"
    cases = [
        (["--producer-props", "lingr.ms=5"], 1, "did you mean 'linger.ms'?"),
        (["--bootstrap-server", refused], 1, f"cannot reach {refused}: Connection refused"),
        (["--producer-props", "acks=2"], 1, "acks: expected one of"),
        (["--transaction-duration-ms", "0"], 2, "--transaction-duration-ms should be greater"),
    ]
    for args, code, message in cases:
        done = _cli("--num-records", "10", *args)
        assert done.returncode == code, (args, done.stderr)
        assert "Traceback" not in done.stderr, done.stderr
        last = done.stderr.strip().splitlines()[-1]
        assert last.startswith("cproducer-perf-test: error: ") and message in last, done.stderr


def test_transactional_run_commits_what_it_sent(broker, new_topic) -> None:
    """Java's flags: --transaction-duration-ms turns transactions on (an id is made up); every
    record is in a committed transaction, so a read_committed reader (librdkafka) sees them all."""
    topic = new_topic(2)
    done = _cli(
        "--topic",
        topic,
        "--num-records",
        "3000",
        "--record-size",
        "20",
        "--throughput",
        "10000",
        "--transaction-duration-ms",
        "100",
        "--bootstrap-server",
        broker.bootstrap_servers,
    )
    assert done.returncode == 0, done.stderr
    assert FINAL.search(done.stdout), done.stdout
    records = read_back(
        broker.bootstrap_servers,
        topic,
        2,
        3000,
        config={"isolation.level": "read_committed"},
    )
    assert len(records) == 3000
