"""SASL against the real broker: Tansu behind tests/tools/sasl_front.py, which authenticates
(PLAIN, SCRAM-SHA-256/512, OAUTHBEARER; over TCP or TLS; with KIP-368 session lifetimes) and
relays to Tansu, which advertises the front's port. librdkafka calibrates the front (it
authenticates, re-authenticates and is refused through it) and reads back every record."""

from __future__ import annotations

import base64
import json
import logging
import socket
import ssl
import struct
import time
import uuid
from contextlib import contextmanager
from typing import Any, Dict, Iterator, List, Optional, Tuple

import pytest
from confluent_kafka import KafkaError as CKKafkaError
from confluent_kafka import Producer as CKProducer
from kafka.protocol.metadata import MetadataRequest as KMetadataRequest
from kafka.protocol.sasl import SaslAuthenticateRequest as KSaslAuthenticateRequest
from kafka.protocol.sasl import SaslHandshakeRequest as KSaslHandshakeRequest

from cproducer import KafkaProducer, errors
from cproducer.localbroker import LocalBroker, free_port
from tests.integration.readback import read_back
from tests.tools.sasl_front import SaslFront

MECHANISMS = ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"]
PASSWORD = "alice-s3cret-pw"
USERS = {"alice": PASSWORD, "bob": "bob-pw-9"}
JAAS_MODULES = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "OAUTHBEARER": "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule",
}


