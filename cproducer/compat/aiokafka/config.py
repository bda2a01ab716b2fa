"""aiokafka's producer settings -> the engine's configuration, keeping aiokafka's defaults.

A user who only switched the import keeps aiokafka's behaviour, so the engine gets aiokafka's
values, not the Java client's: ``acks=1`` (``all`` with idempotence), ``enable_idempotence=False``,
``linger_ms=0``, ``max_batch_size=16384``, ``request_timeout_ms=40000``, constant
``retry_backoff_ms=100``, ``metadata_max_age_ms=300000``, ``connections_max_idle_ms=540000``.

How aiokafka's behaviours map onto the engine:

- one Produce request in flight per broker, one batch per partition in it (aiokafka's sender
  waits for a node's answer before it sends that node more): ``max.in.flight.requests.per
  .connection=1``, which also makes the engine keep a partition's order across retries;
- ``request_timeout_ms`` bounds a send's wait for buffer space and for metadata
  (``max.block.ms``), each request, and, without idempotence, a batch's life (aiokafka expires a
  batch ``request_timeout_ms`` after it was made; the engine after ``linger.ms`` +
  ``request.timeout.ms``); with idempotence aiokafka never expires a batch, nor does the engine;
- SASL: PLAIN and SCRAM with ``sasl_plain_username``/``sasl_plain_password``, OAUTHBEARER with
  aiokafka's token provider (its coroutine run on the loop: ``token_provider.py``); GSSAPI
  (Kerberos) is refused; without a SASL protocol the SASL settings are ignored, as aiokafka does;
- bad values raise what aiokafka raises (``ValueError`` for acks and compression, ``RuntimeError``
  for a missing codec library); what the engine cannot do is refused with a message saying so.
"""

from __future__ import annotations

import itertools
import warnings
from typing import Any, Dict, List, Union

from cproducer.record.compression import check_available, codec_id

_INT32_MAX = 2**31 - 1
_INT64_MAX = 2**63 - 1
_client_ids = itertools.count(1)

#: a keyword's default: the value aiokafka uses when the user leaves it out
MISSING: Any = object()

#: aiokafka's SASL settings and their defaults
SASL_DEFAULTS: Dict[str, Any] = {
    "sasl_mechanism": "PLAIN",
    "sasl_plain_password": None,
    "sasl_plain_username": None,
    "sasl_kerberos_service_name": "kafka",
    "sasl_kerberos_domain_name": None,
    "sasl_oauth_token_provider": None,
}


