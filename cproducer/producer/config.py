"""Producer configuration: every key by its Java name, its Python name, type, default and check.

``ProducerConfig(configs_dict_or_None, **kwargs)`` accepts Java names (``{"linger.ms": 5}``) and
Python names (``linger_ms=5``), plus kafka-python's spellings (``partitioner``, ``interceptors``,
``ssl_cafile``, ...) and its options that Java has no name for (``api_version``,
``bootstrap_timeout_ms``, ``socket_options``, ...). Defaults are the Java 4.x client's. An unknown
key or a bad value raises :class:`cproducer.errors.ConfigError` naming the key and what is
allowed; a kafka-python option cproducer cannot honour is refused the same way, naming what to use
instead (it is never accepted and ignored).

Where Java and kafka-python give one setting different meanings, the spelling decides: the
kafka-python keyword behaves as kafka-python's (``partitioner=`` gets kafka-python's cluster view,
``retries=float("inf")``, ``send_buffer_bytes=None`` for the OS default), the dotted Java name as
Java's. Each value's check is in :mod:`cproducer.producer.config_def`.
"""

from __future__ import annotations

import difflib
import itertools
import socket
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Tuple

from cproducer.errors import ConfigError
from cproducer.producer.config_def import (
    _INT32_MAX,
    _INT64_MAX,
    ConfigDef,
    _acks,
    _any,
    _api_version,
    _bool,
    _choice,
    _client_dns_lookup,
    _compression,
    _int,
    _level,
    _list,
    _optional_str,
    _password,
    _recording_level,
    _retries,
    _sasl_mechanism,
    _serializer,
    _servers,
    _socket_buffer,
    _socket_options,
)
from cproducer.record import compression

