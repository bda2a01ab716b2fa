"""cproducer.compat.confluent without a broker: the error values, the configuration translation,
librdkafka's hash functions and consumer group metadata. Where a behaviour is confluent-kafka's,
the same test runs against confluent-kafka itself (``client`` is either module)."""

from __future__ import annotations

import inspect
import re
import socket
import struct
import subprocess
import sys
import zlib
from types import ModuleType
from typing import Any, Dict

import confluent_kafka
import pytest

import cproducer.compat.confluent as facade
from cproducer import ConsumerGroupMetadata, errors
from cproducer.compat.confluent.config import PROPERTIES, Derived, translate
from cproducer.compat.confluent.error import from_exception
from cproducer.compat.confluent.group_metadata import read_group_metadata, write_group_metadata
from cproducer.compat.confluent.partitioners import (
    NAMES,
    crc32_of,
    fnv1a_of,
    hash_partition,
    is_sticky,
)
from cproducer.localbroker import free_port
from cproducer.utils.murmur2 import murmur2

CLIENTS = [pytest.param(confluent_kafka, id="confluent_kafka"), pytest.param(facade, id="facade")]

#: the facade's producers a test leaves open are closed after it, as librdkafka's end with
#: their last reference
pytestmark = pytest.mark.usefixtures("close_facade_producers")


@pytest.fixture(params=CLIENTS)
def client(request: pytest.FixtureRequest) -> ModuleType:
    return request.param  # type: ignore[no-any-return]


# ------------------------------------------------------------------ KafkaError / KafkaException


def test_kafka_error_is_a_comparable_value_with_librdkafka_names(client: ModuleType) -> None:
    err = client.KafkaError(client.KafkaError._MSG_TIMED_OUT)
    assert err.code() == -192
    assert err.name() == "_MSG_TIMED_OUT"
    assert err.str() == "Local: Message timed out"
    assert repr(err) == 'KafkaError{code=_MSG_TIMED_OUT,val=-192,str="Local: Message timed out"}'
    assert err == -192 and err != -184 and err == client.KafkaError(-192)
    assert err < -100 and hash(err) == hash(client.KafkaError(-192))
    assert (err.fatal(), err.retriable(), err.txn_requires_abort()) == (False, False, False)
    custom = client.KafkaError(3, "gone", fatal=True, retriable=True, txn_requires_abort=True)
    assert repr(custom) == 'KafkaError{FATAL,code=UNKNOWN_TOPIC_OR_PART,val=3,str="gone"}'
    assert (custom.fatal(), custom.retriable(), custom.txn_requires_abort()) == (True, True, True)
    assert client.KafkaError(6).name() == "NOT_LEADER_FOR_PARTITION"
    assert client.KafkaError(99999).name() == "ERR_99999?"
    exc = client.KafkaException(err)
    assert exc.args[0] is err and str(exc) == repr(err) and isinstance(exc, Exception)
    assert not isinstance(err, BaseException)


def test_every_librdkafka_error_code_has_its_name() -> None:
    theirs = {
        name: getattr(confluent_kafka.KafkaError, name)
        for name in dir(confluent_kafka.KafkaError)
        if name.isupper() or (name.startswith("_") and name[1:2].isupper())
    }
    ours = {name: getattr(facade.KafkaError, name) for name in theirs}
    assert ours == theirs
    for code in theirs.values():
        assert facade.KafkaError(code).name() == confluent_kafka.KafkaError(code).name()


def test_local_error_descriptions_read_as_librdkafka_writes_them() -> None:
    for code in (-192, -184, -152, -151, -190, -185, -172, -144, -186, -145, -195, -187, 10):
        assert facade.KafkaError(code).str() == confluent_kafka.KafkaError(code).str()


