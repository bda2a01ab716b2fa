"""Every option of kafka-python 3's KafkaProducer (its ``DEFAULT_CONFIG``), walked one by one:
each is either accepted and changes what the producer does, or refused with a ConfigError that
names what to use instead. None is accepted and ignored.

An accepted option is checked by building a producer with it and one without it and comparing
what the option governs (the sockets' factory and TLS context, the network client's limits, the
accumulator, the metadata requests, the constructor's wait...). The options' effects on the wire
are tested against the broker in test_kafka_python_usage.py (on kafka-python too) and
test_kafka_python_compat.py. The producers here point at a port nobody listens on: nothing is
sent.
"""

from __future__ import annotations

import selectors
import socket
import ssl
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, NamedTuple, Optional

import pytest
from kafka import KafkaProducer as KafkaPythonProducer
from kafka.partitioner import DefaultPartitioner as KafkaPythonDefaultPartitioner
from kafka.serializer import JsonSerializer as KafkaPythonJsonSerializer

from cproducer import KafkaProducer, errors
from cproducer.localbroker import free_port
from cproducer.producer.config import REFUSED, ProducerConfig


class Accepted(NamedTuple):
    value: Any  # a value other than the default
    probe: Callable[[KafkaProducer], Any]  # what the option governs, read from the producer
    base: Dict[str, Any] = {}  # the settings it needs (both producers get them)
    other: Any = None  # not None: the second producer gets this value instead of none


def _tls_context(p: KafkaProducer) -> ssl.SSLContext:
    return p._client.socket_factory.context  # type: ignore[attr-defined,no-any-return]


def _ciphers(p: KafkaProducer) -> Any:
    return sorted(c["name"] for c in _tls_context(p).get_ciphers())


_SSL: Dict[str, Any] = {"security_protocol": "SSL"}
_SASL: Dict[str, Any] = {
    "security_protocol": "SASL_PLAINTEXT",
    "sasl_mechanism": "PLAIN",
    "sasl_plain_username": "alice",
    "sasl_plain_password": "alice-secret",
}


