"""Rebootstrap (KIP-899, KIP-1102): the producer goes back to ``bootstrap.servers`` when the
brokers it knows stop answering. The bootstrap address is a relay (tests/tools/tcp_relay.py) in
front of a virtual cluster; the cluster is then replaced by another one (other nodes, other
ports) over the same Tansu, and the relay is pointed at it: only a client that bootstraps again
finds it. ``metadata.recovery.strategy=none`` stays with the old nodes and its records time out;
librdkafka runs the same tests as a check of the tests themselves."""

from __future__ import annotations

import threading
import time
from typing import Any, Callable, Dict, Optional, Tuple

import pytest
from confluent_kafka import KafkaException
from confluent_kafka import Producer as ConfluentProducer

from cproducer import KafkaProducer, errors
from cproducer.localbroker import LocalBroker
from tests.integration.readback import assert_delivered, read_back
from tests.tools.tcp_relay import TcpRelay
from tests.tools.virtual_cluster import VirtualCluster

N = 200


class Client:
    """Our producer or librdkafka's, recording each record's outcome (True: acknowledged)."""

    def __init__(self, kind: str, bootstrap: str, settings: Dict[str, Any]) -> None:
        self.kind = kind
        self.outcomes: Dict[int, bool] = {}
        self._lock = threading.Lock()
        if kind == "cproducer":
            self._p: Any = KafkaProducer(
                {"bootstrap.servers": bootstrap, "linger.ms": 2, **settings}
            )
        else:
            self._p = ConfluentProducer(
                {"bootstrap.servers": bootstrap, "linger.ms": 2, **settings}
            )

    def _done(self, i: int, ok: bool) -> None:
        with self._lock:
            self.outcomes[i] = ok

    def send(self, topic: str, i: int) -> bool:
        """False when the record was not even accepted (no metadata within max.block.ms)."""
        value = b"%d" % i
        if self.kind == "cproducer":

            def cb(md: Any, exc: Optional[BaseException], i: int = i) -> None:
                self._done(i, exc is None)

            try:
                self._p.send(topic, value, partition=i % 3, callback=cb)
            except errors.KafkaTimeoutError:
                self._done(i, False)
                return False
            return True

        def ck(err: Any, msg: Any, i: int = i) -> None:
            self._done(i, err is None)

        try:
            self._p.produce(topic, value, partition=i % 3, callback=ck)
        except KafkaException:
            self._done(i, False)
            return False
        self._p.poll(0)
        return True

    def flush(self, timeout: float = 30) -> None:
        if self.kind == "cproducer":
            self._p.flush(timeout)
        else:
            self._p.flush(timeout)

    def close(self) -> None:
        if self.kind == "cproducer":
            self.rebootstraps = self._p._client.metadata_updater.rebootstraps
            self._p.close(0)

    rebootstraps = -1  # cproducer's count (librdkafka's is not visible)


def _settings(kind: str, strategy: str, trigger_ms: int) -> Dict[str, Any]:
    common = {
        "metadata.recovery.strategy": strategy,
        "metadata.recovery.rebootstrap.trigger.ms": trigger_ms,
        "reconnect.backoff.ms": 20,
        "reconnect.backoff.max.ms": 200,
    }
    if kind == "cproducer":
        return {
            **common,
            "delivery.timeout.ms": 6000,
            "request.timeout.ms": 5000,
            "max.block.ms": 3000,
        }
    return {**common, "message.timeout.ms": 6000}


