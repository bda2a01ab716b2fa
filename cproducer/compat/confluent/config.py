"""librdkafka's configuration, translated for cproducer's ``KafkaProducer``.

``translate(dict)`` reads a confluent-kafka ``Producer`` configuration: librdkafka's property names,
value syntax (``"true"``/``"t"``/``"1"``, ints as strings, ``acks="all"``, float ``linger.ms``)
and ranges, and librdkafka's defaults where the user sets nothing (``enable.idempotence=false``,
``linger.ms=5``, ``batch.size=1000000``, ``message.timeout.ms=300000``, ``client.id=rdkafka``, ...).
Each property either maps onto the Java name that means the same, configures the facade itself
(queue limits, partitioner, callbacks), or is refused with a ``KafkaException(_INVALID_ARG)``
naming it and what to do instead. librdkafka's consumer-only properties are ignored with a warning,
as librdkafka does on a producer.

Where librdkafka accepts a value that Java's rules would refuse, the translation keeps librdkafka's
meaning: ``message.timeout.ms`` only has to be larger than ``linger.ms`` (the produce request
timeout is shortened to fit in what is left, as librdkafka bounds a request by the remaining
message timeout), and ``message.timeout.ms=0`` means no timeout.
"""

from __future__ import annotations

import difflib
import logging
import math
import re
import ssl
from typing import Any, Callable, Dict, Mapping, NamedTuple, Optional, Set, Tuple

from cproducer.compat.confluent.error import INVALID_ARG, KafkaError, KafkaException

log = logging.getLogger("cproducer.compat.confluent")

_INT32_MAX = 2**31 - 1

PARTITIONERS = (
    "random",
    "consistent",
    "consistent_random",
    "murmur2",
    "murmur2_random",
    "fnv1a",
    "fnv1a_random",
)

#: librdkafka's consumer properties: a producer ignores them (with a warning), as librdkafka does.
_CONSUMER_ONLY = frozenset(
    (
        "auto.commit.enable auto.commit.interval.ms auto.offset.reset check.crcs "
        "consume.callback.max.messages consume_cb coordinator.query.interval.ms "
        "enable.auto.commit enable.auto.offset.store enable.partition.eof fetch.error.backoff.ms "
        "fetch.max.bytes fetch.message.max.bytes fetch.min.bytes fetch.queue.backoff.ms "
        "fetch.wait.max.ms group.id group.instance.id group.protocol group.protocol.type "
        "group.remote.assignor heartbeat.interval.ms isolation.level max.partition.fetch.bytes "
        "max.poll.interval.ms max.poll.records offset.store.method offset.store.path "
        "offset.store.sync.interval.ms offset_commit_cb partition.assignment.strategy "
        "queued.max.messages.kbytes queued.min.messages rebalance_cb session.timeout.ms "
        "share.acknowledgement.mode on_commit"
    ).split()
)

_ALIASES = {
    "metadata.broker.list": "bootstrap.servers",
    "sasl.mechanisms": "sasl.mechanism",
    "max.in.flight": "max.in.flight.requests.per.connection",
    "queue.buffering.max.ms": "linger.ms",
    "message.send.max.retries": "retries",
    "compression.codec": "compression.type",
    "request.required.acks": "acks",
    "message.timeout.ms": "delivery.timeout.ms",
}

#: Refused properties with a pointer to what to use instead.
_HINTS = {
    "socket.timeout.ms": "cproducer bounds every request with request.timeout.ms; set that",
    "metadata.max.age.ms": "topic.metadata.refresh.interval.ms sets how often metadata is "
    "refreshed",
    "debug": "cproducer logs through the logging module: "
    "logging.getLogger('cproducer').setLevel(logging.DEBUG), or pass logger=",
    "throttle_cb": "not reported by cproducer yet",
    "oauth_cb": "oauth_cb is used with sasl.mechanism=OAUTHBEARER",
    "dr_cb": "pass on_delivery (per produce() call or in the configuration)",
    "dr_msg_cb": "pass on_delivery (per produce() call or in the configuration)",
    "enable.gapless.guarantee": "not implemented; with enable.idempotence=true a failed batch "
    "fails only its own records",
    "message.copy.max.bytes": "cproducer copies every record into its batch",
    "ssl.certificate.pem": "write the certificate to a file and use ssl.certificate.location",
    "ssl.key.pem": "write the key to a file and use ssl.key.location",
    "ssl.keystore.location": "PKCS#12 keystores are not read; use ssl.certificate.location and "
    "ssl.key.location (PEM)",
    "partitioner_cb": "set partitioner= to one of " + ", ".join(PARTITIONERS),
}


