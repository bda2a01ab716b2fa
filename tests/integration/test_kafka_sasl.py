"""SASL against Apache Kafka itself (not the test front of test_sasl.py): one KRaft node with a
SASL_PLAINTEXT and a SASL_SSL listener (TLS from the test CA, the broker's certificate and key in
a PEM keystore), each enabling PLAIN (users in the listener's JAAS line), SCRAM-SHA-256/512
(credentials made by Kafka's own kafka-configs) and OAUTHBEARER (the broker's default validator
of unsecured JWTs).

For every mechanism over both transports the producer's records are read back exactly by
librdkafka and by Java's KafkaConsumer, each authenticating itself with the same mechanism. A
wrong password (for OAUTHBEARER a token the broker rejects) fails send() at once with the
broker's own message, which librdkafka reports too, logs it at ERROR, and shows the secret
nowhere. KIP-368: the broker's session lifetime is honoured (the producer re-authenticates its
open connections) and a re-authentication the broker refuses fails the records."""

from __future__ import annotations

import base64
import json
import logging
import re
import time
import traceback
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

import pytest
from confluent_kafka import KafkaError as CKKafkaError
from confluent_kafka import Producer as CKProducer
from confluent_kafka.admin import AdminClient

from cproducer import KafkaProducer, errors
from tests.integration.readback import (
    ConsumedRecord,
    assert_delivered,
    header_of,
    read_back,
    read_back_java,
)
from tests.tools.apache_kafka import ApacheKafka

pytestmark = pytest.mark.kafka

MECHANISMS = ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"]
PROTOCOLS = ["SASL_PLAINTEXT", "SASL_SSL"]
PASSWORD = "alice-Kafka-s3cret"
CAROL_PASSWORD = "carol-Kafka-s3cret"
# SCRAM names are escaped (',' and '=') and Kafka applies no SASLprep to names or passwords
ODD_USER, ODD_PASSWORD = "al=ice,x", "pä$$-wörd ünïcode"
MODULES = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "OAUTHBEARER": "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule",
}
CONFIG_COMMAND = "org.apache.kafka.tools.ConfigCommand"
# KIP-368 on one listener and mechanism only: SCRAM-SHA-512 sessions over SASL_PLAINTEXT last 2 s
SESSION_MS = 2000