def test_records_refused_with_their_batch_report_the_batchs_code() -> None:
    """The engine gives each record of a batch refused with record errors its own error (Java's
    producer), the batch's error its cause; librdkafka reports the batch's code for all of them
    (tests/integration/test_kafka_validation.py checks librdkafka itself)."""

    def caused(exc: Exception, batch: Exception) -> Exception:
        exc.__cause__ = batch
        return exc

    invalid, bad_time = errors.InvalidRecordError("batch"), errors.InvalidTimestampError("batch")
    assert from_exception(caused(errors.KafkaError("innocent"), invalid)).code() == 87
    assert from_exception(caused(errors.InvalidRecordError("one of two"), bad_time)).code() == 32
    assert from_exception(caused(errors.InvalidTimestampError("the one"), bad_time)).code() == 32
    # other errors keep their own code, whatever their cause
    sasl = caused(errors.SaslAuthenticationError("PLAIN: refused"), errors.UnknownError("?"))
    assert from_exception(sasl).code() == errors.SaslAuthenticationError.errno
    assert from_exception(errors.KafkaError("no cause")).code() == facade.KafkaError._FAIL


def test_message_accessors_and_defaults(client: ModuleType) -> None:
    m = client.Message(
        topic="t", partition=2, offset=7, key=b"k", value=b"vv", timestamp=(1, 123), latency=0.25
    )
    assert (m.topic(), m.partition(), m.offset(), m.key(), m.value()) == ("t", 2, 7, b"k", b"vv")
    assert m.timestamp() == (1, 123) and m.latency() == 0.25 and len(m) == 2
    assert m.error() is None and m.headers() is None
    empty = client.Message()
    assert (empty.topic(), empty.partition(), empty.offset(), empty.latency()) == (None,) * 4
    assert empty.timestamp() == (client.TIMESTAMP_NOT_AVAILABLE, 0) and len(empty) == 0
    empty.set_value(b"abc")
    empty.set_headers([("h", b"1")])
    assert empty.value() == b"abc" and empty.headers() == [("h", b"1")]


# ------------------------------------------------------------------ configuration

_DEAD = f"127.0.0.1:{free_port()}"


def _conf_id(extra: Dict[str, Any]) -> str:
    """A test id that is the same in every process (the port of ``_DEAD`` is not)."""
    return ",".join(f"{k}={'<dead>' if v == _DEAD else v}" for k, v in extra.items())


#: values librdkafka accepts for the properties the facade maps (edges of its ranges, its
#: spellings); each must be accepted by both clients
ACCEPTED = [
    {"linger.ms": 0},
    {"linger.ms": 0.5},
    {"queue.buffering.max.ms": "900000"},
    {"message.timeout.ms": 30000},
    {"message.timeout.ms": 0},
    {"delivery.timeout.ms": 6, "linger.ms": 5},
    {"message.timeout.ms": 1, "linger.ms": 0},
    {"message.timeout.ms": 3},  # librdkafka lowers the unset linger.ms below it
    {"transactional.id": "t", "message.timeout.ms": 60000},
    {"request.timeout.ms": 1},
    {"request.timeout.ms": 900000},
    {"batch.num.messages": 1},
    {"batch.num.messages": 1000000},
    {"batch.size": 1},
    {"batch.size": 2147483647},
    {"queue.buffering.max.messages": 0},
    {"queue.buffering.max.messages": 2147483647},
    {"queue.buffering.max.kbytes": 1},
    {"queue.buffering.max.kbytes": 2147483647},
    {"compression.codec": "LZ4"},
    {"compression.type": "zstd", "compression.level": 12},
    {"compression.type": "gzip", "compression.level": 12},
    {"compression.type": "lz4", "compression.level": 0},
    {"compression.type": "gzip", "compression.level": 0},
    {"acks": "all"},
    {"request.required.acks": -1},
    {"acks": 0},
    {"acks": "1"},
    {"enable.idempotence": "true"},
    {"enable.idempotence": "T"},
    {"enable.idempotence": 1},
    {"enable.idempotence": True, "max.in.flight": 5},
    {"max.in.flight.requests.per.connection": 1000000},
    {"retries": 0},
    {"message.send.max.retries": "0x10"},
    {"message.max.bytes": 1000},
    {"message.max.bytes": 1000000000},
    {"retry.backoff.ms": 1, "retry.backoff.max.ms": 300000},
    {"reconnect.backoff.ms": 0, "reconnect.backoff.max.ms": 3600000},
    {"socket.send.buffer.bytes": 0, "socket.receive.buffer.bytes": 100000000},
    {"connections.max.idle.ms": 0},
    {"topic.metadata.refresh.interval.ms": -1},
    {"sticky.partitioning.linger.ms": 0},
    {"statistics.interval.ms": 86400000},
    {"transaction.timeout.ms": 1000, "transactional.id": "t"},
    {"client.id": "my-app", "metadata.broker.list": _DEAD},
    {"delivery.report.only.error": True},
    {"default.topic.config": {"acks": 1, "message.timeout.ms": 5000}},
    {"group.id": "ignored-by-producers"},
] + [{"partitioner": name} for name in NAMES]