_DEFS: Tuple[ConfigDef, ...] = (
    ConfigDef(
        "bootstrap.servers",
        "localhost:9092",
        _servers,
        "host:port pairs to connect to first; the whole cluster is discovered from them "
        "(kafka-python's default, localhost:9092, when not given)",
    ),
    ConfigDef(
        "client.id",
        "",
        _optional_str,
        "name sent with every request, for the brokers' logs and quotas (default: producer-N)",
    ),
    ConfigDef(
        "acks",
        "all",
        _acks,
        "acknowledgements a request waits for: all (-1) in-sync replicas, 1 leader, 0 none",
    ),
    ConfigDef(
        "compression.type",
        "none",
        _compression,
        "codec of each batch's records: none, gzip, snappy, lz4 or zstd",
    ),
    ConfigDef(
        "compression.gzip.level",
        compression.DEFAULT_LEVELS[compression.CODEC_GZIP],
        _level(compression.CODEC_GZIP),
        "gzip level, 1-9 (-1 = zlib's default, 6)",
    ),
    ConfigDef(
        "compression.lz4.level",
        compression.DEFAULT_LEVELS[compression.CODEC_LZ4],
        _level(compression.CODEC_LZ4),
        "lz4 level, 1-17 (9, the default, is lz4's fast compressor; others its HC mode)",
    ),
    ConfigDef(
        "compression.zstd.level",
        compression.DEFAULT_LEVELS[compression.CODEC_ZSTD],
        _level(compression.CODEC_ZSTD),
        "zstd level (negative: faster, 22: smallest)",
    ),
    ConfigDef(
        "batch.size",
        16384,
        _int(0, _INT32_MAX),
        "bytes per batch of one partition's records (a larger record gets a batch of its own); "
        "0 turns batching off: every record is a batch of its own",
    ),
    ConfigDef(
        "linger.ms",
        5,
        _int(0, _INT32_MAX),
        "how long a batch waits for more records before it is sent",
    ),
    ConfigDef(
        "buffer.memory",
        33554432,
        _int(0, _INT64_MAX),
        "bytes of all the batches waiting to be sent; send() blocks when they are used",
    ),
    ConfigDef(
        "max.block.ms",
        60000,
        _int(0, _INT64_MAX),
        "longest that send(), partitions_for() and init_transactions() block (metadata, memory)",
    ),
    ConfigDef(
        "max.request.size",
        1048576,
        _int(0, _INT32_MAX),
        "largest request, and so the largest record, in bytes",
    ),
    ConfigDef(
        "request.timeout.ms",
        30000,
        _int(0, _INT32_MAX),
        "how long to wait for a broker's answer before retrying or failing",
    ),
    ConfigDef(
        "delivery.timeout.ms",
        120000,
        _int(0, _INT32_MAX),
        "bound from send() to success or failure, retries included",
    ),
    ConfigDef(
        "retries",
        _INT32_MAX,
        _retries,
        "how many times a failed batch is resent (within delivery.timeout.ms); "
        'float("inf") as the default: until delivery.timeout.ms',
    ),
    ConfigDef(
        "retry.backoff.ms",
        100,
        _int(0, _INT64_MAX),
        "wait before a batch's first resend; it doubles per attempt, with jitter",
    ),
    ConfigDef("retry.backoff.max.ms", 1000, _int(0, _INT64_MAX), "longest wait between resends"),
    ConfigDef(
        "max.in.flight.requests.per.connection",
        5,
        _int(1, _INT32_MAX),
        "requests sent to a broker and not yet answered",
    ),
    ConfigDef(
        "enable.idempotence",
        True,
        _bool,
        "every record written once and in order per partition, despite resends",
    ),
    ConfigDef(
        "transactional.id",
        None,
        _optional_str,
        "id that makes the producer transactional (init/begin/commit_transaction)",
    ),
    ConfigDef(
        "transaction.timeout.ms",
        60000,
        _int(0, _INT32_MAX),
        "the coordinator aborts a transaction left open longer than this",
    ),
    ConfigDef(
        "key.serializer",
        None,
        _serializer,
        "turns keys into bytes: a callable or an object with serialize(topic, key)",
    ),
    ConfigDef(
        "value.serializer",
        None,
        _serializer,
        "turns values into bytes: a callable or an object with serialize(topic, value)",
    ),
    ConfigDef(
        "partitioner.class",
        None,
        _any,
        "custom partitioner: an object, class or callable, or a legacy one's name",
    ),
    ConfigDef(
        "partitioner.ignore.keys",
        False,
        _bool,
        "partition keyed records like unkeyed ones (sticky) instead of by hash",
    ),
    ConfigDef(
        "partitioner.adaptive.partitioning.enable",
        True,
        _bool,
        "send fewer unkeyed records to slower brokers (KIP-794)",
    ),
    ConfigDef(
        "partitioner.availability.timeout.ms",
        0,
        _int(0, _INT64_MAX),
        "a partition whose broker took no batch for this long is skipped (0: never)",
    ),
    ConfigDef(
        "interceptor.classes",
        [],
        _list,
        "ProducerInterceptor objects that see every record and acknowledgement",
    ),
    ConfigDef(
        "metadata.max.age.ms",
        300000,
        _int(0, _INT64_MAX),
        "metadata is refreshed at least this often",
    ),
    ConfigDef(
        "metadata.max.idle.ms",
        300000,
        _int(5000, _INT64_MAX),
        "a topic not sent to for this long leaves the metadata",
    ),
    ConfigDef(
        "metadata.recovery.strategy",
        "rebootstrap",
        _choice("none", "rebootstrap"),
        "KIP-899: when no known broker can be reached, go back to bootstrap.servers",
    ),
    ConfigDef(
        "metadata.recovery.rebootstrap.trigger.ms",
        300000,
        _int(0, _INT64_MAX),
        "KIP-1102: rebootstrap when no metadata could be had for this long",
    ),
    ConfigDef(
        "client.dns.lookup",
        "use_all_dns_ips",
        _client_dns_lookup,
        "KIP-602: try every address of a name; or resolve_canonical_bootstrap_servers_only",
    ),
    ConfigDef(
        "reconnect.backoff.ms",
        50,
        _int(0, _INT64_MAX),
        "wait before reconnecting to a broker; it doubles per failure, with jitter",
    ),
    ConfigDef(
        "reconnect.backoff.max.ms", 1000, _int(0, _INT64_MAX), "longest wait before reconnecting"
    ),
    ConfigDef(
        "socket.connection.setup.timeout.ms",
        10000,
        _int(0, _INT64_MAX),
        "how long a connection may take to set up",
    ),
    ConfigDef(
        "socket.connection.setup.timeout.max.ms",
        30000,
        _int(0, _INT64_MAX),
        "longest connection setup timeout (doubles per failure)",
    ),
    ConfigDef(
        "send.buffer.bytes",
        131072,
        _socket_buffer,
        "socket send buffer, SO_SNDBUF (-1 or None: the OS's default)",
    ),
    ConfigDef(
        "receive.buffer.bytes",
        32768,
        _socket_buffer,
        "socket receive buffer, SO_RCVBUF (-1 or None: the OS's default)",
    ),
    ConfigDef(
        "socket_options",
        [(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)],
        _socket_options,
        "(level, option, value) triples set with setsockopt on every broker connection's socket "
        "(kafka-python's; the default turns Nagle's algorithm off)",
    ),
    ConfigDef(
        "receive_message_max_bytes",
        100 * 1024 * 1024,
        _int(1, _INT32_MAX),
        "largest answer a broker may send; a longer one is taken for a corrupt stream and the "
        "connection closed (kafka-python's)",
    ),
    ConfigDef(
        "api_version",
        None,
        _api_version,
        "None or 'auto': each broker's protocol versions are negotiated; a broker release, e.g. "
        "(2, 5, 0): no request newer than that release speaks is sent (kafka-python's; 0.11 "
        "at the oldest)",
    ),
    ConfigDef(
        "bootstrap_timeout_ms",
        None,
        _int(0, _INT64_MAX),
        "when set, the constructor waits up to this long for the cluster's first metadata and "
        "raises KafkaTimeoutError without it (kafka-python's); unset: it does not wait, as Java",
    ),
    ConfigDef(
        "allow.auto.create.topics",
        True,
        _bool,
        "whether a metadata request for a missing topic may make the broker create it (when "
        "the broker allows it); false: sending to a missing topic times out",
    ),
    ConfigDef(
        "metrics_enabled",
        True,
        _bool,
        "false: metrics() returns {} (kafka-python's)",
    ),
    ConfigDef("connections.max.idle.ms", 540000, _int(0, _INT64_MAX), "idle close"),
    ConfigDef(
        "metrics.num.samples",
        2,
        _int(1, _INT32_MAX),
        "samples kept to compute the windowed metrics (rates, averages, maxima) of metrics()",
    ),
    ConfigDef(
        "metrics.sample.window.ms",
        30000,
        _int(1, _INT64_MAX),
        "how long one metrics sample takes values; metrics() looks back num.samples of them",
    ),
    ConfigDef(
        "metrics.recording.level",
        "INFO",
        _recording_level,
        "INFO, DEBUG or TRACE: DEBUG and TRACE also record the I/O thread's time metrics",
    ),
    ConfigDef(
        "security.protocol",
        "plaintext",
        _choice("plaintext", "ssl", "sasl_plaintext", "sasl_ssl"),
        "PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL",
    ),
    ConfigDef("ssl.truststore.location", None, _optional_str, "CA certificates (PEM file)"),
    ConfigDef("ssl.truststore.type", "PEM", _choice("pem"), "only PEM"),
    ConfigDef("ssl.keystore.location", None, _optional_str, "client cert chain + key (PEM file)"),
    ConfigDef("ssl.keystore.type", "PEM", _choice("pem"), "only PEM"),
    ConfigDef("ssl.key.password", None, _password, "password of the keystore's key"),
    ConfigDef(
        "ssl_keyfile",
        None,
        _optional_str,
        "the client's private key (PEM) when ssl.keystore.location holds only its certificate "
        "chain (kafka-python's)",
    ),
    ConfigDef(
        "ssl_crlfile",
        None,
        _optional_str,
        "certificate revocation list (PEM): a broker certificate it revokes is refused "
        "(kafka-python's; the leaf certificate is checked)",
    ),
    ConfigDef(
        "ssl_ciphers",
        None,
        _optional_str,
        "the TLS ciphers allowed, in OpenSSL's cipher list format (kafka-python's)",
    ),
    ConfigDef(
        "ssl.endpoint.identification.algorithm",
        "https",
        _choice("https", ""),
        "'https': the certificate must name the broker's host; '': chain only",
    ),
    ConfigDef("sasl.mechanism", None, _sasl_mechanism, "PLAIN, SCRAM-SHA-256/512, OAUTHBEARER"),
    ConfigDef("sasl.jaas.config", None, _password, "Java's JAAS login module line"),
    ConfigDef("sasl.username", None, _optional_str, "PLAIN/SCRAM user (librdkafka's name)"),
    ConfigDef("sasl.password", None, _password, "PLAIN/SCRAM password (librdkafka's name)"),
    ConfigDef(
        "sasl.login.callback.handler.class",
        None,
        _optional_str,
        "only Java's OAuthBearerLoginCallbackHandler (with a token endpoint)",
    ),
    ConfigDef("sasl.oauthbearer.token.endpoint.url", None, _optional_str, "OIDC token endpoint"),
    ConfigDef(
        "sasl.oauthbearer.client.credentials.client.id", None, _optional_str, "OIDC client id"
    ),
    ConfigDef("sasl.oauthbearer.client.credentials.client.secret", None, _password, "OIDC secret"),
    ConfigDef("sasl.oauthbearer.scope", None, _optional_str, "OIDC scope"),
)