def _invalid(message: str) -> KafkaException:
    return KafkaException(KafkaError(INVALID_ARG, message))


# ------------------------------------------------------------------ librdkafka value syntax


def _text(name: str, value: Any) -> str:
    # confluent-kafka hands every value to librdkafka as str(value)
    if value is None:
        raise _invalid(f'Configuration property "{name}" cannot be set to empty value')
    return str(value)


_C_INT = re.compile(r"\s*([+-]?)(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)")


def rd_int(name: str, value: Any, lo: int, hi: int, words: Optional[Dict[str, int]] = None) -> int:
    """An integer property as librdkafka parses it (strtol with base 0, then named values)."""
    text = _text(name, value)
    m = _C_INT.match(text)
    if m is None:
        if words is not None and text.strip().lower() in words:
            number = words[text.strip().lower()]
        else:
            raise _invalid(f'Invalid value for configuration property "{name}"')
    else:
        digits = m.group(2)
        if digits.lower().startswith("0x"):
            number = int(digits, 16)
        elif digits.startswith("0") and len(digits) > 1:
            number = int(digits, 8)
        else:
            number = int(digits)
        if m.group(1) == "-":
            number = -number
    if not lo <= number <= hi:
        raise _invalid(
            f'Configuration property "{name}" value {number} is outside allowed range {lo}..{hi}'
        )
    return number


def rd_float(name: str, value: Any, lo: float, hi: float) -> float:
    text = _text(name, value).strip()
    m = re.match(r"[+-]?(\d+\.?\d*([eE][+-]?\d+)?|\.\d+([eE][+-]?\d+)?)", text)
    if m is None or isinstance(value, bool):
        raise _invalid(f'Invalid value for configuration property "{name}"')
    number = float(m.group(0))
    if not lo <= number <= hi:
        raise _invalid(
            f'Configuration property "{name}" value {number:g} is outside allowed range '
            f"{lo:g}..{hi:g}"
        )
    return number


def rd_bool(name: str, value: Any) -> bool:
    text = _text(name, value).strip().lower()
    if text in ("true", "t", "1"):
        return True
    if text in ("false", "f", "0"):
        return False
    raise _invalid(f'Expected bool value for "{name}": true or false')


def rd_choice(name: str, value: Any, allowed: Tuple[str, ...]) -> str:
    text = _text(name, value).strip().lower()
    if text not in allowed:
        raise _invalid(f'Invalid value "{value}" for configuration property "{name}"')
    return text


def _callable(name: str, value: Any) -> Any:
    if not callable(value):
        raise _invalid(f"{name} requires a callable object")
    return value


# ------------------------------------------------------------------ the translation


class FacadeConfig(NamedTuple):
    """What ``translate`` returns: the ``KafkaProducer`` configuration (Java names) and the
    settings the facade applies itself."""

    producer: Dict[str, Any]
    partitioner: str
    sticky_linger_ms: int
    max_messages: int
    max_bytes: int
    on_delivery: Optional[Callable[..., Any]]
    dr_only_error: bool
    error_cb: Optional[Callable[..., Any]]
    stats_cb: Optional[Callable[..., Any]]
    stats_interval_ms: int
    logger: Optional[logging.Logger]
    log_level: int
    transactional: bool


#: librdkafka's syslog levels -> logging levels (what ``log_level`` lets through to ``logger``)
_SYSLOG_TO_LOGGING = {
    0: logging.CRITICAL,
    1: logging.CRITICAL,
    2: logging.CRITICAL,
    3: logging.ERROR,
    4: logging.WARNING,
    5: logging.INFO,
    6: logging.INFO,
    7: logging.DEBUG,
}