def _accepted(certs: Dict[str, str]) -> Dict[str, Accepted]:
    client = _SSL | {"ssl_cafile": certs["ca"]}
    return {
        "bootstrap_servers": Accepted(
            "127.0.0.1:1", lambda p: [(n.host, n.port) for n in p._metadata.fetch().nodes]
        ),
        "client_id": Accepted("billing", lambda p: p.client_id),
        "key_serializer": Accepted(
            KafkaPythonJsonSerializer(),
            lambda p: p._serialize("key", p._key_serializer, "t", [], "k"),
        ),
        "value_serializer": Accepted(
            str.encode, lambda p: p._serialize("value", p._value_serializer, "t", [], "v")
        ),
        "enable_idempotence": Accepted(False, lambda p: p._transaction_manager is None),
        "transactional_id": Accepted("tx-1", lambda p: p._transactional),
        "transaction_timeout_ms": Accepted(
            1000,
            lambda p: p._transaction_manager.transaction_timeout_ms,
            {"transactional_id": "tx-2"},
        ),
        "delivery_timeout_ms": Accepted(200000, lambda p: p._accumulator.delivery_timeout_ms),
        "acks": Accepted(1, lambda p: p._sender.acks),
        "compression_type": Accepted("gzip", lambda p: p._accumulator.compression_type),
        "retries": Accepted(3, lambda p: p._sender.retries),
        "batch_size": Accepted(
            0, lambda p: (p._accumulator.batch_size, p._accumulator.max_batch_records)
        ),
        "linger_ms": Accepted(0, lambda p: p._accumulator.linger_ms),
        "partitioner": Accepted(KafkaPythonDefaultPartitioner(), lambda p: repr(p._partitioner)),
        "connections_max_idle_ms": Accepted(1000, lambda p: p._client.connections_max_idle_ms),
        "max_block_ms": Accepted(1000, lambda p: p._max_block_ms),
        "max_request_size": Accepted(2000, lambda p: p._sender.max_request_size),
        "allow_auto_create_topics": Accepted(
            False, lambda p: p._metadata.allow_auto_topic_creation
        ),
        "metadata_max_age_ms": Accepted(1000, lambda p: p._metadata.metadata_max_age_ms),
        "client_dns_lookup": Accepted(
            "resolve_canonical_bootstrap_servers_only",
            lambda p: [n.host for n in p._metadata.fetch().nodes],
        ),
        "retry_backoff_ms": Accepted(7, lambda p: p._accumulator.retry_backoff_ms),
        "request_timeout_ms": Accepted(5000, lambda p: p._client.request_timeout_ms),
        "receive_message_max_bytes": Accepted(1000, lambda p: p._client.max_response_size),
        "receive_buffer_bytes": Accepted(None, lambda p: p._client.receive_buffer_bytes),
        "send_buffer_bytes": Accepted(None, lambda p: p._client.send_buffer_bytes),
        "socket_options": Accepted(
            [(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)],
            lambda p: p._client.socket_factory.keywords["socket_options"],
        ),
        "reconnect_backoff_ms": Accepted(7, lambda p: p._client.reconnect_backoff_ms),
        "reconnect_backoff_max_ms": Accepted(
            30000, lambda p: p._client._connection_states._reconnect_backoff.max_interval
        ),
        "max_in_flight_requests_per_connection": Accepted(1, lambda p: p._client.max_in_flight),
        "security_protocol": Accepted(
            "SSL",
            lambda p: isinstance(
                getattr(p._client.socket_factory, "context", None), ssl.SSLContext
            ),
        ),
        "ssl_context": Accepted(ssl.create_default_context(), _tls_context, _SSL),
        "ssl_check_hostname": Accepted(False, lambda p: _tls_context(p).check_hostname, _SSL),
        "ssl_cafile": Accepted(certs["ca"], lambda p: len(_tls_context(p).get_ca_certs()), _SSL),
        # a client certificate: the mutual-TLS terminator accepts the connection only with it
        # (test_kafka_python_usage.test_tls_settings); here: the file is what is loaded (a
        # certificate without its key is refused)
        "ssl_certfile": Accepted(certs["client-keystore"], _raises, client, certs["ca"]),
        # the key of a certificate file that holds none
        "ssl_keyfile": Accepted(
            certs["client.key"], _raises, client | {"ssl_certfile": certs["client"]}
        ),
        "ssl_crlfile": Accepted(
            certs["ca"], lambda p: _tls_context(p).verify_flags & ssl.VERIFY_CRL_CHECK_LEAF, client
        ),
        "ssl_password": Accepted(
            "secret",
            _raises,
            client | {"ssl_certfile": certs["client"], "ssl_keyfile": _encrypted_key(certs)},
            "wrong",
        ),
        "ssl_ciphers": Accepted("ECDHE-RSA-AES128-GCM-SHA256", _ciphers, client),
        "api_version": Accepted((2, 0, 0), lambda p: p._client.api_version_caps),
        "bootstrap_timeout_ms": Accepted(300, _raises),
        "metrics_enabled": Accepted(False, lambda p: p.metrics()),
        "metrics_num_samples": Accepted(5, lambda p: p._sender_metrics.config.samples),
        "metrics_sample_window_ms": Accepted(1000, lambda p: p._sender_metrics.config.window_ms),
        "selector": Accepted(selectors.PollSelector, lambda p: type(p._client._selector)),
        "sasl_mechanism": Accepted("SCRAM-SHA-256", lambda p: p._sasl_login.mechanism, _SASL),
        "sasl_plain_username": Accepted("bob", lambda p: p._sasl_login.username, _SASL),
        "sasl_plain_password": Accepted(
            "bob-secret", lambda p: p._sasl_login._password.value, _SASL
        ),
        "sasl_oauth_token_provider": Accepted(
            lambda: "token",
            lambda p: p._sasl_login.mechanism,
            {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "OAUTHBEARER"},
        ),
    }


def _encrypted_key(certs: Dict[str, str]) -> str:
    """The client's key, encrypted with the password "secret"."""
    from cryptography.hazmat.primitives import serialization

    key = serialization.load_pem_private_key(Path(certs["client.key"]).read_bytes(), None)
    path = Path(certs["client.key"]).with_name("client-encrypted.key")
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.BestAvailableEncryption(b"secret"),
        )
    )
    return str(path)


def _raises(p: Optional[KafkaProducer]) -> Any:
    """For an option whose effect is a check at construction (a file read, a wait): the
    probe is the construction itself, see _observe."""
    return p is None


def _observe(settings: Dict[str, Any], probe: Callable[[Any], Any]) -> Any:
    """What ``probe`` reads from a producer made with ``settings``; for an option checked at
    construction, the error it raised (its type and the setting it names)."""
    try:
        producer = KafkaProducer(**settings)
    except (errors.KafkaError, ValueError) as exc:
        return ("raised", type(exc).__name__)
    try:
        return probe(producer)
    except (errors.KafkaError, ValueError, TypeError) as exc:
        return ("probe raised", type(exc).__name__)
    finally:
        producer.close(0)