CONFIG_DEFS: Dict[str, ConfigDef] = {d.java_name: d for d in _DEFS}

#: Python spellings: the Java name with dots as underscores, plus kafka-python's aliases.
_ALIASES: Dict[str, str] = {d.java_name.replace(".", "_"): d.java_name for d in _DEFS}
_ALIASES.update(
    {
        "partitioner": "partitioner.class",
        "interceptors": "interceptor.classes",
        "ssl_cafile": "ssl.truststore.location",
        "ssl_certfile": "ssl.keystore.location",
        "ssl_password": "ssl.key.password",
        "ssl_check_hostname": "ssl.endpoint.identification.algorithm",
        # kafka-python's SASL settings
        "sasl_plain_username": "sasl.username",
        "sasl_plain_password": "sasl.password",
        # librdkafka's spellings
        "sasl.mechanisms": "sasl.mechanism",
        "sasl.oauthbearer.client.id": "sasl.oauthbearer.client.credentials.client.id",
        "sasl.oauthbearer.client.secret": "sasl.oauthbearer.client.credentials.client.secret",
    }
)
_ALIASES.update({d.java_name: d.java_name for d in _DEFS})

#: Options kafka-python names and Java does not: their Python name is their only name.
KAFKA_PYTHON_ONLY = frozenset(d.java_name for d in _DEFS if "." not in d.java_name) - {"acks"}