_ACKS_WORDS = {"all": -1}


def merged(config: Optional[Mapping[str, Any]], kwargs: Mapping[str, Any]) -> Dict[str, Any]:
    """confluent-kafka's constructor arguments as one dict: the dict, then the keyword arguments
    over it, then ``default.topic.config`` merged in."""
    if config is not None and not isinstance(config, Mapping):
        raise TypeError("expected configuration dict")
    if config is None and not kwargs:
        raise TypeError("expected configuration dict")
    out: Dict[str, Any] = dict(config or {})
    out.update(kwargs)
    topic_conf = out.pop("default.topic.config", None)
    if topic_conf is not None:
        if not isinstance(topic_conf, Mapping):
            raise _invalid("default.topic.config must be a dict")
        out.update(topic_conf)
    return out


# ------------------------------------------------------------------ the property table

Convert = Callable[[str, Any], Any]
#: a rule that ties a property to those read before it: (read, explicit, producer), where
#: ``read`` has the converted values so far, ``explicit`` the names the user set, and
#: ``producer`` the KafkaProducer configuration it may set or refuse
Rule = Callable[[Dict[str, Any], Set[str], Dict[str, Any]], None]


class Derived(NamedTuple):
    """A default that librdkafka derives from the properties read before it."""

    of: Callable[[Dict[str, Any]], Any]


class Prop(NamedTuple):
    """One librdkafka property: its default (librdkafka's), the converter of its value
    (librdkafka's syntax and range, then what the value means to cproducer), the KafkaProducer
    keys (Java names) that take the result, and the rule run once it is read."""

    default: Any
    convert: Convert
    keys: Tuple[str, ...] = ()
    rule: Optional[Rule] = None


def _int(
    lo: int, hi: int, words: Optional[Dict[str, int]] = None, means: Optional[Dict[int, Any]] = None
) -> Convert:
    """An integer in ``lo..hi`` (or one of ``words``); ``means`` gives a value cproducer's
    meaning where librdkafka's special values differ from Java's."""

    def convert(name: str, value: Any) -> Any:
        number = rd_int(name, value, lo, hi, words)
        return means.get(number, number) if means else number

    return convert


def _float(lo: float, hi: float) -> Convert:
    return lambda name, value: rd_float(name, value, lo, hi)


def _choice(*allowed: str) -> Convert:
    return lambda name, value: rd_choice(name, value, allowed)


def _servers(name: str, value: Any) -> str:
    if value is None:
        raise _invalid("bootstrap.servers (or metadata.broker.list) must be set")
    return _text(name, value)


def _optional_text(name: str, value: Any) -> Optional[str]:
    return None if value is None else _text(name, value)


def _optional_callable(name: str, value: Any) -> Any:
    return None if value is None else _callable(name, value)


def _callback(name: str, value: Any) -> Any:
    # confluent-kafka's own check (a TypeError), not librdkafka's
    if value is not None and not callable(value):
        raise TypeError(f"expected {name} property as a callable function")
    return value


def _strict_bool(name: str, value: Any) -> bool:
    # confluent-kafka reads this one itself, as a Python bool only
    if not isinstance(value, bool):
        raise TypeError(f"Expected {name} to be bool type, not {type(value).__name__}")
    return value


def _logger(name: str, value: Any) -> Any:
    if value is not None and not callable(getattr(value, "log", None)):
        raise TypeError("logger must be a logging.Logger (an object with .log(level, msg, ...))")
    return value


def _transactions_need_idempotence(
    read: Dict[str, Any], explicit: Set[str], p: Dict[str, Any]
) -> None:
    # librdkafka's rules: transactional.id turns idempotence on, and may not go without it
    if read["transactional.id"] is not None and not read["enable.idempotence"]:
        raise _invalid(
            "Failed to create producer: `transactional.id` requires `enable.idempotence=true`"
        )


