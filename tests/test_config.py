"""ProducerConfig: names, Java 4.x defaults, checks, idempotence and delivery-timeout rules."""

from __future__ import annotations

import pytest

from cproducer.errors import ConfigError
from cproducer.producer.config import ProducerConfig

BOOT = {"bootstrap_servers": "localhost:9092"}


def test_java_defaults() -> None:
    c = ProducerConfig(**BOOT)
    assert c["acks"] == -1
    assert c["enable.idempotence"] is True
    assert c["linger.ms"] == 5
    assert c["batch.size"] == 16384
    assert c["buffer.memory"] == 33554432
    assert c["delivery.timeout.ms"] == 120000
    assert c["request.timeout.ms"] == 30000
    assert c["retry.backoff.ms"] == 100
    assert c["retry.backoff.max.ms"] == 1000
    assert c["max.in.flight.requests.per.connection"] == 5
    assert c["max.block.ms"] == 60000
    assert c["metadata.max.age.ms"] == 300000
    assert c["partitioner.adaptive.partitioning.enable"] is True
    assert c["partitioner.availability.timeout.ms"] == 0
    assert c["partitioner.ignore.keys"] is False
    assert c["compression.type"] == "none"
    assert c["retries"] == 2**31 - 1
    assert c["client.dns.lookup"] == "use_all_dns_ips"
    assert c["metadata.recovery.strategy"] == "rebootstrap"
    assert c["metadata.recovery.rebootstrap.trigger.ms"] == 300000
    assert c.client_id.startswith("producer-")


def test_java_names_dict_and_python_keywords_agree() -> None:
    a = ProducerConfig({"bootstrap.servers": "h:1,h2:2", "linger.ms": "7", "acks": "1"})
    b = ProducerConfig(bootstrap_servers=["h:1", "h2:2"], linger_ms=7, acks=1)
    assert a["bootstrap.servers"] == b["bootstrap.servers"] == [("h", 1), ("h2", 2)]
    assert a["linger.ms"] == b.linger_ms == 7
    assert a["acks"] == b["acks"] == 1


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"lingr_ms": 5}, "unknown producer config 'lingr_ms'"),
        ({"linger_ms": -1}, r"linger.ms: expected an integer in \[0"),
        ({"linger_ms": "soon"}, "linger.ms: expected an integer"),
        ({"acks": 2}, "acks: expected one of all, -1, 0, 1"),
        ({"compression_type": "brotli"}, "compression.type: expected one of"),
        ({"enable_idempotence": "yes"}, "enable.idempotence: expected true or false"),
        ({"bootstrap_servers": "host:notaport"}, "bootstrap.servers"),
        ({"key_serializer": 5}, "key.serializer"),
        ({"security_protocol": "SASL_GSSAPI"}, "security.protocol: expected one of plaintext"),
        ({"client_dns_lookup": "default"}, "client.dns.lookup: 'default' was removed in Kafka "),
        ({"client_dns_lookup": "all"}, "client.dns.lookup: expected one of use_all_dns_ips, "),
        ({"metadata_recovery_strategy": "retry"}, "metadata.recovery.strategy: expected one of"),
        (
            {"metadata_recovery_rebootstrap_trigger_ms": -1},
            r"metadata.recovery.rebootstrap.trigger.ms: expected an integer in \[0",
        ),
    ],
)
def test_bad_values_name_the_key(kwargs: dict, match: str) -> None:
    args = {**BOOT, **kwargs}
    with pytest.raises(ConfigError, match=match):
        ProducerConfig(**args)


@pytest.mark.parametrize(
    "key, expected",
    [
        ("lingr_ms", "did you mean 'linger_ms'?"),
        ("Linger_Ms", "did you mean 'linger_ms'?"),
        ("linger.msx", "did you mean 'linger.ms'?"),  # the Java spelling for a Java-style key
        ("compresion.type", "did you mean 'compression.type'?"),
        ("bootstrap_server", "did you mean 'bootstrap_servers'?"),
        ("batch_sise", "did you mean 'batch_size'?"),
        ("frobnicate", "no setting is spelled like it"),
    ],
)
def test_an_unknown_key_gets_the_closest_one_not_a_list(key: str, expected: str) -> None:
    with pytest.raises(ConfigError) as info:
        ProducerConfig(**{**BOOT, key: 1})
    message = str(info.value)
    assert message.startswith(f"unknown producer config {key!r}")
    assert expected in message
    assert len(message) < 200  # no dump of every name


def test_bootstrap_defaults_to_localhost_as_kafka_python() -> None:
    assert ProducerConfig()["bootstrap.servers"] == [("localhost", 9092)]
    with pytest.raises(ConfigError, match="bootstrap.servers: expected"):
        ProducerConfig(bootstrap_servers=None)


def test_idempotence_explicit_conflict_raises_implicit_is_disabled() -> None:
    with pytest.raises(ConfigError, match="acks must be all"):
        ProducerConfig(enable_idempotence=True, acks=1, **BOOT)
    with pytest.raises(ConfigError, match="max.in.flight"):
        ProducerConfig(enable_idempotence=True, max_in_flight_requests_per_connection=6, **BOOT)
    assert ProducerConfig(acks=1, **BOOT)["enable.idempotence"] is False
    assert ProducerConfig(retries=0, **BOOT)["enable.idempotence"] is False


def test_delivery_timeout_floor() -> None:
    # not set explicitly: raised to linger.ms + request.timeout.ms, as Java does
    c = ProducerConfig(linger_ms=100, request_timeout_ms=200_000, **BOOT)
    assert c["delivery.timeout.ms"] == 200_100
    with pytest.raises(ConfigError, match="delivery.timeout.ms should be equal to or larger"):
        ProducerConfig(delivery_timeout_ms=1000, request_timeout_ms=5000, **BOOT)


def test_same_key_twice_with_different_values() -> None:
    with pytest.raises(ConfigError, match="given twice"):
        ProducerConfig({"linger.ms": 1}, linger_ms=2, **BOOT)


def test_recovery_and_dns_settings_by_java_name_and_alias() -> None:
    c = ProducerConfig(
        {"client.dns.lookup": "RESOLVE_CANONICAL_BOOTSTRAP_SERVERS_ONLY"},
        metadata_recovery_strategy="NONE",
        metadata_recovery_rebootstrap_trigger_ms="1500",
        **BOOT,
    )
    assert c.client_dns_lookup == "resolve_canonical_bootstrap_servers_only"
    assert c["metadata.recovery.strategy"] == "none"
    assert c.metadata_recovery_rebootstrap_trigger_ms == 1500
