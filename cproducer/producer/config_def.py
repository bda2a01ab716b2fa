"""How each producer setting is checked (Java's ``ConfigDef`` with its validators): the
``ConfigDef`` row of the settings table in :mod:`cproducer.producer.config` and the functions
that turn a given value into the setting's value or raise ``ConfigError`` naming the key, the
value and what is accepted."""

from __future__ import annotations

import math
import re
from typing import Any, Callable, List, NamedTuple, Optional, Tuple

from cproducer.errors import ConfigError
from cproducer.record import compression
from cproducer.security.password import Password
from cproducer.security.sasl_client import MECHANISMS as _SASL_MECHANISMS

_INT32_MAX = 2**31 - 1
_INT64_MAX = 2**63 - 1


class ConfigDef(NamedTuple):
    java_name: str
    default: Any
    check: Callable[[str, Any], Any]  # (name, value) -> normalized value, or raises ConfigError
    doc: str


def _int(lo: int = 0, hi: int = _INT64_MAX) -> Callable[[str, Any], int]:
    def check(name: str, value: Any) -> int:
        if isinstance(value, bool):
            raise ConfigError(f"{name}: expected an integer in [{lo}, {hi}], got bool {value!r}")
        if isinstance(value, str):
            try:
                value = int(value.strip())
            except ValueError:
                raise ConfigError(
                    f"{name}: expected an integer in [{lo}, {hi}], got {value!r}"
                ) from None
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if not isinstance(value, int):
            raise ConfigError(
                f"{name}: expected an integer in [{lo}, {hi}], got {type(value).__name__} {value!r}"
            )
        if not lo <= value <= hi:
            raise ConfigError(f"{name}: expected an integer in [{lo}, {hi}], got {value}")
        return value

    return check