#: Aliases whose value is converted on the way: kafka-python's ``ssl_check_hostname`` (a bool) is
#: Java's ``ssl.endpoint.identification.algorithm`` ("https" or "").
_CONVERSIONS: Dict[str, Callable[[str, Any], Any]] = {
    "ssl_check_hostname": lambda name, value: "https" if _bool(name, value) else "",
}

_GSSAPI = (
    "SASL GSSAPI (Kerberos) is not supported: use sasl_mechanism PLAIN, SCRAM-SHA-256, "
    "SCRAM-SHA-512 or OAUTHBEARER"
)
_PROXY = (
    "SOCKS5 proxies are not supported: the producer connects to the bootstrap servers and to "
    "every broker they advertise directly; run it where those addresses are reachable"
)

#: kafka-python options cproducer does not take, each with what to do instead (a ConfigError).
REFUSED: Dict[str, str] = {
    "kafka_client": (
        "kafka-python's network client class cannot be swapped in: cproducer has its own "
        "NetworkClient; remove kafka_client (socket settings go in socket_options, "
        "send_buffer_bytes, receive_buffer_bytes)"
    ),
    "metric_reporters": (
        "metric reporters are not supported: read producer.metrics() instead (e.g. on a "
        "schedule in a thread of yours) and hand the values to your reporting system"
    ),
    "sasl_kerberos_name": _GSSAPI,
    "sasl_kerberos_service_name": _GSSAPI,
    "sasl_kerberos_domain_name": _GSSAPI,
    "proxy_url": _PROXY,
    "socks5_proxy": _PROXY,
    "wakeup_timeout_ms": (
        "kafka-python's network client setting, not a producer option: use max_block_ms, "
        "which bounds the producer's blocking calls"
    ),
    "api_version_auto_timeout_ms": (
        "kafka-python 2's name: use bootstrap_timeout_ms (kafka-python 3's), with which the "
        "constructor waits for the cluster's first metadata"
    ),
}