def _sasl_config(sasl: Dict[str, Any]) -> Dict[str, Any]:
    """The engine's SASL settings from aiokafka's (checked as aiokafka checks them)."""
    mechanism = sasl.get("sasl_mechanism", "PLAIN")
    if mechanism not in ("PLAIN", "GSSAPI", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"):
        raise ValueError(
            "only `PLAIN`, `GSSAPI`, `SCRAM-SHA-256`, `SCRAM-SHA-512` and `OAUTHBEARER` "
            "sasl_mechanism are supported"
        )
    if mechanism == "GSSAPI":
        raise ValueError(
            "sasl_mechanism='GSSAPI': Kerberos is not supported by cproducer; use PLAIN, "
            "SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER"
        )
    for name in ("sasl_kerberos_service_name", "sasl_kerberos_domain_name"):
        if sasl.get(name, SASL_DEFAULTS[name]) != SASL_DEFAULTS[name]:
            raise ValueError(f"{name}: a GSSAPI (Kerberos) setting, and GSSAPI is not supported")
    out: Dict[str, Any] = {"sasl_mechanism": mechanism}
    if mechanism == "OAUTHBEARER":
        provider = sasl.get("sasl_oauth_token_provider")
        if provider is None or not callable(getattr(provider, "token", None)):
            raise ValueError(
                "sasl_oauth_token_provider needs to be provided implementing "
                "aiokafka.abc.AbstractTokenProvider (an object with token())"
            )
        out["sasl_oauth_token_provider"] = provider
        return out
    username, password = sasl.get("sasl_plain_username"), sasl.get("sasl_plain_password")
    if username is None or password is None:
        raise ValueError(
            f"sasl_plain_username and sasl_plain_password required for {mechanism} sasl"
        )
    out["sasl_plain_username"] = username
    out["sasl_plain_password"] = password
    return out


def _servers(value: Union[str, List[str]]) -> Union[str, List[str]]:
    if isinstance(value, (str, list, tuple)):
        return value if isinstance(value, str) else list(value)
    raise ValueError(f"bootstrap_servers: expected 'host[:port]' or a list of them, got {value!r}")


def engine_config(
    *,
    bootstrap_servers: Union[str, List[str]],
    client_id: Any,
    metadata_max_age_ms: int,
    request_timeout_ms: int,
    api_version: Any,
    acks: Any,
    compression_type: Any,
    max_batch_size: int,
    max_request_size: int,
    linger_ms: int,
    retry_backoff_ms: int,
    security_protocol: str,
    ssl_context: Any,
    connections_max_idle_ms: Any,
    enable_idempotence: bool,
    transactional_id: Any,
    transaction_timeout_ms: int,
    sasl: Dict[str, Any],
) -> Dict[str, Any]:
    """The engine's ``KafkaProducer`` keywords for an ``AIOKafkaProducer(...)`` call (raises what
    aiokafka raises for a bad value)."""
    if api_version is not None:
        warnings.warn(
            "api_version is ignored, as aiokafka (since 0.13) ignores it: the versions of every "
            "request are negotiated with the broker",
            DeprecationWarning,
            stacklevel=3,
        )
    if acks is not MISSING and acks not in (0, 1, -1, "all"):
        raise ValueError("Invalid ACKS parameter")
    if compression_type not in ("gzip", "snappy", "lz4", "zstd", None):
        raise ValueError("Invalid compression type!")
    if compression_type is not None:
        try:
            check_available(codec_id(compression_type))
        except ImportError as exc:
            raise RuntimeError(
                f"Compression library for {compression_type} not found: {exc}"
            ) from None
    if transactional_id is not None:
        enable_idempotence = True
    if enable_idempotence:
        if acks is MISSING:
            acks = -1
        elif acks not in ("all", -1):
            raise ValueError(f"acks={acks} not supported if enable_idempotence=True")
    elif acks is MISSING:
        acks = 1
    if security_protocol not in ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"):
        raise ValueError("`security_protocol` should be SSL, PLAINTEXT, SASL_PLAINTEXT or SASL_SSL")
    if security_protocol in ("SSL", "SASL_SSL") and ssl_context is None:
        raise ValueError("`ssl_context` is mandatory if security_protocol=='SSL'")
    if security_protocol.startswith("SASL"):
        sasl_config = _sasl_config(sasl)
    else:
        sasl_config = {}  # aiokafka ignores the SASL settings without a SASL protocol
    if client_id is None:
        client_id = f"aiokafka-producer-{next(_client_ids)}"
    config: Dict[str, Any] = {
        "bootstrap_servers": _servers(bootstrap_servers),
        "client_id": client_id,
        "metadata_max_age_ms": metadata_max_age_ms,
        "request_timeout_ms": request_timeout_ms,
        "max_block_ms": request_timeout_ms,
        "acks": acks,
        "compression_type": compression_type or "none",
        "batch_size": max_batch_size,
        "max_request_size": max_request_size,
        "linger_ms": linger_ms,
        "retry_backoff_ms": retry_backoff_ms,
        "retry_backoff_max_ms": retry_backoff_ms,
        "max_in_flight_requests_per_connection": 1,
        "connections_max_idle_ms": (
            _INT64_MAX if connections_max_idle_ms is None else connections_max_idle_ms
        ),
        "enable_idempotence": bool(enable_idempotence),
        "security_protocol": security_protocol.lower(),
        **sasl_config,
    }
    # aiokafka expires a batch request_timeout_ms after it was made; the engine counts linger too
    # (and wants at least linger + request timeout). With idempotence aiokafka never expires one.
    config["delivery_timeout_ms"] = (
        _INT32_MAX if enable_idempotence else linger_ms + request_timeout_ms
    )
    if ssl_context is not None:
        config["ssl_context"] = ssl_context
    if transactional_id is not None:
        config["transactional_id"] = transactional_id
        config["transaction_timeout_ms"] = transaction_timeout_ms
    return config