@pytest.fixture
def dead_port() -> Iterator[str]:
    yield f"127.0.0.1:{free_port()}"


def test_every_kafka_python_option_is_accepted_with_effect_or_refused(
    certs: Dict[str, str], dead_port: str
) -> None:
    accepted = _accepted(certs)
    options = set(KafkaPythonProducer.DEFAULT_CONFIG)
    assert options, "kafka-python's DEFAULT_CONFIG is empty"
    assert options <= set(accepted) | set(REFUSED), options - set(accepted) - set(REFUSED)
    for name in sorted(options):
        if name in REFUSED:
            value = KafkaPythonProducer.DEFAULT_CONFIG[name]
            if name == "metric_reporters":
                value = [object]  # an empty list is accepted: no reporters
            with pytest.raises(errors.ConfigError) as refused:
                KafkaProducer(bootstrap_servers=dead_port, **{name: value})
            message = str(refused.value)
            assert message.startswith(f"{name}: ")
            assert any(hint in message for hint in ("use ", "remove ", "read ", "run it ")), message
            continue
        option = accepted[name]
        base = {"bootstrap_servers": dead_port, **option.base}
        if name == "bootstrap_servers":
            base.pop("bootstrap_servers")  # without: kafka-python's default, localhost:9092
        other = {} if option.other is None else {name: option.other}
        without = _observe({**base, **other}, option.probe)
        with_it = _observe({**base, name: option.value}, option.probe)
        assert with_it != without, (name, with_it)


def test_the_refusals_name_an_alternative() -> None:
    """Each refusal message says what to do (the wording the table test looks for)."""
    for name, message in REFUSED.items():
        assert any(hint in message for hint in ("use ", "remove ", "read ", "run it ")), name


def test_kafka_python_values_of_accepted_options(dead_port: str) -> None:
    """kafka-python's spellings of values: retries=float('inf') is Java's unbounded retries,
    None socket buffers are -1 (the OS's), api_version 'auto' or '2.5.0', acks 'all'."""
    producer = KafkaProducer(
        bootstrap_servers=dead_port,
        retries=float("inf"),
        send_buffer_bytes=None,
        receive_buffer_bytes=None,
        acks="all",
        api_version="2.5.0",
    )
    try:
        assert producer._sender.retries == 2**31 - 1
        assert (producer._client.send_buffer_bytes, producer._client.receive_buffer_bytes) == (
            -1,
            -1,
        )
        assert producer._sender.acks == -1
        assert producer._client.api_version == (2, 5)
    finally:
        producer.close(0)
    # 'auto' (or None, given): negotiate, and bootstrap in the constructor as kafka-python does
    assert ProducerConfig(api_version="auto")["api_version"] is None
    with pytest.raises(errors.KafkaTimeoutError, match="bootstrap_timeout_ms"):
        KafkaProducer(bootstrap_servers=dead_port, api_version="auto", bootstrap_timeout_ms=300)


@pytest.mark.parametrize(
    "settings, match",
    [
        ({"api_version": (0, 10, 2)}, r"api_version=\(0, 10, 2\).*0\.11"),
        ({"api_version": "x.y"}, "api_version: expected a broker release tuple"),
        ({"api_version": (2, 0), "compression_type": "zstd"}, "zstd needs Kafka 2.1"),
        ({"retries": float("nan")}, "retries"),
        ({"socket_options": [(1, 2)]}, "socket_options"),
        ({"ssl_check_hostname": "maybe"}, "ssl_check_hostname: expected true or false"),
        ({"security_protocol": "SSL", "ssl_ciphers": "NO-SUCH-CIPHER"}, "ssl_ciphers"),
        ({"security_protocol": "SSL", "ssl_keyfile": "key.pem"}, "ssl_keyfile"),
        ({"wakeup_timeout_ms": 1000}, "max_block_ms"),
        ({"api_version_auto_timeout_ms": 1000}, "bootstrap_timeout_ms"),
        ({"sasl_kerberos_service_name": "kafka"}, "GSSAPI"),
    ],
)
def test_bad_kafka_python_values_name_the_option(
    settings: Dict[str, Any], match: str, dead_port: str
) -> None:
    with pytest.raises(errors.ConfigError, match=match):
        KafkaProducer(bootstrap_servers=dead_port, **settings)