def _acks_and_idempotence(read: Dict[str, Any], explicit: Set[str], p: Dict[str, Any]) -> None:
    acks = read["acks"]
    if acks > 1:
        raise _invalid(
            f"acks={acks}: Kafka brokers accept only -1 (all), 0 and 1 (librdkafka takes the "
            "value and every message then fails with INVALID_REQUIRED_ACKS)"
        )
    if not read["enable.idempotence"]:
        return
    if acks != -1:
        raise _invalid(
            "Failed to create producer: `acks` must be set to `all` when "
            "`enable.idempotence` is true"
        )
    if "max.in.flight.requests.per.connection" not in explicit:
        p["max.in.flight.requests.per.connection"] = 5
    elif read["max.in.flight.requests.per.connection"] > 5:
        raise _invalid(
            "Failed to create producer: `max.in.flight` must be set <= 5 when "
            "`enable.idempotence` is true"
        )
    if read["retries"] < 1:
        raise _invalid(
            "Failed to create producer: `retries` must be set >= 1 when "
            "`enable.idempotence` is true"
        )


def _timeouts(read: Dict[str, Any], explicit: Set[str], p: Dict[str, Any]) -> None:
    """message.timeout.ms (delivery.timeout.ms) against linger.ms, request.timeout.ms and the
    transaction timeout, as librdkafka relates them; ``read["linger.ms"]`` becomes what
    librdkafka lingers."""
    linger = read["linger.ms"]
    request_timeout = read["request.timeout.ms"]
    delivery = read["delivery.timeout.ms"]
    timeout_set = "delivery.timeout.ms" in explicit
    if read["transactional.id"] is not None:
        # librdkafka: a transactional message lives at most as long as its transaction
        transaction_timeout = read["transaction.timeout.ms"]
        if not timeout_set:
            delivery = transaction_timeout
        elif delivery > transaction_timeout:
            raise _invalid(
                "Failed to create producer: `message.timeout.ms` must be set <= "
                "`transaction.timeout.ms`"
            )
    if delivery == 0:
        delivery = _INT32_MAX  # librdkafka: 0 = no timeout
    elif delivery <= linger:
        if "linger.ms" in explicit and timeout_set:
            raise _invalid(
                "Failed to create producer: `message.timeout.ms` must be greater than `linger.ms`"
            )
        if timeout_set:  # librdkafka lowers an unset linger.ms below message.timeout.ms
            linger = delivery - 0.1
        else:  # an unset message.timeout.ms leaves room for linger.ms and one request
            delivery = min(_INT32_MAX, int(math.ceil(linger)) + request_timeout)
    read["linger.ms"] = linger
    p["linger.ms"] = int(math.floor(linger))  # whole milliseconds: sub-ms lingering rounds down
    # librdkafka bounds a produce request by the message's remaining time; Java wants
    # delivery.timeout.ms >= linger.ms + request.timeout.ms: shorten the request timeout to fit
    p["request.timeout.ms"] = max(1, min(request_timeout, delivery - p["linger.ms"]))
    p["delivery.timeout.ms"] = delivery
    # the first produce() to a topic waits for its metadata up to this long (librdkafka would
    # queue the message and let it time out in the queue)
    p["max.block.ms"] = min(delivery, 60000)


def _compression_level(read: Dict[str, Any], explicit: Set[str], p: Dict[str, Any]) -> None:
    """librdkafka's per-codec ranges onto Java's (KIP-390); none and snappy ignore the level,
    as in librdkafka."""
    level, codec = read["compression.level"], read["compression.type"]
    if level == -1:
        return
    if codec == "gzip":
        p["compression.gzip.level"] = min(max(level, 1), 9)  # zlib's 0 stores: 1 is nearest
    elif codec == "lz4":
        # lz4 below 3 is its fast compressor, Java's level 9 (its default) too; 3..12 are the
        # high-compression levels, where 9 becomes 10 (9 would mean the fast one)
        p["compression.lz4.level"] = 9 if level < 3 else (10 if level == 9 else level)
    elif codec == "zstd":
        p["compression.zstd.level"] = level


