"""AIOKafkaProducer's settings: aiokafka's keywords and defaults, mapped onto the engine so that
a user who only switched the import keeps aiokafka's behaviour; bad values raise what aiokafka
raises (checked on both)."""

from __future__ import annotations

import asyncio
import inspect
import warnings
from typing import Any, Dict

import aiokafka
import pytest

from cproducer.aio import AIOKafkaProducer
from cproducer.aio.partitioner import DEFAULT_PARTITIONER
from cproducer.producer.config import ProducerConfig

PRODUCERS = pytest.mark.parametrize(
    "cls", [AIOKafkaProducer, aiokafka.AIOKafkaProducer], ids=["cproducer.aio", "aiokafka"]
)


def _make(cls: Any, **kw: Any) -> Any:
    async def make() -> Any:
        producer = cls(**kw)
        producer._closed = True  # never started: nothing to close (aiokafka warns otherwise)
        return producer

    return asyncio.run(make())


def _engine(**kw: Any) -> ProducerConfig:
    return ProducerConfig(**_make(AIOKafkaProducer, **kw)._config)


def test_same_keywords_and_defaults_as_aiokafka() -> None:
    theirs = inspect.signature(aiokafka.AIOKafkaProducer.__init__).parameters
    mine = inspect.signature(AIOKafkaProducer.__init__).parameters
    assert list(mine) == list(theirs)
    for name, p in theirs.items():
        assert mine[name].kind == p.kind, name
        if name == "acks":  # both: a private "not given" marker (1, or all with idempotence)
            assert mine[name].default is not None and p.default is not None
        elif name == "partitioner":
            assert type(mine[name].default).__name__ == type(p.default).__name__
        else:
            assert mine[name].default == p.default, name


def test_aiokafka_defaults_reach_the_engine() -> None:
    cfg = _engine()
    expected: Dict[str, Any] = {
        "bootstrap.servers": [("localhost", 9092)],
        "acks": 1,
        "enable.idempotence": False,
        "linger.ms": 0,
        "batch.size": 16384,
        "max.request.size": 1048576,
        "request.timeout.ms": 40000,
        "max.block.ms": 40000,  # a send waits for buffer space up to request_timeout_ms
        "delivery.timeout.ms": 40000,  # a batch expires request_timeout_ms after it is made
        "retry.backoff.ms": 100,
        "retry.backoff.max.ms": 100,  # aiokafka's backoff is constant
        "metadata.max.age.ms": 300000,
        "connections.max.idle.ms": 540000,
        "compression.type": "none",
        # one Produce request in flight per broker, as aiokafka's sender (keeps partition order)
        "max.in.flight.requests.per.connection": 1,
        "transactional.id": None,
        "security.protocol": "plaintext",
    }
    assert {k: cfg[k] for k in expected} == expected
    assert cfg["client.id"].startswith("aiokafka-producer-")


def test_idempotence_and_transactions_take_acks_all_and_never_expire_batches() -> None:
    idem = _engine(enable_idempotence=True)
    assert (idem["acks"], idem["enable.idempotence"]) == (-1, True)
    assert idem["delivery.timeout.ms"] == 2**31 - 1  # aiokafka retries until it succeeds
    txn = _engine(transactional_id="t1", transaction_timeout_ms=5000, acks="all")
    assert (txn["acks"], txn["enable.idempotence"], txn["transactional.id"]) == (-1, True, "t1")
    assert txn["transaction.timeout.ms"] == 5000
    other = _engine(
        bootstrap_servers=["h1:9093", "h2"],
        client_id="me",
        linger_ms=7,
        max_batch_size=1000,
        request_timeout_ms=5000,
        compression_type="lz4",
        connections_max_idle_ms=None,
    )
    assert other["bootstrap.servers"] == [("h1", 9093), ("h2", 9092)]
    assert (other["client.id"], other["linger.ms"], other["batch.size"]) == ("me", 7, 1000)
    assert (other["request.timeout.ms"], other["compression.type"]) == (5000, "lz4")
    assert other["connections.max.idle.ms"] > 10**15  # None: no idle check