#: Settings that are not Kafka configs but objects: hooks (tests, the test proxy), an ssl_context,
#: kafka-python's sasl_oauth_token_provider. ``clock``: a cproducer.utils.time.Clock; ``time_ms``:
#: a function of ms for both of its clocks; ``random``: the built-in partitioner's zero-argument
#: int source; ``host_resolver(host) -> [IP address, ...]``: the addresses to try, in order
#: (Java's HostResolver)
_HOOKS = (
    "clock",
    "time_ms",
    "socket_factory",
    "random",
    "ssl_context",
    "sasl_oauth_token_provider",
    "host_resolver",
    "selector",  # kafka-python's: the selectors.BaseSelector class the I/O thread polls with
    "batch_max_records",  # the confluent-kafka facade: librdkafka's batch.num.messages
    "null_records",  # the confluent-kafka facade: send() takes a record without key and value
)

_client_ids = itertools.count(1)


def _unknown_key_message(key: Any) -> str:
    """The refusal of an unknown key, with the closest known key in the user's own spelling
    (Java's dotted names or Python's underscored ones): a list of all seventy would hide it."""
    if not isinstance(key, str):
        return f"config keys are strings, got {key!r} ({type(key).__name__})"
    dotted = "." in key
    names = [n for n in (*_ALIASES, *_HOOKS, *REFUSED) if ("." in n) == dotted]
    if dotted:
        names.extend(d.java_name for d in _DEFS)
    close = difflib.get_close_matches(key.lower(), sorted(set(names)), n=2, cutoff=0.75)
    if close:
        hint = " or ".join(repr(n) for n in close)
        return f"unknown producer config {key!r}; did you mean {hint}?"
    return (
        f"unknown producer config {key!r}: no setting is spelled like it (the docs' "
        "configuration reference lists them all, with their Java and Python names)"
    )


