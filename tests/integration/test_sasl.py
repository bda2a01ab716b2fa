"""SASL against the real broker: Tansu behind tests/tools/sasl_front.py, which authenticates
(PLAIN, SCRAM-SHA-256/512, OAUTHBEARER; over TCP or TLS; with KIP-368 session lifetimes) and
relays to Tansu, which advertises the front's port. librdkafka calibrates the front (it
authenticates, re-authenticates and is refused through it) and reads back every record."""

from __future__ import annotations

import base64
import http.server
import json
import logging
import re
import socket
import ssl
import struct
import threading
import time
import urllib.parse
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
from tests.integration.readback import assert_delivered, read_back
from tests.tools.sasl_front import Refused, SaslFront

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
    with sasl_cluster(session_lifetime_ms=2000) as cluster:
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
    sent = [b"v%d" % i for i in range(count)]
    assert_delivered(got, sent, partitions=[f.get(0).partition for f in futures])


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
    assert_delivered(got, [b"c%d" % i for i in range(50)])
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
    logged = f"failed authentication: [Error 58] {type(exc).__name__}: {mechanism} authentication"
    assert logged in caplog.text


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_no_password_or_token_in_logs_or_reprs(
    plain_cluster: Tuple[LocalBroker, SaslFront], caplog: pytest.LogCaptureFixture, mechanism: str
) -> None:
    """Debug logging on, a successful run and a refused one: the secrets appear nowhere."""
    caplog.set_level(logging.DEBUG)
    broker, front = plain_cluster
    topic = f"quiet-{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic, 1)
    tokens: List[str] = []

    def provider() -> str:
        tokens.append(unsecured_jwt("alice", 300))
        return tokens[-1]

    shown = []
    for password in (PASSWORD, "refused-pw-5"):
        secret: Dict[str, Any] = (
            {"sasl_oauth_token_provider": provider}
            if mechanism == "OAUTHBEARER"
            else {"sasl_plain_username": "alice", "sasl_plain_password": password}
        )
        p = KafkaProducer(
            bootstrap_servers=front.bootstrap_servers,
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism=mechanism,
            max_block_ms=3000,
            **secret,
        )
        try:
            p.partitions_for(topic)
        except errors.KafkaError as exc:
            shown.append(str(exc) + repr(exc))
        shown.append(repr(p.config) + repr(p.config.as_dict()) + repr(p._sasl_login))
        p.close()
    text = caplog.text + "".join(shown)
    assert "authentication complete" in caplog.text  # the debug log did run
    for secret_text in [PASSWORD, "refused-pw-5", *tokens]:
        assert secret_text not in text


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
    """The front states 2 s sessions and closes a connection used after its session; both
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

        sent = _produce_for(send, topic, 4.6)
        assert p.flush(20) == 0
    else:
        configs, kwargs = producer_settings(front, "SCRAM-SHA-512", "java")
        with KafkaProducer(configs, **kwargs) as p:
            sent = _produce_for(p.send, topic, 4.6)
            p.flush(20)
    done = front.authentications[before:]
    reauths = [a for a in done if a.reauthentication]
    # 4.6 s of 2 s sessions: the connection re-authenticated at 85-95% of every session
    assert len(reauths) >= 2
    assert front.expired_closes == closes
    by_connection = {a.connection for a in reauths}
    assert by_connection <= {a.connection for a in done if not a.reauthentication}
    got = read_back(front.bootstrap_servers, topic, 1, sent, config=librdkafka_settings(front))
    assert_delivered(got, [b"r%d" % i for i in range(sent)])


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
        time.sleep(2.2)
        sock.sendall(_frame(KMetadataRequest(topics=[]), 4, 4))
        assert sock.recv(4) == b""  # closed
    assert front.expired_closes == closes + 1


def test_a_reauthentication_refused_fails_the_waiting_records(
    reauth_cluster: Tuple[LocalBroker, SaslFront], caplog: pytest.LogCaptureFixture
) -> None:
    """The user is removed on the broker while the producer runs: its next re-authentication is
    refused, records waiting to be sent fail with SaslAuthenticationError, and send() for a topic
    it has not seen raises it once every connection's session is over."""
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
        raised: List[BaseException] = []
        end = time.monotonic() + 5
        while time.monotonic() < end and not any(f.done() and f.failed() for f in futures):
            try:
                futures.append(p.send(topic, b"later"))
            except errors.SaslAuthenticationError as exc:
                # When no record was waiting as the session ended, the refusal reaches send()
                # first: no broker is left, the metadata goes back to the bootstrap servers, and
                # the metadata wait raises it.
                raised.append(exc)
                break
            time.sleep(0.01)
        deadline = time.monotonic() + 10
        while not all(f.done() for f in futures) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert all(f.done() for f in futures)
        failed = [f.exception for f in futures if f.failed()] + raised
        assert failed and isinstance(failed[0], errors.SaslAuthenticationError)
        # Which of the two refusals reaches the first failed record is a race: the re-authentication
        # (when a batch waits on that connection as its session ends) or the new connection's
        # authentication right after it (when the batch came a moment later). Both name the
        # mechanism and the node; the re-authentication is the one refused first, always.
        named = r"SCRAM-SHA-256 (re-)?authentication with node -?\d+ failed"
        assert re.search(named, str(failed[0]))
        logged = [r.getMessage() for r in caplog.records]
        refusals = [m for m in logged if "failed authentication" in m]
        assert refusals and "re-authentication with node" in refusals[0]
        # once no connection is left whose session lasts, the metadata wait fails at once
        deadline = time.monotonic() + 6
        while True:
            try:
                p.send(f"unseen-{uuid.uuid4().hex[:6]}", b"x")
            except errors.SaslAuthenticationError:
                break
            assert time.monotonic() < deadline
            time.sleep(0.05)
    finally:
        start = time.monotonic()
        p.close()
        assert time.monotonic() - start < 5