def unsecured_jwt(sub: str, lifetime_s: float, jti: Optional[str] = None) -> str:
    def part(obj: Dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()

    now = time.time()
    claims = {"sub": sub, "iat": now, "exp": now + lifetime_s, "jti": jti or uuid.uuid4().hex}
    return f"{part({'alg': 'none'})}.{part(claims)}."


class UnsecuredJwtProvider:
    """kafka-python's token provider shape (an object with token())."""

    def __init__(self, lifetime_s: float = 300) -> None:
        self.lifetime_s = lifetime_s

    def token(self) -> str:
        return unsecured_jwt("alice", self.lifetime_s)


@contextmanager
def sasl_cluster(**front_kwargs: Any) -> Iterator[Tuple[LocalBroker, SaslFront]]:
    """A Tansu broker advertising the port of a SaslFront in front of it."""
    port = free_port()
    with LocalBroker(advertised_port=port) as broker:
        with SaslFront(broker.bootstrap_servers, users=USERS, port=port, **front_kwargs) as front:
            yield broker, front


@pytest.fixture(scope="module")
def plain_cluster() -> Iterator[Tuple[LocalBroker, SaslFront]]:
    with sasl_cluster() as cluster:
        yield cluster


@pytest.fixture(scope="module")
def tls_cluster(certs: Dict[str, str]) -> Iterator[Tuple[LocalBroker, SaslFront]]:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(certs["broker"], certs["broker.key"])
    with sasl_cluster(ssl_context=ctx) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def reauth_cluster() -> Iterator[Tuple[LocalBroker, SaslFront]]:
    with sasl_cluster(session_lifetime_ms=1500) as cluster:
        yield cluster


def librdkafka_settings(
    front: SaslFront, mechanism: str = "PLAIN", ca: Optional[str] = None
) -> Dict[str, Any]:
    out: Dict[str, Any] = {
        "bootstrap.servers": front.bootstrap_servers,
        "security.protocol": "SASL_SSL" if ca else "SASL_PLAINTEXT",
        "sasl.mechanisms": mechanism,
    }
    if ca:
        out["ssl.ca.location"] = ca
    if mechanism == "OAUTHBEARER":
        out["sasl.oauthbearer.config"] = "principal=alice lifeSeconds=300"
        out["enable.sasl.oauthbearer.unsecure.jwt"] = True
    else:
        out.update({"sasl.username": "alice", "sasl.password": PASSWORD})
    return out


def producer_settings(
    front: SaslFront, mechanism: str, spelling: str, ca: Optional[str] = None
) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    """(Java-named dict, keyword arguments) for KafkaProducer in one of the three spellings."""
    protocol = "SASL_SSL" if ca else "SASL_PLAINTEXT"
    if spelling == "java":
        if mechanism == "OAUTHBEARER":
            options = 'unsecuredLoginStringClaim_sub="alice"'
        else:
            options = f'username="alice" password="{PASSWORD}"'
        configs = {
            "bootstrap.servers": front.bootstrap_servers,
            "security.protocol": protocol,
            "sasl.mechanism": mechanism,
            "sasl.jaas.config": f"{JAAS_MODULES[mechanism]} required {options};",
        }
        if ca:
            configs["ssl.truststore.location"] = ca
        return configs, {}
    if spelling == "librdkafka":
        return {
            "bootstrap.servers": front.bootstrap_servers,
            "security.protocol": protocol,
            "sasl.mechanisms": mechanism,
            "sasl.username": "alice",
            "sasl.password": PASSWORD,
        }, {}
    kwargs: Dict[str, Any] = {
        "bootstrap_servers": front.bootstrap_servers,
        "security_protocol": protocol,
        "sasl_mechanism": mechanism,
    }
    if mechanism == "OAUTHBEARER":
        kwargs["sasl_oauth_token_provider"] = UnsecuredJwtProvider()
    else:
        kwargs.update(sasl_plain_username="alice", sasl_plain_password=PASSWORD)
    if ca:
        kwargs["ssl_cafile"] = ca
    return {}, kwargs


def produce_and_read_back(
    broker: LocalBroker,
    front: SaslFront,
    configs: Dict[str, Any],
    kwargs: Dict[str, Any],
    ca: Optional[str] = None,
    count: int = 300,
) -> None:
    topic = f"sasl-{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic, 3)
    with KafkaProducer(configs or None, linger_ms=2, **kwargs) as p:
        futures = [p.send(topic, b"v%d" % i, key=b"k%d" % (i % 17)) for i in range(count)]
        p.flush(30)
    assert all(f.get(0).offset >= 0 for f in futures)
    got = read_back(
        front.bootstrap_servers, topic, 3, count, config=librdkafka_settings(front, ca=ca)
    )
    assert sorted(r.value for r in got) == sorted(b"v%d" % i for i in range(count))  # each once


# ---------------------------------------------------------------- calibration: librdkafka


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_librdkafka_authenticates_through_the_front_and_reads_back(
    plain_cluster: Tuple[LocalBroker, SaslFront], mechanism: str
) -> None:
    broker, front = plain_cluster
    topic = f"calib-{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic, 1)
    before = len(front.authentications)
    settings = librdkafka_settings(front, mechanism)
    p = CKProducer(settings)
    for i in range(50):
        p.produce(topic, b"c%d" % i)
    assert p.flush(20) == 0
    got = read_back(front.bootstrap_servers, topic, 1, 50, config=settings)
    assert sorted(r.value for r in got) == sorted(b"c%d" % i for i in range(50))
    done = front.authentications[before:]
    assert {(a.mechanism, a.principal) for a in done} == {(mechanism, "alice")}


def test_librdkafka_is_refused_a_wrong_password(
    plain_cluster: Tuple[LocalBroker, SaslFront],
) -> None:
    _broker, front = plain_cluster
    seen: List[Any] = []
    settings = {**librdkafka_settings(front, "SCRAM-SHA-256"), "sasl.password": "wrong"}
    p = CKProducer({**settings, "error_cb": seen.append})
    deadline = time.monotonic() + 10
    while not seen and time.monotonic() < deadline:
        p.poll(0.1)
    assert seen and seen[0].code() == CKKafkaError._AUTHENTICATION
    assert "invalid credentials with SASL mechanism SCRAM-SHA-256" in seen[0].str()


# ---------------------------------------------------------------- cproducer


@pytest.mark.parametrize(
    "mechanism, spelling",
    # librdkafka's spelling is for passwords (its OAUTHBEARER settings are its own)
    [(m, s) for m in MECHANISMS for s in ("java", "kafka-python", "librdkafka")][:-1],
)
def test_records_land_over_sasl_plaintext(
    plain_cluster: Tuple[LocalBroker, SaslFront], mechanism: str, spelling: str
) -> None:
    broker, front = plain_cluster
    before = len(front.authentications)
    configs, kwargs = producer_settings(front, mechanism, spelling)
    produce_and_read_back(broker, front, configs, kwargs)
    ours = [a for a in front.authentications[before:] if a.mechanism == mechanism]
    assert ours and all(a.principal == "alice" for a in ours)


@pytest.mark.parametrize("spelling", ["java", "kafka-python"])
@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_records_land_over_sasl_ssl(
    tls_cluster: Tuple[LocalBroker, SaslFront], certs: Dict[str, str], mechanism: str, spelling: str
) -> None:
    broker, front = tls_cluster
    before = len(front.authentications)
    configs, kwargs = producer_settings(front, mechanism, spelling, ca=certs["ca"])
    produce_and_read_back(broker, front, configs, kwargs, ca=certs["ca"])
    assert any(a.mechanism == mechanism for a in front.authentications[before:])


# ---------------------------------------------------------------- refusals


def _refused(front: SaslFront, expected: Any, **kwargs: Any) -> Tuple[BaseException, float]:
    """send() on a fresh producer: the error it raises and how long it took; close() is prompt."""
    p = KafkaProducer(bootstrap_servers=front.bootstrap_servers, max_block_ms=20000, **kwargs)
    start = time.monotonic()
    try:
        with pytest.raises(expected) as info:
            p.send("never-created", b"x")
        took = time.monotonic() - start
    finally:
        closing = time.monotonic()
        p.close()
        assert time.monotonic() - closing < 5
    return info.value, took


@pytest.mark.parametrize(
    "mechanism, user, password, says",
    [
        ("PLAIN", "alice", "wrong-pw-1", "Invalid username or password"),
        ("SCRAM-SHA-256", "alice", "wrong-pw-2", "invalid credentials"),
        ("SCRAM-SHA-512", "mallory", "wrong-pw-3", "Unknown user"),
    ],
)
def test_bad_credentials_fail_send_fast_with_the_brokers_reason(
    plain_cluster: Tuple[LocalBroker, SaslFront],
    caplog: pytest.LogCaptureFixture,
    mechanism: str,
    user: str,
    password: str,
    says: str,
) -> None:
    caplog.set_level(logging.DEBUG)
    _broker, front = plain_cluster
    exc, took = _refused(
        front,
        errors.SaslAuthenticationError,
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism=mechanism,
        sasl_plain_username=user,
        sasl_plain_password=password,
    )
    assert took < 10  # not max.block.ms (20 s): the first refusal ends the wait
    assert f"{mechanism} authentication with node -1 failed" in str(exc) and says in str(exc)
    assert password not in str(exc) and password not in caplog.text
    assert f"failed authentication: [Error 58] SaslAuthenticationError: {mechanism}" in caplog.text


def test_an_expired_token_is_refused(plain_cluster: Tuple[LocalBroker, SaslFront]) -> None:
    _broker, front = plain_cluster
    token = unsecured_jwt("alice", -5)
    exc, _took = _refused(
        front,
        errors.SaslAuthenticationError,
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="OAUTHBEARER",
        sasl_oauth_token_provider=lambda: token,
    )
    assert "OAUTHBEARER authentication with node -1 failed" in str(exc)
    assert "expired" in str(exc) and '"status": "invalid_token"' in str(exc)
    assert token not in str(exc)


def test_a_mechanism_the_broker_lacks_names_the_enabled_ones(
    plain_cluster: Tuple[LocalBroker, SaslFront],
) -> None:
    broker, _front = plain_cluster
    with SaslFront(broker.bootstrap_servers, USERS, mechanisms=["SCRAM-SHA-512"]) as scram_only:
        exc, _took = _refused(
            scram_only,
            errors.UnsupportedSaslMechanismError,
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism="PLAIN",
            sasl_plain_username="alice",
            sasl_plain_password=PASSWORD,
        )
    assert "does not enable SASL mechanism PLAIN; its enabled mechanisms: SCRAM-SHA-512" in str(exc)
    assert isinstance(exc, errors.AuthenticationError)


def test_a_sasl_client_at_a_plaintext_listener_fails_fast(
    plain_cluster: Tuple[LocalBroker, SaslFront],
) -> None:
    broker, _front = plain_cluster
    p = KafkaProducer(
        bootstrap_servers=broker.bootstrap_servers,  # Tansu itself: no SASL there
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="PLAIN",
        sasl_plain_username="alice",
        sasl_plain_password=PASSWORD,
        max_block_ms=20000,
    )
    start = time.monotonic()
    try:
        with pytest.raises(errors.AuthenticationError):
            p.send("never-created", b"x")
        assert time.monotonic() - start < 10
    finally:
        p.close()


# ---------------------------------------------------------------- KIP-368 re-authentication


def _produce_for(send: Any, topic: str, seconds: float) -> int:
    """``send(topic, value)`` a record per ~5 ms for ``seconds``; the number sent."""
    n = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        send(topic, b"r%d" % n)
        n += 1
        time.sleep(0.005)
    return n


@pytest.mark.parametrize("client", ["librdkafka", "cproducer"])
def test_connections_reauthenticate_before_the_session_ends(
    reauth_cluster: Tuple[LocalBroker, SaslFront], client: str
) -> None:
    """The front states 1.5 s sessions and closes a connection used after its session; both
    clients re-authenticate on their open connections and every record lands once."""
    broker, front = reauth_cluster
    topic = f"reauth-{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic, 1)
    before, closes = len(front.authentications), front.expired_closes
    if client == "librdkafka":
        p: Any = CKProducer(librdkafka_settings(front, "SCRAM-SHA-512"))

        def send(t: str, v: bytes) -> None:
            p.produce(t, v)
            p.poll(0)

        sent = _produce_for(send, topic, 4.5)
        assert p.flush(20) == 0
    else:
        configs, kwargs = producer_settings(front, "SCRAM-SHA-512", "java")
        with KafkaProducer(configs, **kwargs) as p:
            sent = _produce_for(p.send, topic, 4.5)
            p.flush(20)
    done = front.authentications[before:]
    reauths = [a for a in done if a.reauthentication]
    # 4.5 s of 1.5 s sessions: each connection re-authenticated at 85-95% of every session
    assert len(reauths) >= 3
    assert front.expired_closes == closes
    by_connection = {a.connection for a in reauths}
    assert by_connection <= {a.connection for a in done if not a.reauthentication}
    got = read_back(front.bootstrap_servers, topic, 1, sent, config=librdkafka_settings(front))
    assert sorted(r.value for r in got) == sorted(b"r%d" % i for i in range(sent))


def _frame(request: Any, version: int, cid: int) -> bytes:
    request.API_VERSION = version
    request.with_header(correlation_id=cid, client_id="raw")
    return bytes(request.encode(header=True, framed=True))


def _answer(sock: socket.socket) -> bytes:
    size = struct.unpack(">i", sock.recv(4, socket.MSG_WAITALL))[0]
    return sock.recv(size, socket.MSG_WAITALL)


def test_the_front_closes_a_connection_used_after_its_session(
    reauth_cluster: Tuple[LocalBroker, SaslFront],
) -> None:
    """The front's side of KIP-368, shown with a client that never re-authenticates."""
    _broker, front = reauth_cluster
    closes = front.expired_closes
    with socket.create_connection(("127.0.0.1", front.port), timeout=5) as sock:
        sock.sendall(_frame(KSaslHandshakeRequest(mechanism="PLAIN"), 1, 1))
        _answer(sock)
        sock.sendall(_frame(KSaslAuthenticateRequest(auth_bytes=b"\0bob\0bob-pw-9"), 1, 2))
        _answer(sock)
        sock.sendall(_frame(KMetadataRequest(topics=[]), 4, 3))
        assert _answer(sock)[:4] == struct.pack(">i", 3)  # within the session: relayed
        time.sleep(1.7)
        sock.sendall(_frame(KMetadataRequest(topics=[]), 4, 4))
        assert sock.recv(4) == b""  # closed
    assert front.expired_closes == closes + 1


def test_a_reauthentication_refused_fails_the_waiting_records(
    reauth_cluster: Tuple[LocalBroker, SaslFront],
) -> None:
    """The user is removed on the broker while the producer runs: its next re-authentication is
    refused, records waiting to be sent fail with SaslAuthenticationError, and send() for a topic
    it has not seen raises it."""
    broker, front = reauth_cluster
    topic = f"revoked-{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic, 1)
    front.users["carol"] = "carol-pw-7"
    p = KafkaProducer(
        bootstrap_servers=front.bootstrap_servers,
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="SCRAM-SHA-256",
        sasl_plain_username="carol",
        sasl_plain_password="carol-pw-7",
        max_block_ms=20000,
    )
    try:
        assert p.send(topic, b"first").get(10).offset == 0
        del front.users["carol"]
        futures = []
        end = time.monotonic() + 5
        while time.monotonic() < end and not any(f.done() and f.failed() for f in futures):
            futures.append(p.send(topic, b"later"))
            time.sleep(0.01)
        failed = [f.exception for f in futures if f.done() and f.failed()]
        assert failed and isinstance(failed[0], errors.SaslAuthenticationError)
        assert "SCRAM-SHA-256 re-authentication with node" in str(failed[0])
        with pytest.raises(errors.SaslAuthenticationError):
            p.send(f"unseen-{uuid.uuid4().hex[:6]}", b"x")
    finally:
        start = time.monotonic()
        p.close()
        assert time.monotonic() - start < 5
