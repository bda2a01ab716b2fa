"""security.protocol=SSL against the real broker with TLS terminated in front of it (Tansu cannot
serve TLS itself): a small TLS proxy from the ssl module, certificates made by the openssl CLI at
test time, the broker advertising the proxy's port. Read back with librdkafka over TLS too."""

from __future__ import annotations

import os
import selectors
import socket
import ssl
import threading
import uuid
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer
from confluent_kafka import TopicPartition as CKTopicPartition

from cproducer import KafkaProducer, errors
from cproducer.localbroker import LocalBroker, free_port


class TlsTerminator:
    """Accepts TLS on ``port`` and pipes the plaintext to the broker, one thread per
    connection (selectors over both sockets; one thread per SSL object, as OpenSSL wants)."""

    def __init__(
        self,
        broker_port: int,
        cert: str,
        key: str,
        client_ca: Optional[str] = None,
        port: Optional[int] = None,
    ) -> None:
        self.port = port or free_port()
        self.broker_port = broker_port
        self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.ctx.load_cert_chain(cert, key)
        if client_ca:
            self.ctx.verify_mode = ssl.CERT_REQUIRED
            self.ctx.load_verify_locations(client_ca)
        self.listener = socket.create_server(("127.0.0.1", self.port))
        self.handshake_failures = 0
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.closed:
            try:
                raw, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(raw,), daemon=True).start()

    def _serve(self, raw: socket.socket) -> None:
        try:
            tls = self.ctx.wrap_socket(raw, server_side=True)
        except (ssl.SSLError, OSError):
            self.handshake_failures += 1
            raw.close()
            return
        plain = socket.create_connection(("127.0.0.1", self.broker_port))
        sel = selectors.DefaultSelector()
        sel.register(tls, selectors.EVENT_READ)
        sel.register(plain, selectors.EVENT_READ)
        try:
            while not self.closed:
                ready = [k.fileobj for k, _ in sel.select(0.5)]
                if tls.pending() and tls not in ready:
                    ready.append(tls)
                for src in ready:
                    dst = plain if src is tls else tls
                    data = src.recv(1 << 16)  # type: ignore[union-attr]
                    if not data:
                        return
                    dst.sendall(data)
        except OSError:
            return
        finally:
            sel.close()
            tls.close()
            plain.close()

    def close(self) -> None:
        self.closed = True
        self.listener.close()


@pytest.fixture(scope="module")
def tls_broker(certs: Dict[str, str]) -> Iterator[Any]:
    """A broker advertising a TLS terminator's port (server cert for 127.0.0.1), plus a second
    terminator that requires client certificates and one with a certificate for another host."""
    front = free_port()
    with LocalBroker(advertised_port=front) as broker:
        term = TlsTerminator(broker.port, certs["broker"], certs["broker.key"], port=front)
        mutual = TlsTerminator(broker.port, certs["broker"], certs["broker.key"], certs["ca"])
        wrong_host = TlsTerminator(broker.port, certs["elsewhere"], certs["elsewhere.key"])
        try:
            yield broker, term, mutual, wrong_host
        finally:
            for t in (term, mutual, wrong_host):
                t.close()


