"""KIP-390: ``compression.<codec>.level`` changes the bytes the producer sends.

The same compressible records go out once at a low and once at a high level of each codec; the
bytes written to the broker's socket are counted (a counting socket factory), and librdkafka reads
every record of both runs back.
"""

from __future__ import annotations

import socket
from typing import Any, Callable, List

import pytest

from cproducer import KafkaProducer
from cproducer.localbroker import LocalBroker
from cproducer.network.network_client import default_socket_factory
from tests.integration.readback import read_back

N = 3000
# compressible, but not trivially: a counter and a few words drawn from a small vocabulary
WORDS = [b"alpha", b"bravo", b"charlie", b"delta", b"echo", b"foxtrot", b"golf", b"hotel"]
VALUES = [
    b"order %07d " % i + b" ".join(WORDS[(i * 7 + j * 3) % len(WORDS)] for j in range(24))
    for i in range(N)
]


class _CountingSocket:
    """A socket whose writes are counted; everything else is the real socket's."""

    def __init__(self, sock: socket.socket, counter: List[int]) -> None:
        self._sock = sock
        self._counter = counter

    def sendmsg(self, buffers: Any, *args: Any) -> int:
        n = self._sock.sendmsg(buffers, *args)
        self._counter[0] += n
        return n

    def send(self, data: Any, *args: Any) -> int:
        n = self._sock.send(data, *args)
        self._counter[0] += n
        return n

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sock, name)


def _counting_factory(counter: List[int]) -> Callable[..., Any]:
    def factory(host: str, port: int, send_buffer: int, recv_buffer: int) -> Any:
        return _CountingSocket(
            default_socket_factory(host, port, send_buffer, recv_buffer), counter
        )

    return factory


def _produce(broker: LocalBroker, topic: str, codec: str, level: int) -> int:
    sent = [0]
    with KafkaProducer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "compression.type": codec,
            f"compression.{codec}.level": level,
            "linger.ms": 50,
            "batch.size": 256 * 1024,
        },
        socket_factory=_counting_factory(sent),
    ) as p:
        p.send(topic, b"warm-up").get(timeout=30)  # metadata and producer id before counting
        sent[0] = 0
        for v in VALUES:
            p.send(topic, v)
        p.flush(60)
    return sent[0]


@pytest.mark.parametrize(
    "codec, low, high",
    [("gzip", 1, 9), ("lz4", 1, 17), ("zstd", 1, 19)],
)
def test_higher_level_sends_fewer_bytes_and_librdkafka_reads_both(
    broker: LocalBroker, new_topic: Callable[..., str], codec: str, low: int, high: int
) -> None:
    t_low, t_high = new_topic(1), new_topic(1)
    bytes_low = _produce(broker, t_low, codec, low)
    bytes_high = _produce(broker, t_high, codec, high)
    assert bytes_high < bytes_low, (codec, bytes_low, bytes_high)
    for topic in (t_low, t_high):
        got = [r.value for r in read_back(broker.bootstrap_servers, topic, 1, N + 1)]
        assert got == [b"warm-up", *VALUES]


def test_level_outside_the_codec_range_is_refused() -> None:
    from cproducer.errors import ConfigError

    for key, bad in (
        ("compression.gzip.level", 0),
        ("compression.gzip.level", 10),
        ("compression.lz4.level", 18),
        ("compression.zstd.level", 23),
    ):
        with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
            KafkaProducer({"bootstrap.servers": "localhost:9", key: bad})