#: values librdkafka refuses; both clients raise KafkaException(_INVALID_ARG)
REFUSED = [
    {"linger.ms": -1},
    {"linger.ms": 900001},
    {"linger.ms": "soon"},
    {"batch.num.messages": 0},
    {"message.timeout.ms": 1, "linger.ms": 5},
    {"partitioner": "sticky"},
    {"compression.codec": "brotli"},
    {"enable.idempotence": "yes"},
    {"enable.idempotence": True, "acks": 1},
    {"enable.idempotence": True, "max.in.flight": 6},
    {"enable.idempotence": True, "retries": 0},
    {"transactional.id": "t", "enable.idempotence": False},
    {"transactional.id": "t", "message.timeout.ms": 60001},
    {"queue.buffering.max.kbytes": 0},
    {"request.timeout.ms": 0},
    {"no.such.property": 1},
]


def _make(client: ModuleType, extra: Dict[str, Any]) -> Any:
    conf: Dict[str, Any] = {"bootstrap.servers": _DEAD, "log_level": 0}
    conf.update(extra)
    return client.Producer(conf)


@pytest.mark.parametrize("extra", ACCEPTED, ids=_conf_id)
def test_values_librdkafka_accepts_are_accepted(client: ModuleType, extra: Dict[str, Any]) -> None:
    p = _make(client, extra)  # constructing it is the check: no exception
    assert isinstance(p, client.Producer)


@pytest.mark.parametrize("extra", REFUSED, ids=_conf_id)
def test_values_librdkafka_refuses_are_refused(client: ModuleType, extra: Dict[str, Any]) -> None:
    with pytest.raises(client.KafkaException) as info:
        _make(client, extra)
    assert info.value.args[0].code() == client.KafkaError._INVALID_ARG


def test_mapped_values_reach_the_java_configuration() -> None:
    cfg = translate(
        {
            "bootstrap.servers": _DEAD,
            "queue.buffering.max.ms": 7.9,
            "message.timeout.ms": 30000,
            "compression.codec": "gzip",
            "compression.level": 12,
            "request.required.acks": "all",
            "batch.num.messages": 500,
            "message.max.bytes": 2000,
            "socket.send.buffer.bytes": 0,
            "queue.buffering.max.kbytes": 3,
            "queue.buffering.max.messages": 9,
            "partitioner": "murmur2_random",
        }
    )
    p = cfg.producer
    assert p["linger.ms"] == 7  # whole milliseconds
    # librdkafka only needs message.timeout.ms > linger.ms: the request timeout makes room
    assert p["delivery.timeout.ms"] == 30000 and p["request.timeout.ms"] == 30000 - 7
    assert (p["compression.type"], p["compression.gzip.level"]) == ("gzip", 9)
    assert p["acks"] == -1 and p["max.request.size"] == 2000 and p["send.buffer.bytes"] == -1
    assert p["batch_max_records"] == 500
    assert (cfg.max_bytes, cfg.max_messages, cfg.partitioner) == (3 * 1024, 9, "murmur2_random")
    # librdkafka's defaults where nothing is set
    d = translate({"bootstrap.servers": _DEAD})
    assert d.producer["enable.idempotence"] is False and d.producer["batch.size"] == 1000000
    assert d.producer["delivery.timeout.ms"] == 300000 and d.producer["linger.ms"] == 5
    assert d.producer["client.id"] == "rdkafka" and d.partitioner == "consistent_random"
    lowered = translate({"bootstrap.servers": _DEAD, "message.timeout.ms": 3}).producer
    assert (lowered["linger.ms"], lowered["delivery.timeout.ms"]) == (2, 3)
    txn = translate({"bootstrap.servers": _DEAD, "transactional.id": "x"}).producer
    assert txn["delivery.timeout.ms"] == txn["transaction.timeout.ms"] == 60000
    assert (d.max_messages, d.max_bytes, d.sticky_linger_ms) == (100000, 1048576 * 1024, 10)
    assert translate({"bootstrap.servers": _DEAD, "transactional.id": "x"}).producer[
        "enable.idempotence"
    ]