@PRODUCERS
@pytest.mark.parametrize(
    "kw, match",
    [
        ({"acks": 2}, "ACKS"),
        ({"compression_type": "brotli"}, "compression"),
        ({"enable_idempotence": True, "acks": 1}, "enable_idempotence"),
        ({"transactional_id": "t", "acks": 0}, "enable_idempotence"),
        ({"security_protocol": "FOO"}, "security_protocol"),
        ({"security_protocol": "SSL"}, "ssl_context"),
    ],
)
def test_bad_values_raise_what_aiokafka_raises(cls: Any, kw: Dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        _make(cls, **kw)


@PRODUCERS
def test_deprecated_keywords_warn(cls: Any) -> None:
    async def make() -> None:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for kw in ({"api_version": "0.10"}, {"loop": asyncio.get_running_loop()}):
                cls(**kw)._closed = True
        assert [w.category for w in caught if w.category is DeprecationWarning] == [
            DeprecationWarning
        ] * 2

    asyncio.run(make())


@PRODUCERS
def test_made_outside_a_running_loop(cls: Any) -> None:
    with pytest.raises(RuntimeError):
        cls()


@PRODUCERS
@pytest.mark.parametrize(
    "kw, match",
    [
        ({"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "FOO"}, "sasl_mechanism"),
        ({"security_protocol": "SASL_PLAINTEXT", "sasl_plain_username": "u"}, "required"),
        ({"security_protocol": "SASL_SSL", "sasl_plain_username": "u"}, "ssl_context"),
    ],
)
def test_bad_sasl_settings_raise_what_aiokafka_raises(
    cls: Any, kw: Dict[str, Any], match: str
) -> None:
    with pytest.raises(ValueError, match=match):
        _make(cls, **kw)


def test_sasl_settings_reach_the_engine() -> None:
    plain = _engine(
        security_protocol="SASL_PLAINTEXT",
        sasl_plain_username="alice",
        sasl_plain_password="alice-pw",
    )
    assert (plain["security.protocol"], plain["sasl.mechanism"]) == ("sasl_plaintext", "PLAIN")
    assert plain["sasl.username"] == "alice"
    scram = _engine(
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="SCRAM-SHA-512",
        sasl_plain_username="alice",
        sasl_plain_password="alice-pw",
    )
    assert scram["sasl.mechanism"] == "SCRAM-SHA-512"
    # without a SASL protocol aiokafka ignores the SASL settings: so does the facade
    ignored = _engine(sasl_plain_username="alice", sasl_plain_password="alice-pw")
    assert ignored["security.protocol"] == "plaintext" and ignored["sasl.username"] is None


@pytest.mark.parametrize(
    "kw, match",
    [
        ({"sasl_mechanism": "GSSAPI"}, "Kerberos"),
        (
            {
                "sasl_mechanism": "PLAIN",
                "sasl_kerberos_service_name": "k",
                "sasl_plain_username": "u",
                "sasl_plain_password": "secret-pw",
            },
            "GSSAPI",
        ),
        ({"sasl_mechanism": "OAUTHBEARER"}, "sasl_oauth_token_provider"),
        ({"sasl_mechanism": "OAUTHBEARER", "sasl_oauth_token_provider": "a token"}, "token"),
    ],
)
def test_what_the_engine_cannot_do_is_refused_without_secrets(
    kw: Dict[str, Any], match: str
) -> None:
    with pytest.raises(ValueError, match=match) as refused:
        _make(AIOKafkaProducer, security_protocol="SASL_PLAINTEXT", **kw)
    assert "secret-pw" not in str(refused.value)


def test_the_default_partitioner_is_aiokafkas() -> None:
    from aiokafka.partitioner import DefaultPartitioner as PeerPartitioner

    peer = PeerPartitioner()
    for i in range(500):
        key = b"key-%d" % i
        for n in (1, 3, 7, 100):
            all_partitions = list(range(n))
            assert DEFAULT_PARTITIONER(key, all_partitions, all_partitions) == peer(
                key, all_partitions, all_partitions
            )
    picks = {DEFAULT_PARTITIONER(None, [0, 1, 2, 3], [1, 3]) for _ in range(200)}
    assert picks == {1, 3}  # no key: a random available partition
    assert {DEFAULT_PARTITIONER(None, [0, 1], []) for _ in range(200)} == {0, 1}
