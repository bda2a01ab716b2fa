"""A broker that cannot be reached is visible at WARNING at once, with its address and the OS
error, and not once per reconnect attempt."""

from __future__ import annotations

import logging
import socket
import threading
import time
from typing import List

import pytest

from cproducer import KafkaProducer
from cproducer.errors import KafkaTimeoutError
from cproducer.network.connection_failures import SUPPRESS_MS, ConnectionFailures

LOGGER = "cproducer.network.network_client"


def _refused_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _warnings(caplog: pytest.LogCaptureFixture) -> List[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


def test_a_refused_connection_warns_within_a_second_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    start = time.monotonic()
    p = KafkaProducer(
        bootstrap_servers=f"127.0.0.1:{_refused_port()}",
        reconnect_backoff_ms=20,
        reconnect_backoff_max_ms=50,
        max_block_ms=1500,
    )
    try:
        sender = threading.Thread(target=lambda: _send_quietly(p), daemon=True)
        sender.start()
        while not _warnings(caplog) and time.monotonic() - start < 1.0:
            time.sleep(0.01)
        warned = _warnings(caplog)
        assert warned, "no WARNING within a second of a refused connection"
        assert "could not be established" in warned[0]
        assert "127.0.0.1:" in warned[0] and "Connection refused" in warned[0]
        sender.join(5)
        # some 30 attempts in 1.5 s (reconnect.backoff.max.ms=50): the same error is said once
        assert len(_warnings(caplog)) == 1
    finally:
        p.close(timeout=5)


def _send_quietly(p: KafkaProducer) -> None:
    try:
        p.send("events", b"x")
    except Exception:
        pass


def test_the_same_error_is_repeated_after_the_interval_with_a_count(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger=LOGGER)
    f = ConnectionFailures()
    for t in range(0, SUPPRESS_MS, 1000):  # 30 failures in the interval: 1 line
        f.failed(-1, "h", 1, "Connection refused", t)
    f.failed(-1, "h", 1, "Connection refused", SUPPRESS_MS)
    f.failed(-1, "h", 1, "No route to host", SUPPRESS_MS + 1)  # a new error: at once
    f.failed(-2, "g", 2, "Connection refused", SUPPRESS_MS + 2)  # another broker: at once
    lines = _warnings(caplog)
    assert len(lines) == 4
    assert "(29 identical failure(s) since not shown)" in lines[1]
    assert "No route to host" in lines[2] and "node -2 (g:2)" in lines[3]
    assert f.errors() == {"h:1": "No route to host", "g:2": "Connection refused"}
    f.ready(-1, "h", 1)
    assert f.errors() == {"g:2": "Connection refused"}
    assert caplog.records[-1].levelno == logging.INFO  # back: said, not warned
    f.failed(-1, "h", 1, "No route to host", SUPPRESS_MS + 3)  # after a success: at once
    assert len(_warnings(caplog)) == 5


def test_an_unresolvable_name_warns_with_the_resolver_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    p = KafkaProducer(bootstrap_servers="no-such-host.invalid:9092", max_block_ms=500)
    try:
        deadline = time.monotonic() + 2
        while not _warnings(caplog) and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        p.close(timeout=5)
    warned = _warnings(caplog)
    assert warned and "no-such-host.invalid:9092" in warned[0]


def test_the_metadata_timeout_names_each_bootstrap_address_error() -> None:
    port = _refused_port()
    p = KafkaProducer(
        bootstrap_servers=f"127.0.0.1:{port},no-such-host.invalid:9092", max_block_ms=1000
    )
    try:
        for call in (lambda: p.send("events", b"x"), lambda: p.partitions_for("events")):
            with pytest.raises(KafkaTimeoutError) as info:
                call()
            message = str(info.value)
            assert message.startswith("topic 'events' not present in metadata after 1000 ms")
            assert f"; cannot connect to 127.0.0.1:{port}: Connection refused" in message
            assert "; cannot connect to no-such-host.invalid:9092: " in message
    finally:
        p.close(timeout=5)