#: the table's properties with a value of their own as default (not derived, not a callback)
_PLAIN_DEFAULTS = [
    (name, prop.default)
    for name, prop in PROPERTIES.items()
    if prop.default is not None and not isinstance(prop.default, Derived)
]


@pytest.mark.parametrize("name, default", _PLAIN_DEFAULTS, ids=[n for n, _ in _PLAIN_DEFAULTS])
def test_each_table_default_is_what_an_unset_property_gives(
    client: ModuleType, name: str, default: Any
) -> None:
    """Set to its default, a property changes nothing in the translation, and librdkafka takes
    the property by that name with that value."""
    _make(client, {name: default})
    unset = translate({"bootstrap.servers": _DEAD})
    assert translate({"bootstrap.servers": _DEAD, name: default}) == unset


@pytest.mark.parametrize(
    "key, hint",
    [
        ("socket.timeout.ms", "request.timeout.ms"),
        ("debug", "logging"),
        ("sasl.kerberos.keytab", "Kerberos"),
        ("message.copy.max.bytes", "copies"),
        ("enable.gapless.guarantee", "not implemented"),
    ],
)
def test_unsupported_properties_are_refused_by_name(key: str, hint: str) -> None:
    with pytest.raises(facade.KafkaException) as info:
        facade.Producer({"bootstrap.servers": _DEAD, key: "1"})
    err = info.value.args[0]
    assert err.code() == facade.KafkaError._INVALID_ARG
    assert f'"{key}"' in err.str() and hint in err.str()


def test_acks_beyond_what_brokers_take_is_refused_with_the_reason() -> None:
    with pytest.raises(facade.KafkaException, match="INVALID_REQUIRED_ACKS"):
        facade.Producer({"bootstrap.servers": _DEAD, "acks": 2})


def test_callback_settings_must_be_callable(client: ModuleType) -> None:
    with pytest.raises(client.KafkaException, match="on_delivery requires a callable"):
        _make(client, {"on_delivery": 5})
    with pytest.raises(TypeError, match="error_cb"):
        _make(client, {"error_cb": 5})
    with pytest.raises(TypeError, match="delivery.report.only.error"):
        _make(client, {"delivery.report.only.error": "true"})


def test_secrets_stay_out_of_errors(tmp_path: Any) -> None:
    with pytest.raises(facade.KafkaException) as info:
        facade.Producer(
            {
                "bootstrap.servers": _DEAD,
                "security.protocol": "ssl",
                "ssl.certificate.location": str(tmp_path / "missing.pem"),
                "ssl.key.location": str(tmp_path / "missing.key"),
                "ssl.key.password": "hunter2-secret",
            }
        )
    text = str(info.value)
    assert "hunter2" not in text and "missing.pem" in text and "No such file" in text


# ------------------------------------------------------------------ partitioners