def _read_back_tls(port: int, ca: str, topic: str, partitions: int, expected: int) -> List[Any]:
    consumer = Consumer(
        {
            "bootstrap.servers": f"127.0.0.1:{port}",
            "security.protocol": "ssl",
            "ssl.ca.location": ca,
            "group.id": f"tls-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
            "fetch.wait.max.ms": 50,
        }
    )
    try:
        consumer.assign([CKTopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        out: List[Any] = []
        for _ in range(300):
            for msg in consumer.consume(num_messages=10000, timeout=0.1):
                if not msg.error():
                    out.append(msg)
            if len(out) >= expected:
                break
        return out
    finally:
        consumer.close()


def test_records_travel_over_tls_and_librdkafka_reads_them_over_tls(
    tls_broker: Any, certs: Dict[str, str]
) -> None:
    broker, term, _mutual, _wrong = tls_broker
    topic = f"tls-{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic, 3)
    big = os.urandom(900_000)  # a record over many TLS records: partial writes, large reads
    with KafkaProducer(
        bootstrap_servers=f"127.0.0.1:{term.port}",
        security_protocol="SSL",
        ssl_cafile=certs["ca"],
        compression_type="lz4",
    ) as p:
        futures = [p.send(topic, b"v%d" % i, key=b"k%d" % (i % 97)) for i in range(20_000)]
        futures += [p.send(topic, big, key=b"big-%d" % i) for i in range(5)]
        p.flush(60)
    offsets = [f.get(0) for f in futures]
    assert len(offsets) == 20_005
    got = _read_back_tls(term.port, certs["ca"], topic, 3, 20_005)
    values = sorted(m.value() for m in got if len(m.value()) < 100)
    assert values == sorted(b"v%d" % i for i in range(20_000))
    assert [m.value() for m in got if len(m.value()) > 100] == [big] * 5


def test_an_untrusted_certificate_is_refused(tls_broker: Any, certs: Dict[str, str]) -> None:
    broker, term, _mutual, _wrong = tls_broker
    failures = term.handshake_failures
    p = KafkaProducer(
        bootstrap_servers=f"127.0.0.1:{term.port}",
        security_protocol="SSL",
        ssl_cafile=certs["other-ca"],
        max_block_ms=1500,
    )
    try:
        with pytest.raises(errors.KafkaTimeoutError):
            p.send("never", b"x")
    finally:
        p.close(5)
    assert term.handshake_failures > failures  # the handshake was tried, and failed


def test_the_broker_certificate_must_name_the_host_unless_identification_is_off(
    tls_broker: Any, certs: Dict[str, str]
) -> None:
    broker, _term, _mutual, wrong = tls_broker
    common = {"bootstrap_servers": f"127.0.0.1:{wrong.port}", "ssl_cafile": certs["ca"]}
    p = KafkaProducer(security_protocol="SSL", max_block_ms=1500, **common)
    try:
        with pytest.raises(errors.KafkaTimeoutError):
            p.partitions_for("anything")
    finally:
        p.close(5)
    # chain only: the bootstrap connection works (Metadata comes back through it)
    topic = f"tls-{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic, 2)
    p = KafkaProducer(security_protocol="SSL", ssl_endpoint_identification_algorithm="", **common)
    try:
        assert p.partitions_for(topic) == {0, 1}
    finally:
        p.close(5)


def test_mutual_tls_with_a_pem_keystore(tls_broker: Any, certs: Dict[str, str]) -> None:
    broker, _term, mutual, _wrong = tls_broker
    topic = f"tls-{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic, 1)
    common = {
        "bootstrap_servers": f"127.0.0.1:{mutual.port}",
        "security_protocol": "SSL",
        "ssl_cafile": certs["ca"],
    }
    p = KafkaProducer(max_block_ms=1500, **common)  # no client certificate
    try:
        with pytest.raises(errors.KafkaTimeoutError):
            p.partitions_for(topic)
    finally:
        p.close(5)
    p = KafkaProducer(ssl_keystore_location=certs["client-keystore"], **common)
    try:
        assert p.partitions_for(topic) == {0}
    finally:
        p.close(5)


def test_ssl_configuration_errors_name_the_setting(certs: Dict[str, str], tmp_path: Path) -> None:
    with pytest.raises(errors.ConfigError, match="ssl.truststore.location"):
        KafkaProducer(
            bootstrap_servers="127.0.0.1:1",
            security_protocol="SSL",
            ssl_cafile=str(tmp_path / "missing.pem"),
        )
    with pytest.raises(errors.ConfigError, match="ssl.keystore.location"):
        KafkaProducer(
            bootstrap_servers="127.0.0.1:1",
            security_protocol="SSL",
            ssl_cafile=certs["ca"],
            ssl_keystore_location=certs["ca"],  # a certificate without its key
        )
    with pytest.raises(errors.ConfigError, match="security.protocol"):
        KafkaProducer(bootstrap_servers="127.0.0.1:1", security_protocol="TLS")
    with pytest.raises(errors.ConfigError, match="ssl.truststore.type"):
        KafkaProducer(bootstrap_servers="127.0.0.1:1", ssl_truststore_type="JKS")