def _jwt_part(obj: Dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()


def jwt(sub: str, lifetime_s: float, alg: str = "none") -> str:
    """An unsecured JWT (``alg: none``, empty signature) as Kafka's unsecured validator takes
    it; with another ``alg`` a signed-looking token that validator rejects."""
    now = time.time()
    claims = {"sub": sub, "iat": now, "exp": now + lifetime_s}
    signature = "" if alg == "none" else _jwt_part({"not": "a signature"})
    return f"{_jwt_part({'alg': alg})}.{_jwt_part(claims)}.{signature}"


def _scram(broker: ApacheKafka, user: str, mechanism: str, password: str) -> str:
    # one AlterUserScramCredentials request may not name a user twice: one run per mechanism
    return broker.run_tool(CONFIG_COMMAND, "--bootstrap-server", broker.bootstrap_servers,
                           "--alter", "--add-config", f"{mechanism}=[password={password}]",
                           "--entity-type", "users", "--entity-name", user)  # fmt: skip


def _wait_for_scram(broker: ApacheKafka, expected: Dict[str, int], timeout_s: float = 30) -> None:
    """Until the broker describes ``expected`` (user -> number of SCRAM mechanisms): the
    controller has committed them when kafka-configs returns, the broker applies them soon
    after."""
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    deadline = time.monotonic() + timeout_s
    while True:
        seen: Dict[str, int] = {}
        futures = admin.describe_user_scram_credentials(list(expected))
        assert isinstance(futures, dict)
        for user, future in futures.items():
            try:
                seen[user] = len(future.result(10).scram_credential_infos)
            except Exception:  # not there yet: RESOURCE_NOT_FOUND
                seen[user] = 0
        if seen == expected:
            return
        assert time.monotonic() < deadline, f"SCRAM credentials not applied: {seen}"
        time.sleep(0.1)


@pytest.fixture(scope="module")
def broker(
    certs: Dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ApacheKafka]:
    """Named ``broker`` so that a failing test prints the end of the broker's log (conftest)."""
    keystore = tmp_path_factory.mktemp("sasl-kafka") / "broker-keystore.pem"
    # Kafka's PEM keystore: the certificate chain then the key; an unencrypted key needs no
    # ssl.key.password (and must not have one)
    keystore.write_text(Path(certs["broker"]).read_text() + Path(certs["broker.key"]).read_text())
    props = {"ssl.keystore.type": "PEM", "ssl.keystore.location": str(keystore)}
    for listener in ("sasl_plaintext", "sasl_ssl"):
        prefix = f"listener.name.{listener}."
        props[prefix + "sasl.enabled.mechanisms"] = ",".join(MECHANISMS)
        props[prefix + "plain.sasl.jaas.config"] = (
            f'{MODULES["PLAIN"]} required user_alice="{PASSWORD}";'
        )
        for scram in ("scram-sha-256", "scram-sha-512"):
            props[prefix + f"{scram}.sasl.jaas.config"] = f"{MODULES['SCRAM-SHA-256']} required;"
        # the broker's own login makes an unsecured token; clients' tokens go to the default
        # validator, OAuthBearerUnsecuredValidatorCallbackHandler
        props[prefix + "oauthbearer.sasl.jaas.config"] = (
            f'{MODULES["OAUTHBEARER"]} required unsecuredLoginStringClaim_sub="broker";'
        )
    props["listener.name.sasl_plaintext.scram-sha-512.connections.max.reauth.ms"] = str(SESSION_MS)
    kafka = ApacheKafka(listeners={"SASL_PLAINTEXT": None, "SASL_SSL": None}, properties=props)
    with kafka:
        with ThreadPoolExecutor(4) as pool:
            runs = [
                pool.submit(_scram, kafka, "alice", "SCRAM-SHA-256", PASSWORD),
                pool.submit(_scram, kafka, "alice", "SCRAM-SHA-512", PASSWORD),
                pool.submit(_scram, kafka, "carol", "SCRAM-SHA-512", CAROL_PASSWORD),
                pool.submit(_scram, kafka, ODD_USER, "SCRAM-SHA-256", ODD_PASSWORD),
            ]
            for run in runs:
                run.result()
        _wait_for_scram(kafka, {"alice": 2, "carol": 1, ODD_USER: 1})
        yield kafka


def new_topic(broker: ApacheKafka, partitions: int = 3) -> str:
    name = f"sasl-{uuid.uuid4().hex[:10]}"
    broker.create_topic(name, partitions)
    return name


# ---------------------------------------------------------------- each client's settings


def producer_settings(
    broker: ApacheKafka,
    protocol: str,
    mechanism: str,
    ca: str,
    password: str = PASSWORD,
    token: Optional[Callable[[], str]] = None,
) -> Dict[str, Any]:
    """KafkaProducer keyword arguments: over SASL_PLAINTEXT in Java's names (the JAAS line;
    OAUTHBEARER's unsecured token made by the producer from its options), over SASL_SSL in
    kafka-python's (OAUTHBEARER's token from a provider). ``token`` replaces the token."""
    bootstrap = broker.listener(protocol)
    if protocol == "SASL_PLAINTEXT" and token is None:
        if mechanism == "OAUTHBEARER":
            options = 'unsecuredLoginStringClaim_sub="alice"'
        else:
            options = f'username="alice" password="{password}"'
        return {
            "configs": {
                "bootstrap.servers": bootstrap,
                "security.protocol": protocol,
                "sasl.mechanism": mechanism,
                "sasl.jaas.config": f"{MODULES[mechanism]} required {options};",
            }
        }
    kwargs: Dict[str, Any] = {
        "bootstrap_servers": bootstrap,
        "security_protocol": protocol,
        "sasl_mechanism": mechanism,
    }
    if protocol == "SASL_SSL":
        kwargs["ssl_cafile"] = ca
    if mechanism == "OAUTHBEARER":
        kwargs["sasl_oauth_token_provider"] = token or (lambda: jwt("alice", 300))
    else:
        kwargs.update(sasl_plain_username="alice", sasl_plain_password=password)
    return kwargs


def librdkafka_settings(
    broker: ApacheKafka,
    protocol: str,
    mechanism: str,
    ca: str,
    user: str = "alice",
    password: str = PASSWORD,
) -> Dict[str, Any]:
    out: Dict[str, Any] = {
        "bootstrap.servers": broker.listener(protocol),
        "security.protocol": protocol,
        "sasl.mechanisms": mechanism,
    }
    if protocol == "SASL_SSL":
        out["ssl.ca.location"] = ca
    if mechanism == "OAUTHBEARER":
        out["enable.sasl.oauthbearer.unsecure.jwt"] = True
        out["sasl.oauthbearer.config"] = f"principal={user}"
    else:
        out.update({"sasl.username": user, "sasl.password": password})
    return out


def java_settings(protocol: str, mechanism: str, ca: str) -> Dict[str, str]:
    if mechanism == "OAUTHBEARER":
        options = 'unsecuredLoginStringClaim_sub="alice"'
    else:
        options = f'username="alice" password="{PASSWORD}"'
    out = {
        "security.protocol": protocol,
        "sasl.mechanism": mechanism,
        "sasl.jaas.config": f"{MODULES[mechanism]} required {options};",
    }
    if protocol == "SASL_SSL":
        out.update({"ssl.truststore.type": "PEM", "ssl.truststore.location": ca})
    return out


# (partition, offset) -> (key, value, headers)
Sent = Dict[Tuple[int, int], Tuple[Optional[bytes], Optional[bytes], List[Any]]]


def as_sent(records: List[ConsumedRecord]) -> Sent:
    return {(r.partition, r.offset): (r.key, r.value, list(r.headers)) for r in records}


# ---------------------------------------------------------------- records land


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_records_are_read_back_exactly_by_librdkafka_and_java(
    broker: ApacheKafka,
    certs: Dict[str, str],
    caplog: pytest.LogCaptureFixture,
    mechanism: str,
    protocol: str,
) -> None:
    """Keys, values and headers, at the partitions and offsets the producer reported; debug
    logging on, and no secret in it."""
    caplog.set_level(logging.DEBUG)
    topic = new_topic(broker)
    tokens: List[str] = []

    def token() -> str:
        tokens.append(jwt("alice", 300))
        return tokens[-1]

    kwargs = producer_settings(broker, protocol, mechanism, certs["ca"])
    if "sasl_oauth_token_provider" in kwargs:
        kwargs["sasl_oauth_token_provider"] = token
    count = 150
    records = [
        (b"k%d" % (i % 11), b"v%d-" % i * (1 + i % 7), [("n", b"%d" % i)]) for i in range(count)
    ]
    with KafkaProducer(linger_ms=5, **kwargs) as p:
        futures = [p.send(topic, v, key=k, headers=h) for k, v, h in records]
        p.flush(30)
    sent: Sent = {}
    for record, f in zip(records, futures):
        md = f.get(0)
        sent[(md.partition, md.offset)] = record
    assert len(sent) == count
    ca = certs["ca"]
    by_librdkafka = read_back(
        broker.listener(protocol), topic, 3, count,
        config=librdkafka_settings(broker, protocol, mechanism, ca),
    )  # fmt: skip
    assert as_sent(by_librdkafka) == sent
    by_java = read_back_java(
        broker.listener(protocol), topic, 3, count, config=java_settings(protocol, mechanism, ca)
    )
    assert as_sent(by_java) == sent
    # the header n names each record: each partition in send order, for both readers
    numbers = [b"%d" % i for i in range(count)]
    to = [f.get(0).partition for f in futures]
    for reader, got in (("librdkafka", by_librdkafka), ("Java", by_java)):
        assert_delivered(got, numbers, identity=header_of("n"), partitions=to, context=reader)
    # debug logging was on; no password, and no token (a JWT starts "eyJ", base64 of '{"')
    assert "authentication complete" in caplog.text
    assert PASSWORD not in caplog.text and "eyJ" not in caplog.text
    # the provider's tokens (kafka-python's spelling, over SASL_SSL) were the ones sent
    assert bool(tokens) == (mechanism == "OAUTHBEARER" and protocol == "SASL_SSL")


def test_scram_with_an_escaped_name_and_a_password_kafka_does_not_normalize(
    broker: ApacheKafka, certs: Dict[str, str]
) -> None:
    topic = new_topic(broker, 1)
    with KafkaProducer(
        bootstrap_servers=broker.listener("SASL_SSL"),
        security_protocol="SASL_SSL",
        ssl_cafile=certs["ca"],
        sasl_mechanism="SCRAM-SHA-256",
        sasl_plain_username=ODD_USER,
        sasl_plain_password=ODD_PASSWORD,
    ) as p:
        assert p.send(topic, b"odd").get(10).offset == 0
    settings = librdkafka_settings(
        broker, "SASL_SSL", "SCRAM-SHA-256", certs["ca"], ODD_USER, ODD_PASSWORD
    )
    got = read_back(broker.listener("SASL_SSL"), topic, 1, 1, config=settings)
    assert [r.value for r in got] == [b"odd"]


# ---------------------------------------------------------------- refusals


def librdkafka_refusal(settings: Dict[str, Any]) -> str:
    """The broker's message for a refused librdkafka producer (its _AUTHENTICATION error reads
    "SASL authentication error: <the broker's message> (after N ms in state AUTH_REQ)")."""
    seen: List[Any] = []
    p = CKProducer({**settings, "error_cb": seen.append, "log_level": 0})
    deadline = time.monotonic() + 10
    refused: List[Any] = []
    while not refused and time.monotonic() < deadline:
        p.poll(0.05)
        refused = [e for e in seen if e.code() == CKKafkaError._AUTHENTICATION]
    assert refused, f"librdkafka was not refused: {seen}"
    said = re.search(r"SASL authentication error: (.*) \(after \d+ms in state", refused[0].str())
    assert said, refused[0].str()
    return said.group(1)


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_a_wrong_password_fails_fast_with_the_brokers_message_and_no_secret(
    broker: ApacheKafka,
    certs: Dict[str, str],
    caplog: pytest.LogCaptureFixture,
    mechanism: str,
    protocol: str,
) -> None:
    """For OAUTHBEARER the wrong credential is a signed token, which the broker's unsecured
    validator rejects."""
    caplog.set_level(logging.DEBUG)
    ca = certs["ca"]
    if mechanism == "OAUTHBEARER":
        secret = jwt("alice", 300, alg="HS256")
        kwargs = producer_settings(broker, protocol, mechanism, ca, token=lambda: secret)
        peer = librdkafka_settings(broker, protocol, mechanism, ca)
        del peer["enable.sasl.oauthbearer.unsecure.jwt"], peer["sasl.oauthbearer.config"]
        peer["oauth_cb"] = lambda _config: (secret, time.time() + 300, "alice")
    else:
        secret = f"wrong-{uuid.uuid4().hex[:8]}-pw"
        kwargs = producer_settings(broker, protocol, mechanism, ca, password=secret)
        peer = librdkafka_settings(broker, protocol, mechanism, ca, password=secret)
    brokers_message = librdkafka_refusal(peer)
    p = KafkaProducer(max_block_ms=30000, **kwargs)
    try:
        start = time.monotonic()
        with pytest.raises(errors.SaslAuthenticationError) as info:
            p.send("never-created", b"x")
        took = time.monotonic() - start
    finally:
        closing = time.monotonic()
        p.close()
        assert time.monotonic() - closing < 5
        shown = repr(p.config) + repr(p.config.as_dict()) + repr(p._sasl_login)
    exc = info.value
    assert took < 5  # the first refusal ends the wait: not max.block.ms (30 s)
    assert exc.errno == 58  # SASL_AUTHENTICATION_FAILED, as Kafka answered
    assert f"{mechanism} authentication with node -1 failed: {brokers_message}" in str(exc)
    warned = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert any("failed authentication" in m and brokers_message in m for m in warned), warned
    shown += str(exc) + repr(exc) + "".join(traceback.format_exception(exc)) + caplog.text
    assert secret not in shown


def test_a_refused_producer_waits_its_backoff_before_each_new_attempt(
    broker: ApacheKafka, certs: Dict[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    """Kafka answers a refusal only after connection.failed.authentication.delay.ms; the next
    connection still waits the reconnect backoff, counted from the refusal and stepped twice per
    refusal as Java's client does (100 ms, 400 ms, then reconnect.backoff.max.ms, +-20%, for
    reconnect.backoff.ms=50), rather than following at once."""
    caplog.set_level(logging.DEBUG, logger="cproducer.network.network_client")
    secret = f"wrong-{uuid.uuid4().hex[:8]}-pw"
    kwargs = producer_settings(broker, "SASL_PLAINTEXT", "PLAIN", certs["ca"], password=secret)
    # this producer's records only: one an earlier test left running logs to the same logger
    client_id = f"refused-{uuid.uuid4().hex[:8]}"
    kwargs["configs"]["client.id"] = client_id
    p = KafkaProducer(max_block_ms=30000, **kwargs)
    try:
        with pytest.raises(errors.SaslAuthenticationError):
            p.partitions_for("never-created")

        def events() -> List[Tuple[float, str]]:
            out = []
            for r in list(caplog.records):
                if not r.threadName.endswith(f"| {client_id}"):
                    continue
                message = r.getMessage()
                if "failed authentication" in message:
                    out.append((r.created, "refused"))
                elif message.startswith("connecting to node"):
                    out.append((r.created, "connecting"))
            return out

        deadline = time.monotonic() + 10
        while sum(kind == "refused" for _, kind in events()) < 3:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        seen = events()
    finally:
        p.close()
    gaps = [
        later[0] - at
        for (at, kind), later in zip(seen, seen[1:])
        if kind == "refused" and later[1] == "connecting"
    ]
    # the backoff's floor is 80 ms (100 ms - 20%), counted from the refusal's handling; the
    # ERROR record of the refusal is made a little after that instant (by up to ~10 ms on a
    # loaded machine), the next attempt's record a little after its start
    assert len(gaps) >= 2 and min(gaps) >= 0.065, seen
    assert secret not in caplog.text


def test_a_sasl_client_at_a_plaintext_listener_fails_fast_and_says_why(
    broker: ApacheKafka, certs: Dict[str, str]
) -> None:
    """Kafka's PLAINTEXT listener lists SaslHandshake in ApiVersions and answers it with
    ILLEGAL_SASL_STATE and no mechanisms."""
    kwargs = producer_settings(broker, "SASL_SSL", "PLAIN", certs["ca"])
    kwargs.update(bootstrap_servers=broker.bootstrap_servers, security_protocol="SASL_PLAINTEXT")
    del kwargs["ssl_cafile"]
    p = KafkaProducer(max_block_ms=30000, **kwargs)
    try:
        start = time.monotonic()
        with pytest.raises(errors.IllegalSaslStateError) as info:
            p.send("never-created", b"x")
        assert time.monotonic() - start < 5
    finally:
        p.close()
    assert (
        "PLAIN authentication with node -1 failed: the SaslHandshake was refused; its enabled "
        "mechanisms: none (not a SASL listener?" in str(info.value)
    )
    assert isinstance(info.value, errors.AuthenticationError)


# ---------------------------------------------------------------- KIP-368


def test_sessions_are_renewed_in_time_and_a_refused_renewal_fails_the_records(
    broker: ApacheKafka, certs: Dict[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    """SCRAM-SHA-512 sessions over SASL_PLAINTEXT last SESSION_MS; the broker closes a
    connection used past it. The producer re-authenticates each connection in time (no
    connection lost while it sends); once carol's credentials are deleted, the next
    re-authentication is refused and the records fail with the broker's message. What was
    acknowledged is exactly what librdkafka reads back."""
    caplog.set_level(logging.DEBUG, logger="cproducer.network")
    topic = new_topic(broker, 1)
    jaas = f'{MODULES["SCRAM-SHA-512"]} required username="carol" password="{CAROL_PASSWORD}";'
    p = KafkaProducer(
        {
            "bootstrap.servers": broker.listener("SASL_PLAINTEXT"),
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.jaas.config": jaas,
            "linger.ms": 5,
            "max.block.ms": 20000,
        }
    )
    futures: List[Any] = []
    try:
        end = time.monotonic() + SESSION_MS * 1.5 / 1000
        while time.monotonic() < end:
            futures.append(p.send(topic, b"r%d" % len(futures)))
            time.sleep(0.005)
        p.flush(10)
        assert all(not f.failed() for f in futures)
        logged = [r.getMessage() for r in caplog.records]
        assert sum("re-authenticated" in m for m in logged) >= 2  # the bootstrap's and node 1's
        assert not [m for m in logged if "disconnecting" in m]

        broker.run_tool(CONFIG_COMMAND, "--bootstrap-server", broker.bootstrap_servers,
                        "--alter", "--delete-config", "SCRAM-SHA-512", "--entity-type", "users",
                        "--entity-name", "carol")  # fmt: skip
        refused: Optional[BaseException] = None
        deadline = time.monotonic() + SESSION_MS * 3 / 1000
        while refused is None and time.monotonic() < deadline:
            try:
                futures.append(p.send(topic, b"r%d" % len(futures)))
            except errors.SaslAuthenticationError as exc:
                refused = exc
            failed = [f.exception for f in futures if f.done() and f.failed()]
            refused = refused or (failed[0] if failed else None)
            time.sleep(0.01)
    finally:
        closing = time.monotonic()
        p.close()
        assert time.monotonic() - closing < 5
    assert isinstance(refused, errors.SaslAuthenticationError)
    assert "due to invalid credentials with SASL mechanism SCRAM-SHA-512" in str(refused)
    assert re.search(r"SCRAM-SHA-512 (re-)?authentication with node -?\d+ failed", str(refused))
    assert CAROL_PASSWORD not in caplog.text
    acked = {b"r%d" % i for i, f in enumerate(futures) if f.done() and not f.failed()}
    assert all(f.done() for f in futures)
    for f in futures:
        assert not f.failed() or isinstance(f.exception, errors.SaslAuthenticationError)
    settings = librdkafka_settings(broker, "SASL_PLAINTEXT", "SCRAM-SHA-512", certs["ca"])
    got = read_back(broker.listener("SASL_PLAINTEXT"), topic, 1, len(acked), config=settings)
    assert Counter(r.value for r in got) == Counter(acked)  # each acknowledged record once
    sent = [b"r%d" % i for i in range(len(futures))]
    assert_delivered(got, sent, may_be_missing=[v for v in sent if v not in acked])