def test_hashes_match_librdkafka_test_vectors() -> None:
    # rdfnv1a.c / rdmurmur2.c unit tests (Go's hash/fnv and Java's murmur2 results)
    assert fnv1a_of(b"kafka") == 0x0D33C4E1
    assert fnv1a_of(b"giberish123456789") == 0x77A58295
    assert murmur2(b"kafka") & 0xFFFFFFFF == 0xD067CF64
    for key in (b"", b"a", b"kafka", bytes(range(256))):
        assert crc32_of(key) == zlib.crc32(key)


def test_which_keys_hash_and_which_stick() -> None:
    keyed = b"user-17"
    for name in NAMES:
        expected_stick = name not in ("consistent", "murmur2", "fnv1a")
        assert is_sticky(name, None) is expected_stick
        assert is_sticky(name, None, sticky_ms=0) is False
        assert is_sticky(name, b"") is (name == "consistent_random")
        assert is_sticky(name, keyed) is False
    assert hash_partition("consistent", keyed, 6) == zlib.crc32(keyed) % 6
    assert hash_partition("consistent", None, 6) == 0 and hash_partition("consistent", b"", 6) == 0
    assert hash_partition("murmur2", None, 6) == (murmur2(b"") & 0x7FFFFFFF) % 6
    assert hash_partition("murmur2_random", b"", 6) == (murmur2(b"") & 0x7FFFFFFF) % 6
    assert hash_partition("murmur2_random", None, 6) == -1  # random
    assert hash_partition("fnv1a_random", b"", 6) == fnv1a_of(b"") % 6
    assert hash_partition("consistent_random", b"", 6) == -1
    assert hash_partition("random", keyed, 6) == -1


# ------------------------------------------------------------------ consumer group metadata


def test_consumer_group_metadata_from_librdkafka_reads_back() -> None:
    consumer = confluent_kafka.Consumer({"bootstrap.servers": _DEAD, "group.id": "g-17"})
    try:
        raw = consumer.consumer_group_metadata()
    finally:
        consumer.close()
    assert read_group_metadata(raw) == ConsumerGroupMetadata("g-17", -1, "", None)
    full = ConsumerGroupMetadata("g", 42, "member-1", "instance-a")
    assert read_group_metadata(write_group_metadata(full)) == full
    assert write_group_metadata(ConsumerGroupMetadata("g-17")) == raw


@pytest.mark.parametrize(
    "raw, why",
    [
        (b"CGMDv1:" + struct.pack("=i", 1) + b"g\0m\0\x01", "not a serialized"),
        (b"CGMDv2:" + struct.pack("=i", 1) + b"g\0", "too short"),
        (b"CGMDv2:" + struct.pack("=i", 1) + b"g\x01\0m\0\x01", "not printable"),
        (b"CGMDv2:" + struct.pack("=i", 1) + b"g\0m\0\x01extra", "bad length"),
    ],
)
def test_bad_consumer_group_metadata_is_refused(raw: bytes, why: str) -> None:
    with pytest.raises(facade.KafkaException, match=why):
        read_group_metadata(raw)


@pytest.mark.parametrize("impl", [confluent_kafka, facade], ids=["librdkafka", "facade"])
@pytest.mark.parametrize(
    "key, meant",
    [("lingr.ms", "linger.ms"), ("bootstrap.server", "bootstrap.servers")],
)
def test_a_misspelt_property_is_no_such_property(impl: ModuleType, key: str, meant: str) -> None:
    """librdkafka refuses a name it does not know with _INVALID_ARG, "No such configuration
    property"; the facade says the same and names the property meant."""
    with pytest.raises(impl.KafkaException) as info:
        impl.Producer({"bootstrap.servers": "127.0.0.1:1", key: "5"})
    err = info.value.args[0]
    assert err.code() == impl.KafkaError._INVALID_ARG
    assert err.str().startswith(f'No such configuration property: "{key}"')
    if impl is facade:
        assert f'did you mean "{meant}"?' in err.str()


