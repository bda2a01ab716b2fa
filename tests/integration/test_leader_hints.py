"""KIP-951: a partition's leader moves and the brokers' metadata lags (the virtual cluster keeps
answering Metadata with the old leader). Produce v10+ answers NOT_LEADER_OR_FOLLOWER with the new
leader and its endpoint; a client that takes the hint retries there at once. Up to Produce v9
there is no hint, Metadata keeps naming the old leader, and the moved partition's records time
out. librdkafka, which implements KIP-951, runs the same test as a check of the test itself."""

from __future__ import annotations

import threading
import time
from typing import Any, Callable, Dict, List, Optional

import pytest
from confluent_kafka import Producer as ConfluentProducer

from cproducer import KafkaProducer
from cproducer.localbroker import LocalBroker
from tests.integration.readback import assert_delivered, read_back
from tests.tools.virtual_cluster import VirtualCluster

MOVED = 1  # partition 1 moves from node 1 to node 2
PER_PHASE = 300


class Client:
    """One producer, either ours or librdkafka, sending record i to partition i % 3 and
    recording each outcome (True: acknowledged)."""

    def __init__(self, kind: str, bootstrap: str, topic: str) -> None:
        self.kind = kind
        self.topic = topic
        self.outcomes: Dict[int, bool] = {}
        self._lock = threading.Lock()
        if kind == "cproducer":
            self._p: Any = KafkaProducer(
                bootstrap_servers=bootstrap,
                linger_ms=2,
                request_timeout_ms=2000,
                delivery_timeout_ms=4000,
            )
        else:
            self._p = ConfluentProducer(
                {"bootstrap.servers": bootstrap, "linger.ms": 2, "message.timeout.ms": 4000}
            )

    def _done(self, i: int, ok: bool) -> None:
        with self._lock:
            self.outcomes[i] = ok

    def send(self, i: int) -> None:
        value = b"%d" % i
        if self.kind == "cproducer":

            def cb(md: Any, exc: Optional[BaseException], i: int = i) -> None:
                self._done(i, exc is None)

            self._p.send(self.topic, value, partition=i % 3, callback=cb)
        else:

            def ck(err: Any, msg: Any, i: int = i) -> None:
                self._done(i, err is None)

            self._p.produce(self.topic, value, partition=i % 3, callback=ck)
            self._p.poll(0)

    def flush(self) -> None:
        self._p.flush(30)

    def close(self) -> None:
        if self.kind == "cproducer":
            self._p.close()
        else:
            self._p.flush(30)


def _run(kind: str, broker: LocalBroker, topic: str, produce_version: int) -> Client:
    with VirtualCluster(broker.bootstrap_servers, 3, max_produce_version=produce_version) as vc:
        client = Client(kind, vc.bootstrap_servers, topic)
        try:
            for i in range(PER_PHASE):
                client.send(i)
            client.flush()
            vc.freeze_metadata()
            vc.move_leader(MOVED, 2)
            for i in range(PER_PHASE, 2 * PER_PHASE):
                client.send(i)
                if i % 50 == 0:
                    time.sleep(0.01)  # the stream goes on while the client finds the leader
            client.flush()
        finally:
            client.close()
        assert vc.not_leader_answers > 0  # the client did send to the old leader
    return client


@pytest.mark.parametrize("produce_version", [9, 11])
@pytest.mark.parametrize("kind", ["cproducer", "librdkafka"])
def test_the_new_leader_from_the_produce_answer(
    broker: LocalBroker, new_topic: Callable[..., str], kind: str, produce_version: int
) -> None:
    topic = new_topic(3)
    client = _run(kind, broker, topic, produce_version)
    assert len(client.outcomes) == 2 * PER_PHASE
    failed = sorted(i for i, ok in client.outcomes.items() if not ok)
    if produce_version >= 10:
        assert failed == []
    else:  # no hint and stale metadata: the moved partition's records after the move time out
        assert failed and {i % 3 for i in failed} == {MOVED} and min(failed) >= PER_PHASE
    records = read_back(broker.bootstrap_servers, topic, 3, 600 - len(failed))
    landed: List[bytes] = sorted(r.value or b"" for r in records)
    expected = sorted(b"%d" % i for i, ok in client.outcomes.items() if ok)
    assert landed == expected
    # the moved partition's records, retried at the new leader, kept their order
    assert_delivered(
        records,
        [b"%d" % i for i in range(2 * PER_PHASE)],
        partitions=[i % 3 for i in range(2 * PER_PHASE)],
        may_be_missing=[b"%d" % i for i in failed],
    )
