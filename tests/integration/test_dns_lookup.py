"""client.dns.lookup (KIP-602) and IPv6 against a real broker: every address of a name is tried
in order, IPv6 bootstrap addresses work, canonical bootstrap names. Name resolution goes through
the ``host_resolver`` hook where the test needs names the machine's resolver does not have;
connections and the broker are real. librdkafka reads back."""

from __future__ import annotations

import threading
from typing import Any, Callable, Dict, Iterator, List, Tuple

import pytest

from cproducer import KafkaProducer
from cproducer.localbroker import LocalBroker
from cproducer.network.host_resolver import canonical_host_name, default_host_resolver
from cproducer.network.network_client import default_socket_factory
from tests.integration.readback import assert_delivered, read_back


class Recorder:
    """A resolver with extra names and a socket factory that records every attempt as
    (host, address, connected)."""

    def __init__(self, names: Dict[str, List[str]]) -> None:
        self.names = names
        self.attempts: List[Tuple[str, str]] = []
        self._lock = threading.Lock()

    def resolve(self, host: str) -> List[str]:
        if host in self.names:
            return list(self.names[host])
        return default_host_resolver(host)

    def socket_factory(self, host: str, port: int, send: int, recv: int, address: str) -> Any:
        with self._lock:
            self.attempts.append((host, address))
        return default_socket_factory(host, port, send, recv, address)


@pytest.fixture(scope="module")
def ipv6_broker() -> Iterator[LocalBroker]:
    with LocalBroker(host="::1") as b:
        yield b


def _sent(n: int) -> List[bytes]:
    return [b"%d" % i for i in range(n)]


def _produce(bootstrap: str, topic: str, n: int, **hooks: Any) -> None:
    with KafkaProducer(bootstrap_servers=bootstrap, linger_ms=2, **hooks) as p:
        futures = [p.send(topic, b"%d" % i, partition=i % 2) for i in range(n)]
        p.flush(30)
        for f in futures:
            f.get(0)


@pytest.mark.parametrize("dead", ["127.0.0.2", "::1"])
def test_a_dead_address_before_the_live_one(
    broker: LocalBroker, new_topic: Callable[..., str], dead: str
) -> None:
    """The bootstrap name resolves to an address nobody listens on (another loopback address,
    or the IPv6 loopback: the broker listens on 127.0.0.1 only), then to the broker's."""
    topic = new_topic(2)
    rec = Recorder({"kafka.test": [dead, broker.host]})
    _produce(
        f"kafka.test:{broker.port}",
        topic,
        100,
        host_resolver=rec.resolve,
        socket_factory=rec.socket_factory,
    )
    bootstrap_attempts = [a for a in rec.attempts if a[0] == "kafka.test"]
    assert bootstrap_attempts[:2] == [("kafka.test", dead), ("kafka.test", broker.host)]
    assert_delivered(read_back(broker.bootstrap_servers, topic, 2, 100), _sent(100))


def test_a_name_that_first_resolves_to_nothing_is_resolved_again(
    broker: LocalBroker, new_topic: Callable[..., str]
) -> None:
    topic = new_topic(2)
    answers = [[], [broker.host]]

    def resolve(host: str) -> List[str]:
        if host == "late.test":
            return answers.pop(0) if len(answers) > 1 else answers[0]
        return default_host_resolver(host)

    _produce(f"late.test:{broker.port}", topic, 10, host_resolver=resolve)
    assert_delivered(read_back(broker.bootstrap_servers, topic, 2, 10), _sent(10))


def test_an_ipv6_bootstrap_address(ipv6_broker: LocalBroker) -> None:
    """``[::1]:port`` to a broker that listens on IPv6 only (and advertises ``[::1]``)."""
    ipv6_broker.create_topic("v6-topic", 2)
    assert ipv6_broker.bootstrap_servers.startswith("[::1]:")
    _produce(ipv6_broker.bootstrap_servers, "v6-topic", 100)
    assert_delivered(read_back(ipv6_broker.bootstrap_servers, "v6-topic", 2, 100), _sent(100))


@pytest.mark.parametrize("lookup", ["use_all_dns_ips", "resolve_canonical_bootstrap_servers_only"])
def test_canonical_bootstrap_names(
    broker: LocalBroker, new_topic: Callable[..., str], lookup: str
) -> None:
    """An alias of the broker's address: kept as it is by default; replaced by the address's
    canonical name (its reverse lookup) with resolve_canonical_bootstrap_servers_only."""
    topic = new_topic(2)
    canonical = canonical_host_name(broker.host)
    assert canonical != broker.host, "the machine's resolver has no name for 127.0.0.1"
    rec = Recorder({"alias.test": [broker.host]})
    _produce(
        f"alias.test:{broker.port}",
        topic,
        10,
        client_dns_lookup=lookup,
        host_resolver=rec.resolve,
        socket_factory=rec.socket_factory,
    )
    first_host = rec.attempts[0][0]
    assert first_host == (canonical if lookup.startswith("resolve_canonical") else "alias.test")
    assert_delivered(read_back(broker.bootstrap_servers, topic, 2, 10), _sent(10))