#: librdkafka's properties (after ``_ALIASES``) in the order they are read and checked (the
#: first wrong one is the one reported); ``FacadeConfig``'s fields come from those without keys
PROPERTIES: Dict[str, Prop] = {
    "bootstrap.servers": Prop(None, _servers, ("bootstrap.servers",)),
    "client.id": Prop("rdkafka", _text, ("client.id",)),
    "message.max.bytes": Prop(1000000, _int(1000, 1000000000), ("max.request.size",)),
    "max.in.flight.requests.per.connection": Prop(
        1000000, _int(1, 1000000), ("max.in.flight.requests.per.connection",)
    ),
    # -1: never refreshed
    "topic.metadata.refresh.interval.ms": Prop(
        300000, _int(-1, 3600000, means={-1: 2**62}), ("metadata.max.age.ms",)
    ),
    # 0: the operating system's default
    "socket.send.buffer.bytes": Prop(0, _int(0, 100000000, means={0: -1}), ("send.buffer.bytes",)),
    "socket.receive.buffer.bytes": Prop(
        0, _int(0, 100000000, means={0: -1}), ("receive.buffer.bytes",)
    ),
    # librdkafka's timeout does not grow per attempt: Java's first and largest are both it
    "socket.connection.setup.timeout.ms": Prop(
        30000,
        _int(1000, _INT32_MAX),
        ("socket.connection.setup.timeout.ms", "socket.connection.setup.timeout.max.ms"),
    ),
    # 0: never closed for idleness
    "connections.max.idle.ms": Prop(
        0, _int(0, _INT32_MAX, means={0: 2**62}), ("connections.max.idle.ms",)
    ),
    "reconnect.backoff.ms": Prop(100, _int(0, 3600000), ("reconnect.backoff.ms",)),
    "reconnect.backoff.max.ms": Prop(10000, _int(0, 3600000), ("reconnect.backoff.max.ms",)),
    "retry.backoff.ms": Prop(100, _int(1, 300000), ("retry.backoff.ms",)),
    "retry.backoff.max.ms": Prop(1000, _int(1, 300000), ("retry.backoff.max.ms",)),
    "retries": Prop(_INT32_MAX, _int(0, _INT32_MAX), ("retries",)),
    "transactional.id": Prop(None, _optional_text, ("transactional.id",)),
    "enable.idempotence": Prop(
        Derived(lambda read: read["transactional.id"] is not None),
        rd_bool,
        ("enable.idempotence",),
        _transactions_need_idempotence,
    ),
    "transaction.timeout.ms": Prop(60000, _int(1000, _INT32_MAX), ("transaction.timeout.ms",)),
    "acks": Prop(-1, _int(-1, 1000, _ACKS_WORDS), ("acks",), _acks_and_idempotence),
    "linger.ms": Prop(5, _float(0, 900000)),
    "batch.size": Prop(1000000, _int(1, _INT32_MAX), ("batch.size",)),
    "batch.num.messages": Prop(10000, _int(1, 1000000), ("batch_max_records",)),
    "request.timeout.ms": Prop(30000, _int(1, 900000)),
    "delivery.timeout.ms": Prop(300000, _int(0, _INT32_MAX), (), _timeouts),
    "compression.type": Prop(
        "none", _choice("none", "gzip", "snappy", "lz4", "zstd"), ("compression.type",)
    ),
    "compression.level": Prop(-1, _int(-1, 12), (), _compression_level),
    "queue.buffering.max.messages": Prop(100000, _int(0, _INT32_MAX)),
    "queue.buffering.max.kbytes": Prop(1048576, _int(1, _INT32_MAX)),
    "partitioner": Prop("consistent_random", _choice(*PARTITIONERS)),
    "sticky.partitioning.linger.ms": Prop(
        Derived(lambda read: int(min(900000, 2 * read["linger.ms"]))), _int(0, 900000)
    ),
    "on_delivery": Prop(None, _optional_callable),
    "delivery.report.only.error": Prop(False, _strict_bool),
    "error_cb": Prop(None, _callback),
    "stats_cb": Prop(None, _callback),
    "statistics.interval.ms": Prop(0, _int(0, 86400000)),
    "logger": Prop(None, _logger),
    "log_level": Prop(6, _int(0, 7, means=_SYSLOG_TO_LOGGING)),
}