def _run(
    kind: str,
    broker: LocalBroker,
    topics: Tuple[str, str],
    strategy: str,
    replace: Callable[[VirtualCluster], None],
    trigger_ms: int = 300000,
) -> Client:
    """Records 0..N-1 to ``topics[0]`` through cluster A, ``replace(A)``, the relay to cluster
    B, then records N..2N-1 to ``topics[1]`` (for 8 s at most)."""
    first = VirtualCluster(broker.bootstrap_servers, 3).start()
    second: Optional[VirtualCluster] = None
    relay = TcpRelay(("127.0.0.1", first.ports[0])).start()
    client = Client(kind, relay.address, _settings(kind, strategy, trigger_ms))
    try:
        for i in range(N):
            client.send(topics[0], i)
        client.flush()
        assert all(client.outcomes.values()) and len(client.outcomes) == N
        replace(first)
        second = VirtualCluster(broker.bootstrap_servers, 3).start()
        relay.retarget(("127.0.0.1", second.ports[0]))
        deadline = time.monotonic() + 8
        i = N
        while i < 2 * N and time.monotonic() < deadline:
            client.send(topics[1], i)
            i += 1
            time.sleep(0.002)
        client.flush(15)
        assert second is not None
        served = sum(second.produce_requests.values())
        client.served_by_second = served  # type: ignore[attr-defined]
    finally:
        client.close()
        relay.close()
        first.close()
        if second is not None:
            second.close()
    return client


def _check(client: Client, broker: LocalBroker, topics: Tuple[str, str], strategy: str) -> None:
    late = {i: ok for i, ok in client.outcomes.items() if i >= N}
    if strategy == "rebootstrap":
        assert late and all(late.values()), "records after the switch failed"
        assert client.served_by_second > 0  # type: ignore[attr-defined]
        assert client.kind != "cproducer" or client.rebootstraps > 0
    else:
        assert client.served_by_second == 0  # type: ignore[attr-defined]
        assert late and not any(late.values())
        assert client.kind != "cproducer" or client.rebootstraps == 0
    landed = []
    for topic in dict.fromkeys(topics):
        acked = [i for i, ok in client.outcomes.items() if ok and topics[i >= N] == topic]
        records = read_back(broker.bootstrap_servers, topic, 3, len(acked))
        # a topic's records, in send order within each partition; the failed ones must be
        # absent (below), so they are only allowed to be missing here
        mine = sorted(i for i in client.outcomes if topics[i >= N] == topic)
        assert_delivered(
            records,
            [b"%d" % i for i in mine],
            partitions=[i % 3 for i in mine],
            may_be_missing=[b"%d" % i for i in mine if not client.outcomes[i]],
            context=topic,
        )
        landed += records
    expected = sorted(b"%d" % i for i, ok in client.outcomes.items() if ok)
    assert sorted(r.value or b"" for r in landed) == expected


def _fail_every_node(cluster: VirtualCluster) -> None:
    for node in range(cluster.n):
        cluster.fail_node(node)


@pytest.mark.parametrize("strategy", ["rebootstrap", "none"])
@pytest.mark.parametrize("kind", ["cproducer", "librdkafka"])
def test_every_known_broker_gone_then_back_to_bootstrap_servers(
    broker: LocalBroker, new_topic: Callable[..., str], kind: str, strategy: str
) -> None:
    """KIP-899: no known broker can be connected to."""
    topics = (new_topic(3),) * 2
    client = _run(kind, broker, topics, strategy, _fail_every_node)  # type: ignore[arg-type]
    _check(client, broker, topics, strategy)  # type: ignore[arg-type]


@pytest.mark.parametrize("strategy", ["rebootstrap", "none"])
@pytest.mark.parametrize("kind", ["cproducer", "librdkafka"])
def test_no_metadata_for_the_trigger_time_then_back_to_bootstrap_servers(
    broker: LocalBroker, new_topic: Callable[..., str], kind: str, strategy: str
) -> None:
    """KIP-1102: the known brokers take connections and requests but answer no Metadata request
    for ``metadata.recovery.rebootstrap.trigger.ms`` (1 s here), while the producer needs
    metadata for a topic it has not used yet."""
    topics = (new_topic(3), new_topic(3))

    def hang(cluster: VirtualCluster) -> None:
        cluster.stop_answering_metadata()

    client = _run(kind, broker, topics, strategy, hang, trigger_ms=1000)
    _check(client, broker, topics, strategy)