def _bool(name: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise ConfigError(f"{name}: expected true or false, got {value!r}")


def _optional_str(name: str, value: Any) -> Optional[str]:
    if value is None or isinstance(value, str):
        return value
    raise ConfigError(f"{name}: expected a string or None, got {type(value).__name__}")


def _password(name: str, value: Any) -> Optional[Password]:
    """A secret: kept as a Password, which never shows itself in a repr or a message."""
    if value is None or isinstance(value, Password):
        return value
    if isinstance(value, str):
        return Password(value)
    raise ConfigError(f"{name}: expected a string or None, got {type(value).__name__}")


def _sasl_mechanism(name: str, value: Any) -> str:
    if isinstance(value, str) and value.strip().upper() in _SASL_MECHANISMS:
        return value.strip().upper()
    if isinstance(value, str) and value.strip().upper() == "GSSAPI":
        raise ConfigError(
            f"{name}: GSSAPI (Kerberos) is not supported; use one of {', '.join(_SASL_MECHANISMS)}"
        )
    raise ConfigError(f"{name}: expected one of {', '.join(_SASL_MECHANISMS)}, got {value!r}")


def _choice(*allowed: str) -> Callable[[str, Any], str]:
    def check(name: str, value: Any) -> str:
        if isinstance(value, str) and value.strip().lower() in allowed:
            return value.strip().lower()
        raise ConfigError(f"{name}: expected one of {', '.join(allowed)}, got {value!r}")

    return check


def _recording_level(name: str, value: Any) -> str:
    """metrics.recording.level: Java's INFO, DEBUG or TRACE (any case), normalized to upper."""
    if isinstance(value, str) and value.strip().upper() in ("INFO", "DEBUG", "TRACE"):
        return value.strip().upper()
    raise ConfigError(f"{name}: expected one of INFO, DEBUG, TRACE, got {value!r}")


def _acks(name: str, value: Any) -> int:
    """acks: "all"/-1, 0 or 1; normalized to the wire value (-1, 0, 1)."""
    if isinstance(value, str):
        v = value.strip().lower()
        if v == "all":
            return -1
        if v in ("-1", "0", "1"):
            return int(v)
    elif isinstance(value, int) and not isinstance(value, bool) and value in (-1, 0, 1):
        return value
    raise ConfigError(f"{name}: expected one of all, -1, 0, 1, got {value!r}")


_CODECS = tuple(compression.NAMES.values())


def _level(codec: int) -> Callable[[str, Any], int]:
    """KIP-390: the codec's default, or a level in its range (Java's *Compression.MIN/MAX_LEVEL)."""
    lo, hi = compression.LEVEL_RANGES[codec]
    default = compression.DEFAULT_LEVELS[codec]
    in_range = _int(lo, hi)

    def check(name: str, value: Any) -> int:
        if value == default and not isinstance(value, bool):
            return int(value)
        try:
            return in_range(name, value)
        except ConfigError:
            raise ConfigError(
                f"{name}: expected {default} (the default) or an integer in [{lo}, {hi}], "
                f"got {value!r}"
            ) from None

    return check


def _compression(name: str, value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, str) and value.strip().lower() in _CODECS:
        return value.strip().lower()
    raise ConfigError(f"{name}: expected one of None, {', '.join(_CODECS)}, got {value!r}")


def _servers(name: str, value: Any) -> List[Tuple[str, int]]:
    if isinstance(value, str):
        items = [s for s in (p.strip() for p in value.split(",")) if s]
    elif isinstance(value, (list, tuple)):
        items = list(value)
    else:
        raise ConfigError(
            f"{name}: expected 'host:port[,host:port...]' or a list of them, got {value!r}"
        )
    if not items:
        raise ConfigError(f"{name}: at least one host:port is required")
    out: List[Tuple[str, int]] = []
    for item in items:
        if isinstance(item, tuple) and len(item) == 2:
            host, port = item
        elif isinstance(item, str):
            m = re.fullmatch(r"(?:\[([^\]]+)\]|([^:\[\]\s]+))(?::(\d+))?", item.strip())
            if not m:
                raise ConfigError(f"{name}: {item!r} is not host:port")
            host, port = m.group(1) or m.group(2), int(m.group(3) or 9092)
        else:
            raise ConfigError(f"{name}: {item!r} is not host:port")
        if not isinstance(port, int) or not 0 < port < 65536:
            raise ConfigError(f"{name}: port of {item!r} must be in 1..65535")
        out.append((str(host), int(port)))
    return out


def _client_dns_lookup(name: str, value: Any) -> str:
    if isinstance(value, str) and value.strip().lower() == "default":
        # Java removed it in 3.0 (KIP-602): it tried only the first address of a name
        raise ConfigError(
            f"{name}: 'default' was removed in Kafka 3.0 (KIP-602); use use_all_dns_ips (try "
            "every address a name resolves to) or resolve_canonical_bootstrap_servers_only"
        )
    return _choice("use_all_dns_ips", "resolve_canonical_bootstrap_servers_only")(name, value)


def _any(name: str, value: Any) -> Any:
    return value


def _serializer(name: str, value: Any) -> Any:
    if value is None or callable(value) or hasattr(value, "serialize"):
        return value
    raise ConfigError(
        f"{name}: expected None, a callable (value -> bytes) or an object with serialize(), "
        f"got {type(value).__name__}"
    )


def _retries(name: str, value: Any) -> int:
    """kafka-python's ``float("inf")`` (its default): resend until ``delivery.timeout.ms``, which is
    what Java's default (the largest int) means too."""
    if isinstance(value, float) and math.isinf(value) and value > 0:
        return _INT32_MAX
    return _int(0, _INT32_MAX)(name, value)


def _socket_buffer(name: str, value: Any) -> int:
    """SO_SNDBUF / SO_RCVBUF in bytes; -1 (Java) or None (kafka-python): the OS's default."""
    return -1 if value is None else _int(-1, _INT32_MAX)(name, value)


#: the oldest broker release cproducer can talk to: it writes record batches v2 (Produce v3+)
MIN_API_VERSION = (0, 11)


def _api_version(name: str, value: Any) -> Optional[Tuple[int, ...]]:
    """kafka-python's ``api_version``: None or "auto" (negotiate with each broker), or the broker
    release to speak as, e.g. ``(2, 5, 0)`` (also the deprecated string form "2.5.0")."""
    expected = "a broker release tuple such as (2, 5, 0), 'auto' or None"
    if value is None:
        return None
    if isinstance(value, str):
        text = value.strip().lower()
        if text == "auto":
            return None
        try:
            value = tuple(int(part) for part in text.split("."))
        except ValueError:
            raise ConfigError(f"{name}: expected {expected}, got {value!r}") from None
    if isinstance(value, list):
        value = tuple(value)
    if (
        not isinstance(value, tuple)
        or not value
        or not all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in value)
    ):
        raise ConfigError(f"{name}: expected {expected}, got {value!r}")
    if value < MIN_API_VERSION:
        raise ConfigError(
            f"{name}={value}: cproducer writes record batches v2 (Produce v3 and later), which "
            "brokers speak from Kafka 0.11 on; it cannot talk to an older broker. Use a broker "
            "0.11 or later and api_version=None (each broker's versions are then negotiated)"
        )
    return value


def _socket_options(name: str, value: Any) -> List[Tuple[int, int, Any]]:
    """kafka-python's ``socket_options``: ``(level, option, value)`` triples for setsockopt."""
    if not isinstance(value, (list, tuple)):
        raise ConfigError(
            f"{name}: expected a list of (level, option, value) tuples for socket.setsockopt, "
            f"got {type(value).__name__}"
        )
    out = []
    for item in value:
        if (
            not isinstance(item, (list, tuple))
            or len(item) != 3
            or not all(isinstance(x, int) for x in item[:2])
            or not isinstance(item[2], (int, bytes))
        ):
            raise ConfigError(
                f"{name}: {item!r} is not a (level: int, option: int, value: int or bytes) tuple"
            )
        out.append((int(item[0]), int(item[1]), item[2]))
    return out


def _list(name: str, value: Any) -> list:
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return list(value)
    return [value]