@pytest.mark.parametrize("impl", [confluent_kafka, facade], ids=["librdkafka", "facade"])
def test_a_timestamp_must_be_an_integer(impl: ModuleType) -> None:
    """``produce(timestamp=...)`` takes an integer (a bool is one); a float or a str raises
    ``TypeError`` before the message is queued, where a C parameter would cut 1.5 to 1."""
    reports: list = []
    p = impl.Producer(
        {"bootstrap.servers": "127.0.0.1:1", "on_delivery": lambda e, m: reports.append(e)}
    )
    for stamp in (1.5, "1700000000000"):
        with pytest.raises(TypeError, match="cannot be interpreted as an integer"):
            p.produce("t", b"x", timestamp=stamp)
    p.produce("t", b"y", timestamp=1_700_000_000_000)
    p.purge(blocking=False)  # the flag is inverted in confluent-kafka 2.16: this one waits
    assert p.flush(5) == 0
    assert len(reports) == 1  # only the message that was queued has a report


_FAIL_LINE = re.compile(
    r"^%3\|\d+\.\d{3}\|FAIL\|rdkafka#producer-\d+\| \[thrd:(127\.0\.0\.1:\d+)/bootstrap\]: "
    r"\1/bootstrap: Connect to (ipv4#)?\1 failed: Connection refused",
    re.M,
)


@pytest.mark.parametrize("module", ["confluent_kafka", "cproducer.compat.confluent"])
def test_a_refused_connection_is_a_fail_line_on_stderr(module: str) -> None:
    """Without a logger, librdkafka prints each failed connection as a FAIL line on stderr at
    once; the facade prints the same line (and not also the engine's WARNING)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    code = (
        f"import time\nfrom {module} import Producer\n"
        f"p = Producer({{'bootstrap.servers': '127.0.0.1:{port}'}})\n"
        "p.produce('t', b'x')\n"
        "end = time.monotonic() + 3\n"
        "while time.monotonic() < end:\n"
        "    p.poll(0.1)\n"
        "p.purge()\n"
        "p.flush(1)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert _FAIL_LINE.search(done.stderr), done.stderr
    assert "could not be established" not in done.stderr


# ------------------------------------------------------------------ Producer's API, one by one

#: every public method of confluent-kafka's Producer, and how the facade answers it: "same"
#: (supported with the peer's behaviour; set_sasl_credentials without SASL PLAIN/SCRAM excepted)
PRODUCER_API = {
    "produce": "same",
    "produce_batch": "same",
    "poll": "same",
    "flush": "same",
    "purge": "same",
    "list_topics": "same",
    "cluster_id": "same",
    "init_transactions": "same",
    "begin_transaction": "same",
    "send_offsets_to_transaction": "same",
    "commit_transaction": "same",
    "abort_transaction": "same",
    "close": "same",
    "set_sasl_credentials": "same",
    "__len__": "same",
    "__bool__": "same",
    "__enter__": "same",
    "__exit__": "same",
}

_DOC_SIGNATURE = re.compile(r"py:function::?\s*(\w+)\(([^)]*)\)")


def _documented_parameters(method: Any) -> list:
    """The parameter names confluent-kafka's docstring gives (``.. py:function:: f(a, [b=1])``)."""
    match = _DOC_SIGNATURE.search(method.__doc__ or "")
    if match is None:
        return []
    names = [a.strip(" []").split("=")[0] for a in match.group(2).split(",")]
    return [n for n in names if n]


def test_every_method_of_confluent_kafkas_producer_is_answered() -> None:
    public = {
        n for n in dir(confluent_kafka.Producer) if not n.startswith("_") or n in PRODUCER_API
    }
    public -= {"__init__"}
    assert public == set(PRODUCER_API)  # a method added upstream shows up here
    for name in PRODUCER_API:
        assert callable(getattr(facade.Producer, name)), name