class ProducerConfig:
    """The validated settings of one producer; ``cfg["linger.ms"]`` or ``cfg.linger_ms``."""

    def __init__(self, configs: Optional[Mapping[str, Any]] = None, **kwargs: Any) -> None:
        values: Dict[str, Any] = {}
        self.explicit: set = set()
        #: the key each explicit setting was given by (Java name -> the name used)
        self.spelling: Dict[str, str] = {}
        self.hooks: Dict[str, Any] = {}
        items: List[Tuple[str, Any]] = []
        if configs is not None:
            if not isinstance(configs, Mapping):
                raise ConfigError(
                    f"configs: expected a dict of Java config names, got {type(configs).__name__}"
                )
            items.extend(configs.items())
        items.extend(kwargs.items())
        for key, value in items:
            if key in _HOOKS:
                self.hooks[key] = value
                continue
            java = _ALIASES.get(key)
            if java is None:
                refused = REFUSED.get(key)
                if refused is not None:
                    if key == "metric_reporters" and not value:
                        continue  # no reporters: what cproducer does
                    raise ConfigError(f"{key}: {refused}")
                raise ConfigError(_unknown_key_message(key))
            convert = _CONVERSIONS.get(key)
            if convert is not None:
                value = convert(key, value)
            if java in self.explicit and values[java] != value:
                raise ConfigError(f"{java}: given twice with different values")
            values[java] = value
            self.explicit.add(java)
            self.spelling[java] = key
        self._values: Dict[str, Any] = {}
        for d in _DEFS:
            raw = values.get(d.java_name, d.default)
            if raw is not None or d.check is _socket_buffer:
                self._values[d.java_name] = d.check(d.java_name, raw)
            else:
                self._values[d.java_name] = None
        self._post_process()

    def _post_process(self) -> None:
        v = self._values
        if v["bootstrap.servers"] is None:
            raise ConfigError("bootstrap.servers: expected 'host:port[,host:port...]', got None")
        if not v["client.id"]:
            v["client.id"] = f"producer-{next(_client_ids)}"
        # Java's ProducerConfig.postProcessAndValidateIdempotenceConfigs
        idem_explicit = "enable.idempotence" in self.explicit
        if v["enable.idempotence"]:
            conflicts = []
            if v["acks"] != -1:
                conflicts.append("acks must be all")
            if v["retries"] == 0:
                conflicts.append("retries must be > 0")
            if v["max.in.flight.requests.per.connection"] > 5:
                conflicts.append("max.in.flight.requests.per.connection must be <= 5")
            if conflicts:
                if idem_explicit:
                    raise ConfigError("enable.idempotence=true needs: " + "; ".join(conflicts))
                v["enable.idempotence"] = False
        if v["transactional.id"] is not None and not v["enable.idempotence"]:
            raise ConfigError(
                "transactional.id needs enable.idempotence=true (and so acks=all, retries > 0, "
                "max.in.flight.requests.per.connection <= 5)"
            )
        # Java's KafkaProducer.configureDeliveryTimeout
        floor = v["linger.ms"] + v["request.timeout.ms"]
        if v["delivery.timeout.ms"] < floor:
            if "delivery.timeout.ms" in self.explicit:
                raise ConfigError(
                    f"delivery.timeout.ms should be equal to or larger than linger.ms + "
                    f"request.timeout.ms ({floor}), got {v['delivery.timeout.ms']}"
                )
            v["delivery.timeout.ms"] = floor
        if v["retry.backoff.max.ms"] < v["retry.backoff.ms"]:
            v["retry.backoff.max.ms"] = v["retry.backoff.ms"]
        if v["reconnect.backoff.max.ms"] < v["reconnect.backoff.ms"]:
            v["reconnect.backoff.max.ms"] = v["reconnect.backoff.ms"]
        # kafka-python's checks of a given broker release against the codec (ZStandard: Produce
        # v7, Kafka 2.1)
        if v["api_version"] is not None and v["compression.type"] == "zstd":
            if v["api_version"] < (2, 1):
                raise ConfigError(
                    f"compression.type=zstd needs Kafka 2.1 or later, but api_version is "
                    f"{v['api_version']}: use another codec or a later api_version"
                )

    def __getitem__(self, java_name: str) -> Any:
        return self._values[java_name]

    def __getattr__(self, name: str) -> Any:
        java = _ALIASES.get(name)
        if java is None or name.startswith("_"):
            raise AttributeError(name)
        return self._values[java]

    def as_dict(self) -> Dict[str, Any]:
        return dict(self._values)

    def __repr__(self) -> str:
        return f"ProducerConfig({self._values!r})"


def known_names() -> Iterable[str]:
    return [d.java_name for d in _DEFS]