#: what the facade always sets: librdkafka produces a message without key and value, and the
#: facade bounds what is queued (messages, bytes) as librdkafka does and raises BufferError, so
#: the pool under it must never make produce() wait
_ALWAYS = {"null_records": True, "buffer.memory": 2**62}

#: properties that state what cproducer always does: accepted with that value only
_FIXED: Tuple[Tuple[str, Any, Convert], ...] = (
    ("api.version.request", True, rd_bool),
    ("socket.nagle.disable", True, rd_bool),
    ("queuing.strategy", "fifo", _choice("fifo", "lifo")),
)


def _closest_property(key: str) -> Optional[str]:
    """The librdkafka property ``key`` is most likely a misspelling of, if one is close."""
    known = {*PROPERTIES, *_ALIASES, *_HINTS, *_CONSUMER_ONLY, *(k for k, _f, _p in _FIXED)}
    if key in known:
        return None
    close = difflib.get_close_matches(key, sorted(known), n=1, cutoff=0.8)
    return close[0] if close else None


def translate(config: Mapping[str, Any]) -> FacadeConfig:
    values: Dict[str, Any] = {}
    for raw_key, value in config.items():
        if not isinstance(raw_key, str):
            raise TypeError("expected configuration property name as type unicode string")
        key = _ALIASES.get(raw_key, raw_key)
        if key in values and values[key] != value:
            raise _invalid(f'"{raw_key}" and another name for "{key}" are both set, differently')
        values[key] = value
    for key in values:
        # kafka-python's spelling (bootstrap_servers) is named before a rule below could
        # complain that the property it meant is missing, as librdkafka does
        dotted = key.replace("_", ".")
        if dotted != key and (dotted in PROPERTIES or dotted in _ALIASES):
            if _closest_property(key) is not None:
                raise _invalid(
                    f'No such configuration property: "{key}" (did you mean "{dotted}"?)'
                )

    p: Dict[str, Any] = {}  # KafkaProducer's configuration, Java names
    hooks: Dict[str, Any] = dict(_ALWAYS)
    explicit = set(values)
    read: Dict[str, Any] = {}
    for name, prop in PROPERTIES.items():
        default = prop.default.of(read) if isinstance(prop.default, Derived) else prop.default
        read[name] = value = prop.convert(name, values.pop(name, default))
        for key in prop.keys:
            if value is not None:
                p[key] = value
        if prop.rule is not None:
            prop.rule(read, explicit, p)

    _tls(values, p, hooks)

    for key, fixed, parse in _FIXED:
        if key in values and parse(key, values.pop(key)) != fixed:
            raise _invalid(f"{key}: cproducer always works as {key}={str(fixed).lower()}")

    for key in [k for k in values if k in _CONSUMER_ONLY]:
        values.pop(key)
        log.warning(
            "Configuration property %s is a consumer property and will be ignored by this "
            "producer instance",
            key,
        )
    if values:
        key = sorted(values)[0]
        close = _closest_property(key)
        if close is not None:
            # librdkafka's refusal of a name it does not know, with the name meant
            raise _invalid(f'No such configuration property: "{key}" (did you mean "{close}"?)')
        hint = _HINTS.get(key)
        if hint is None and key.startswith("sasl.kerberos"):
            hint = "Kerberos (GSSAPI) is not supported by cproducer"
        elif hint is None and key.startswith("sasl."):
            hint = "not used with this security.protocol/sasl.mechanism, or not supported"
        raise _invalid(
            f'Configuration property "{key}" is not supported by cproducer\'s confluent-kafka '
            f"facade: {hint or 'not a librdkafka property, or one it does not support; remove it'}"
        )

    p.update(hooks)
    return FacadeConfig(
        producer=p,
        partitioner=read["partitioner"],
        sticky_linger_ms=read["sticky.partitioning.linger.ms"],
        max_messages=read["queue.buffering.max.messages"],
        max_bytes=read["queue.buffering.max.kbytes"] * 1024,
        on_delivery=read["on_delivery"],
        dr_only_error=read["delivery.report.only.error"],
        error_cb=read["error_cb"],
        stats_cb=read["stats_cb"],
        stats_interval_ms=read["statistics.interval.ms"],
        logger=read["logger"],
        log_level=read["log_level"],
        transactional=read["transactional.id"] is not None,
    )