# ---------------------------------------------------------------- SaslHandshake v0


def test_bare_tokens_with_a_broker_before_sasl_authenticate() -> None:
    """A v0-only SaslHandshake and no SaslAuthenticate (Kafka before 1.0): the tokens go as
    bare frames; librdkafka works the same way through this front; a refusal is a close."""
    with sasl_cluster(handshake_max_version=0, authenticate_max_version=-1) as (broker, front):
        for mechanism in ("PLAIN", "SCRAM-SHA-512"):
            configs, kwargs = producer_settings(front, mechanism, "java")
            produce_and_read_back(broker, front, configs, kwargs, count=100)
        exc, _took = _refused(
            front,
            errors.SaslAuthenticationError,
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism="SCRAM-SHA-256",
            sasl_plain_username="alice",
            sasl_plain_password="not-it",
        )
        assert "the broker closed the connection (SaslHandshake v0" in str(exc)


# ---------------------------------------------------------------- OAUTHBEARER token sources


class TokenEndpoint:
    """An OIDC token endpoint (client credentials grant, HTTP Basic client authentication)
    issuing unsecured JWTs that live ``lifetime_s``."""

    CLIENT, SECRET = "cproducer-app", "app-secret-42"

    def __init__(self, lifetime_s: float) -> None:
        self.lifetime_s = lifetime_s
        self.issued: List[str] = []  # jti of every token
        self.scopes: List[str] = []
        endpoint = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (the http.server API)
                body = self.rfile.read(int(self.headers["Content-Length"])).decode()
                form = dict(urllib.parse.parse_qsl(body))
                basic = base64.b64encode(f"{endpoint.CLIENT}:{endpoint.SECRET}".encode()).decode()
                if self.headers.get("Authorization") != f"Basic {basic}":
                    self._send(401, {"error": "invalid_client"})
                elif form.get("grant_type") != "client_credentials":
                    self._send(400, {"error": "unsupported_grant_type"})
                else:
                    jti = f"t{len(endpoint.issued)}"
                    endpoint.issued.append(jti)
                    endpoint.scopes.append(form.get("scope", ""))
                    token = unsecured_jwt("svc-producer", endpoint.lifetime_s, jti)
                    self._send(200, {"access_token": token, "token_type": "bearer"})

            def _send(self, code: int, body: Dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/oauth2/token"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def oidc_settings(front: SaslFront, endpoint: TokenEndpoint, secret: str) -> Dict[str, Any]:
    """Java 4.x's OIDC client settings."""
    return {
        "bootstrap.servers": front.bootstrap_servers,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "OAUTHBEARER",
        "sasl.login.callback.handler.class": (
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler"
        ),
        "sasl.oauthbearer.token.endpoint.url": endpoint.url,
        "sasl.oauthbearer.client.credentials.client.id": endpoint.CLIENT,
        "sasl.oauthbearer.client.credentials.client.secret": secret,
        "sasl.oauthbearer.scope": "kafka.produce",
        "sasl.jaas.config": (
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;"
        ),
    }


def test_oidc_tokens_are_refreshed_before_they_expire_and_connections_reauthenticate(
    reauth_cluster: Tuple[LocalBroker, SaslFront],
) -> None:
    """Tokens live 3 s; the front's sessions end with the token. The producer fetches a new
    token at 80-85% of each one's life and re-authenticates its open connection with it;
    records keep landing and no connection is closed for an expired session."""
    broker, front = reauth_cluster
    endpoint = TokenEndpoint(lifetime_s=3)
    lifetime, front.session_lifetime_ms = front.session_lifetime_ms, 60_000
    topic = f"oidc-{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic, 1)
    before, closes = len(front.authentications), front.expired_closes
    try:
        with KafkaProducer(oidc_settings(front, endpoint, endpoint.SECRET)) as p:
            sent = _produce_for(p.send, topic, 7.0)
            p.flush(20)
    finally:
        front.session_lifetime_ms = lifetime
        endpoint.close()
    ours = [a for a in front.authentications[before:] if a.principal == "svc-producer"]
    assert len(endpoint.issued) >= 3 and set(endpoint.scopes) == {"kafka.produce"}
    assert {a.token for a in ours} <= set(endpoint.issued) and len({a.token for a in ours}) >= 3
    previous: Dict[int, Optional[str]] = {}
    with_new_token = 0
    for a in ours:
        if a.reauthentication and previous.get(a.connection) != a.token:
            with_new_token += 1
        previous[a.connection] = a.token
    assert with_new_token >= 2
    assert front.expired_closes == closes
    got = read_back(front.bootstrap_servers, topic, 1, sent, config=librdkafka_settings(front))
    assert_delivered(got, [b"r%d" % i for i in range(sent)])


def test_oidc_client_credentials_refused_fail_the_constructor_without_the_secret(
    plain_cluster: Tuple[LocalBroker, SaslFront],
) -> None:
    _broker, front = plain_cluster
    endpoint = TokenEndpoint(lifetime_s=60)
    try:
        with pytest.raises(errors.SaslAuthenticationError) as info:
            KafkaProducer(oidc_settings(front, endpoint, "not-the-secret-77"))
    finally:
        endpoint.close()
    assert f"the token endpoint {endpoint.url} refused client 'cproducer-app'" in str(info.value)
    assert "invalid_client" in str(info.value) and "not-the-secret-77" not in str(info.value)


def msk_iam_token(token: str, now_s: float) -> Tuple[str, float, Dict[str, Any]]:
    """What MSK checks first in an IAM token: a base64url presigned URL for
    kafka-cluster:Connect, SigV4-signed, not expired (the signature itself is AWS's to verify)."""
    url = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode()
    query = dict(urllib.parse.parse_qsl(urllib.parse.urlparse(url).query))
    if query.get("Action") != "kafka-cluster:Connect":
        raise Refused("not a kafka-cluster:Connect token")
    if query.get("X-Amz-Algorithm") != "AWS4-HMAC-SHA256" or len(query["X-Amz-Signature"]) != 64:
        raise Refused("not SigV4-signed")
    signed = time.mktime(time.strptime(query["X-Amz-Date"], "%Y%m%dT%H%M%SZ")) - time.timezone
    exp = signed + int(query["X-Amz-Expires"])
    if exp <= now_s:
        raise Refused("the token expired")
    key_id = query["X-Amz-Credential"].split("/")[0]
    return key_id, exp, {"jti": query["X-Amz-Signature"][:12]}


def test_the_readme_msk_iam_example(
    tls_cluster: Tuple[LocalBroker, SaslFront],
    certs: Dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Any,
) -> None:
    """README's Amazon MSK IAM example as written (aws-msk-iam-sasl-signer-python signs the
    token locally from the environment's credentials), against a front that checks the token
    the way MSK's does before verifying its signature."""
    for name in ("AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDCPRODUCERTEST")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-a-real-secret")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    broker, front = tls_cluster
    topic = f"msk-{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic, 1)
    before = len(front.authentications)
    unsecured, front.token_validator = front.token_validator, msk_iam_token
    try:
        # --- as in the README
        from aws_msk_iam_sasl_signer import MSKAuthTokenProvider

        producer = KafkaProducer(
            bootstrap_servers=front.bootstrap_servers,
            security_protocol="SASL_SSL",
            ssl_cafile=certs["ca"],  # README: the system's CAs; here the test CA
            sasl_mechanism="OAUTHBEARER",
            sasl_oauth_token_provider=lambda: MSKAuthTokenProvider.generate_auth_token("us-east-1"),
        )
        # ---
        with producer:
            producer.send(topic, b"from-msk-iam").get(10)
    finally:
        front.token_validator = unsecured
    assert [a.principal for a in front.authentications[before:]][:1] == ["AKIDCPRODUCERTEST"]
    ca = certs["ca"]
    got = read_back(front.bootstrap_servers, topic, 1, 1, config=librdkafka_settings(front, ca=ca))
    assert [r.value for r in got] == [b"from-msk-iam"]


def test_init_transactions_with_bad_credentials_fails_fast(
    plain_cluster: Tuple[LocalBroker, SaslFront],
) -> None:
    _broker, front = plain_cluster
    p = KafkaProducer(
        bootstrap_servers=front.bootstrap_servers,
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="PLAIN",
        sasl_plain_username="alice",
        sasl_plain_password="wrong-pw-4",
        transactional_id=f"tx-{uuid.uuid4().hex[:6]}",
        max_block_ms=20000,
    )
    start = time.monotonic()
    try:
        with pytest.raises(errors.SaslAuthenticationError, match="Invalid username or password"):
            p.init_transactions()
        assert time.monotonic() - start < 10
    finally:
        p.close()