@pytest.mark.parametrize("name", sorted(n for n in PRODUCER_API if not n.startswith("_")))
def test_each_documented_parameter_is_taken_by_name(name: str) -> None:
    documented = _documented_parameters(getattr(confluent_kafka.Producer, name))
    ours = inspect.signature(getattr(facade.Producer, name)).parameters
    assert [n for n in documented if n not in ours] == []
    if name == "send_offsets_to_transaction":
        assert documented[0] == "positions"  # documented, though its text says "offsets"


def test_sasl_credentials_without_sasl_are_refused_naming_the_setting() -> None:
    # librdkafka stores them unused; the facade says they cannot apply
    p = facade.Producer({"bootstrap.servers": f"127.0.0.1:{free_port()}"})
    try:
        with pytest.raises(facade.KafkaException) as info:
            p.set_sasl_credentials("user", "s3cret-value")
        err = info.value.args[0]
        assert err.code() == facade.KafkaError._NOT_CONFIGURED
        assert "sasl.mechanism" in err.str() and "s3cret-value" not in err.str()
        with pytest.raises(TypeError, match="password must be str"):
            p.set_sasl_credentials("user", None)  # type: ignore[arg-type]
    finally:
        p.close(0)


def test_produce_batch_takes_a_list_only(client: ModuleType) -> None:
    p = client.Producer({"bootstrap.servers": f"127.0.0.1:{free_port()}"})
    try:
        with pytest.raises(TypeError, match="messages must be a list"):
            p.produce_batch("t", ({"value": b"x"},))
        assert p.produce_batch("t", []) == 0
    finally:
        p.close(0)


def test_timeouts_must_be_numbers(client: ModuleType) -> None:
    p = client.Producer({"bootstrap.servers": f"127.0.0.1:{free_port()}"})
    try:
        for call in (p.poll, p.flush):
            with pytest.raises(TypeError):
                call("1")
        assert p.flush(0) == 0 and p.poll(0) == 0
    finally:
        p.close(0)


def test_a_closed_producer_refuses_every_call(client: ModuleType) -> None:
    p = client.Producer({"bootstrap.servers": f"127.0.0.1:{free_port()}"})
    assert p.close(0) is True
    assert p.close(0) is True  # again: nothing to do
    assert len(p) == 0
    calls = {
        "produce": lambda: p.produce("t", b"x"),
        "produce_batch": lambda: p.produce_batch("t", [{"value": b"x"}]),
        "poll": lambda: p.poll(0),
        "flush": lambda: p.flush(0),
        "purge": lambda: p.purge(),
        "init_transactions": lambda: p.init_transactions(0),
    }
    for name, call in calls.items():
        with pytest.raises(RuntimeError, match="Producer has been closed"):
            call()
        assert name
    for call in (lambda: p.list_topics(timeout=0), lambda: p.cluster_id(0)):
        with pytest.raises(RuntimeError, match="Handle has been closed"):
            call()


def test_a_delivery_callback_must_be_callable() -> None:
    # confluent-kafka takes any object and fails in poll() when it calls it; the facade
    # refuses it where it is given
    p = facade.Producer({"bootstrap.servers": f"127.0.0.1:{free_port()}"})
    try:
        for kwargs in ({"callback": 5}, {"on_delivery": "f"}):
            with pytest.raises(TypeError, match="must be callable"):
                p.produce("t", b"x", **kwargs)
        with pytest.raises(TypeError, match="callback at index 1 must be callable"):
            p.produce_batch("t", [{"value": b"x"}, {"value": b"y", "callback": 5}])
        assert len(p) == 0
    finally:
        p.close(0)


def test_a_kafka_python_spelling_is_named_before_a_missing_property(client: ModuleType) -> None:
    with pytest.raises(client.KafkaException) as info:
        client.Producer({}, bootstrap_servers=f"127.0.0.1:{free_port()}")
    err = info.value.args[0]
    assert err.code() == client.KafkaError._INVALID_ARG
    assert 'No such configuration property: "bootstrap_servers"' in err.str()