def _tls(values: Dict[str, Any], p: Dict[str, Any], hooks: Dict[str, Any]) -> None:
    """security.protocol and librdkafka's PEM settings -> an ssl.SSLContext for the producer."""
    protocol = rd_choice(
        "security.protocol",
        values.pop("security.protocol", "plaintext"),
        ("plaintext", "ssl", "sasl_plaintext", "sasl_ssl"),
    )
    p["security.protocol"] = protocol
    if protocol.startswith("sasl"):
        _sasl(values, p, hooks)
    names = (
        "ssl.ca.location",
        "ssl.ca.pem",
        "ssl.certificate.location",
        "ssl.key.location",
        "ssl.key.password",
        "enable.ssl.certificate.verification",
        "ssl.endpoint.identification.algorithm",
    )
    settings = {n: values.pop(n) for n in names if n in values}
    if protocol not in ("ssl", "sasl_ssl"):
        if settings:
            raise _invalid(
                f"{sorted(settings)[0]} is set but security.protocol is {protocol}: set "
                "security.protocol=ssl"
            )
        return
    verify = rd_bool(
        "enable.ssl.certificate.verification",
        settings.get("enable.ssl.certificate.verification", True),
    )
    check_host = (
        rd_choice(
            "ssl.endpoint.identification.algorithm",
            settings.get("ssl.endpoint.identification.algorithm", "https"),
            ("none", "https"),
        )
        == "https"
    )
    context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
    cert = settings.get("ssl.certificate.location")
    key = settings.get("ssl.key.location")
    if (cert is None) != (key is None):
        raise _invalid("ssl.certificate.location and ssl.key.location go together")
    loading = "ssl.ca.location"
    try:
        if "ssl.ca.location" in settings:
            context.load_verify_locations(cafile=_text(loading, settings["ssl.ca.location"]))
        loading = "ssl.ca.pem"
        if "ssl.ca.pem" in settings:
            context.load_verify_locations(cadata=_text(loading, settings["ssl.ca.pem"]))
        loading = f"ssl.certificate.location={cert} / ssl.key.location={key}"
        if cert is not None:
            password = settings.get("ssl.key.password")
            context.load_cert_chain(
                _text("ssl.certificate.location", cert),
                _text("ssl.key.location", key),
                password=None if password is None else str(password),
            )
    except (OSError, ssl.SSLError) as exc:
        # the message names the setting and its file, never the password
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise _invalid(f"ssl: cannot load {loading}: {reason}") from None
    context.check_hostname = verify and check_host
    if not verify:
        context.verify_mode = ssl.CERT_NONE
    hooks["ssl_context"] = context


_OAUTHBEARER_MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"


class _OAuthCallback:
    """confluent-kafka's ``oauth_cb(sasl.oauthbearer.config)`` -> ``(token, expiry_s[,
    principal[, extensions]])`` as cproducer's token provider (``token()``, ``extensions()``)."""

    def __init__(self, callback: Callable[[Any], Any], config: Any) -> None:
        self._callback = callback
        self._config = config
        self._extensions: Dict[str, str] = {}

    def token(self) -> Tuple[str, float]:
        got = self._callback(self._config)
        if not isinstance(got, tuple) or len(got) < 2:
            raise TypeError("oauth_cb must return (token, expiry[, principal[, extensions]])")
        self._extensions = dict(got[3]) if len(got) > 3 and got[3] else {}
        return (got[0], got[1])

    def extensions(self) -> Dict[str, str]:
        return self._extensions

    def __repr__(self) -> str:  # never the token
        return f"_OAuthCallback({self._callback!r})"


def _sasl(values: Dict[str, Any], p: Dict[str, Any], hooks: Dict[str, Any]) -> None:
    """librdkafka's SASL settings onto cproducer's: PLAIN and SCRAM with sasl.username and
    sasl.password; OAUTHBEARER with ``oauth_cb``, OIDC (``sasl.oauthbearer.method=oidc``) or an
    unsecured JWT (``enable.sasl.oauthbearer.unsecure.jwt`` with ``sasl.oauthbearer.config``,
    turned into Java's unsecuredLogin* options)."""
    mechanism = _text("sasl.mechanism", values.pop("sasl.mechanism", "GSSAPI")).strip().upper()
    if mechanism == "GSSAPI":
        raise _invalid(
            "sasl.mechanism=GSSAPI (librdkafka's default): Kerberos is not supported by "
            "cproducer; set sasl.mechanism to PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER"
        )
    p["sasl.mechanism"] = mechanism
    for key in ("sasl.username", "sasl.password"):
        if key in values:
            p[key] = _text(key, values.pop(key))
    if mechanism != "OAUTHBEARER":
        return
    method = rd_choice(
        "sasl.oauthbearer.method",
        values.pop("sasl.oauthbearer.method", "default"),
        ("default", "oidc"),
    )
    oauth_cb = values.pop("oauth_cb", None)
    config = values.pop("sasl.oauthbearer.config", None)
    unsecure = rd_bool(
        "enable.sasl.oauthbearer.unsecure.jwt",
        values.pop("enable.sasl.oauthbearer.unsecure.jwt", False),
    )
    if method == "oidc":
        for theirs, ours in (
            ("sasl.oauthbearer.client.id", "sasl.oauthbearer.client.credentials.client.id"),
            ("sasl.oauthbearer.client.secret", "sasl.oauthbearer.client.credentials.client.secret"),
            ("sasl.oauthbearer.token.endpoint.url", "sasl.oauthbearer.token.endpoint.url"),
            ("sasl.oauthbearer.scope", "sasl.oauthbearer.scope"),
        ):
            if theirs in values:
                p[ours] = _text(theirs, values.pop(theirs))
        return
    if oauth_cb is not None:
        hooks["sasl_oauth_token_provider"] = _OAuthCallback(_callable("oauth_cb", oauth_cb), config)
        return
    if not unsecure:
        raise _invalid(
            "sasl.mechanism=OAUTHBEARER needs oauth_cb, sasl.oauthbearer.method=oidc, or "
            "enable.sasl.oauthbearer.unsecure.jwt=true with sasl.oauthbearer.config"
        )
    p["sasl.jaas.config"] = _unsecured_jaas(_text("sasl.oauthbearer.config", config or ""))


def _unsecured_jaas(config: str) -> str:
    """librdkafka's unsecured-JWT settings (``principal=alice lifeSeconds=300 scope=a,b
    extension_k=v``) as Java's JAAS line for its unsecured OAUTHBEARER login."""
    pairs: Dict[str, str] = {}
    for item in config.split():
        key, sep, value = item.partition("=")
        if not sep or '"' in value:
            raise _invalid(f"sasl.oauthbearer.config: {item!r} is not name=value")
        pairs[key] = value
    claim = pairs.pop("principalClaimName", "sub")
    scope_claim = pairs.pop("scopeClaimName", "scope")
    if "principal" not in pairs:
        raise _invalid("sasl.oauthbearer.config: principal= is required for unsecured JWTs")
    options = {
        "unsecuredLoginPrincipalClaimName": claim,
        f"unsecuredLoginStringClaim_{claim}": pairs.pop("principal"),
    }
    if "lifeSeconds" in pairs:
        options["unsecuredLoginLifetimeSeconds"] = pairs.pop("lifeSeconds")
    if "scope" in pairs:
        options[f"unsecuredLoginListClaim_{scope_claim}"] = "," + pairs.pop("scope")
    for key in [k for k in pairs if k.startswith("extension_")]:
        options["unsecuredLoginExtension_" + key[len("extension_") :]] = pairs.pop(key)
    if pairs:
        raise _invalid(f"sasl.oauthbearer.config: unknown setting {sorted(pairs)[0]!r}")
    body = " ".join(f'{k}="{v}"' for k, v in options.items())
    return f"{_OAUTHBEARER_MODULE} required {body};"
