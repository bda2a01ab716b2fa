"""The wiring of a producer's engine from its configuration: metadata, buffer pool, metrics,
transaction manager, record accumulator, network client and Sender (Java's ``KafkaProducer``
constructor, which builds the same parts in the same order).

``build_components`` makes them, connected to one another, without starting anything: the
producer starts the Sender's thread once it has set up its own send path.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Callable, Dict, Optional

from cproducer import errors
from cproducer.network.host_resolver import (
    USE_ALL_DNS_IPS,
    check_host_resolver,
    default_host_resolver,
)
from cproducer.network.host_resolver import bootstrap_addresses as resolve_bootstrap
from cproducer.network.network_client import NetworkClient, default_socket_factory
from cproducer.network.network_metrics import NetworkMetrics
from cproducer.network.tls import ssl_context_from_config, tls_socket_factory
from cproducer.producer.config import ProducerConfig
from cproducer.producer.internals.buffer_pool import BufferPool
from cproducer.producer.internals.producer_metadata import ProducerMetadata
from cproducer.producer.internals.record_accumulator import RecordAccumulator
from cproducer.producer.internals.sender import Sender
from cproducer.producer.internals.sender_metrics import SenderMetrics
from cproducer.producer.internals.transaction_manager import TransactionManager
from cproducer.record import compression
from cproducer.record.compression import codec_id
from cproducer.security.login import sasl_login_from_config
from cproducer.security.password import reveal
from cproducer.security.sasl_authenticator import SaslClientAuthenticator
from cproducer.utils.sampled_stat import MetricConfig
from cproducer.utils.time import Clock


@dataclass
class ProducerComponents:
    """The engine's parts, connected: what ``KafkaProducer`` drives."""

    metadata: ProducerMetadata
    pool: BufferPool
    network_metrics: NetworkMetrics
    sender_metrics: SenderMetrics
    #: None without idempotence
    transaction_manager: Optional[TransactionManager]
    accumulator: RecordAccumulator
    client: NetworkClient
    sender: Sender
    #: the SASL credentials (None without SASL); closed with the producer
    sasl_login: Any


def build_components(
    cfg: ProducerConfig, clock: Clock, batch_time_ms: Callable[[], int]
) -> ProducerComponents:
    """Make the engine's parts for ``cfg``. ``clock``: the producer's clock; ``batch_time_ms``:
    the monotonic time batches and topic uses are stamped with."""
    host_resolver = check_host_resolver(cfg.hooks.get("host_resolver", default_host_resolver))
    metadata = _metadata(cfg, batch_time_ms, host_resolver)
    pool = BufferPool(cfg["buffer.memory"], cfg["batch.size"])
    metric_config = MetricConfig.from_config(cfg)
    network_metrics = NetworkMetrics(metric_config)
    sender_metrics = SenderMetrics(metric_config, pool)
    transaction_manager = (
        TransactionManager(
            cfg["transactional.id"], cfg["transaction.timeout.ms"], cfg["retry.backoff.ms"]
        )
        if cfg["enable.idempotence"]
        else None
    )
    accumulator = _accumulator(cfg, pool, transaction_manager)
    client_kwargs = _socket_kwargs(cfg)
    # SASL: the credentials resolved once (an OIDC login fetches its first token now, and a
    # refusal fails the constructor, as Java's login does); every connection authenticates
    # with them through its own SaslClientAuthenticator
    sasl_login = sasl_login_from_config(cfg.as_dict(), cfg.hooks.get("sasl_oauth_token_provider"))
    if sasl_login is not None:
        login = sasl_login
        client_kwargs["sasl_authenticator_factory"] = lambda node_id: SaslClientAuthenticator(
            login.mechanism, login.new_client, node_id
        )
    client = NetworkClient(
        client_id=cfg["client.id"],
        metadata=metadata,
        reconnect_backoff_ms=cfg["reconnect.backoff.ms"],
        reconnect_backoff_max_ms=cfg["reconnect.backoff.max.ms"],
        request_timeout_ms=cfg["request.timeout.ms"],
        max_in_flight_requests_per_connection=cfg["max.in.flight.requests.per.connection"],
        socket_connection_setup_timeout_ms=cfg["socket.connection.setup.timeout.ms"],
        socket_connection_setup_timeout_max_ms=cfg["socket.connection.setup.timeout.max.ms"],
        send_buffer_bytes=cfg["send.buffer.bytes"],
        receive_buffer_bytes=cfg["receive.buffer.bytes"],
        connections_max_idle_ms=cfg["connections.max.idle.ms"],
        max_response_size=cfg["receive_message_max_bytes"],
        api_version=cfg["api_version"],
        selector=cfg.hooks.get("selector"),
        clock=clock,
        host_resolver=host_resolver,
        metadata_recovery_strategy=cfg["metadata.recovery.strategy"],
        metadata_recovery_rebootstrap_trigger_ms=cfg["metadata.recovery.rebootstrap.trigger.ms"],
        metrics=network_metrics,
        **client_kwargs,
    )
    sender = Sender(
        client,
        metadata,
        accumulator,
        guarantee_message_order=cfg["max.in.flight.requests.per.connection"] == 1,
        max_request_size=cfg["max.request.size"],
        acks=cfg["acks"],
        retries=cfg["retries"],
        request_timeout_ms=cfg["request.timeout.ms"],
        delivery_timeout_ms=cfg["delivery.timeout.ms"],
        transaction_manager=transaction_manager,
        client_id=cfg["client.id"],
        clock=clock,
        batch_time_ms=batch_time_ms,
        metrics=sender_metrics,
    )
    # a send about to wait for memory wakes the Sender: sending is what frees it
    accumulator.memory_wait_hook = sender.wakeup
    return ProducerComponents(
        metadata,
        pool,
        network_metrics,
        sender_metrics,
        transaction_manager,
        accumulator,
        client,
        sender,
        sasl_login,
    )


def _metadata(
    cfg: ProducerConfig, batch_time_ms: Callable[[], int], host_resolver: Any
) -> ProducerMetadata:
    metadata = ProducerMetadata(
        refresh_backoff_ms=cfg["retry.backoff.ms"],
        refresh_backoff_max_ms=cfg["retry.backoff.max.ms"],
        metadata_max_age_ms=cfg["metadata.max.age.ms"],
        metadata_max_idle_ms=cfg["metadata.max.idle.ms"],
        topic_time_ms=batch_time_ms,
    )
    metadata.allow_auto_topic_creation = cfg["allow.auto.create.topics"]
    servers, dns_lookup = cfg["bootstrap.servers"], cfg["client.dns.lookup"]

    def bootstrap_addresses() -> Any:
        # KIP-602: the names themselves, or (resolve_canonical_bootstrap_servers_only) the
        # canonical name of each of their addresses; again at each rebootstrap
        return resolve_bootstrap(servers, dns_lookup, host_resolver)

    metadata.bootstrap(
        bootstrap_addresses(),
        bootstrap_addresses if dns_lookup != USE_ALL_DNS_IPS else None,
    )
    return metadata


def _accumulator(
    cfg: ProducerConfig, pool: BufferPool, transaction_manager: Optional[TransactionManager]
) -> RecordAccumulator:
    # batch.size=0 turns batching off (Java, kafka-python): a batch takes one record, is full
    # with it (so it does not linger) and the built-in partitioner moves on after each record
    batch_size = cfg["batch.size"] or 1
    max_batch_records = 1 if cfg["batch.size"] == 0 else cfg.hooks.get("batch_max_records", 0)
    codec = codec_id(cfg["compression.type"])
    return RecordAccumulator(
        batch_size,
        codec,
        cfg["linger.ms"],
        cfg["retry.backoff.ms"],
        cfg["retry.backoff.max.ms"],
        cfg["delivery.timeout.ms"],
        pool,
        partitioner_adaptive_partitioning_enable=cfg["partitioner.adaptive.partitioning.enable"],
        partitioner_availability_timeout_ms=cfg["partitioner.availability.timeout.ms"],
        transaction_manager=transaction_manager,
        # KIP-390: the level of the codec in use (compression.<codec>.level)
        compression_level=(
            cfg[f"compression.{compression.NAMES[codec]}.level"]
            if codec in compression.DEFAULT_LEVELS
            else None
        ),
        random=cfg.hooks.get("random"),
        max_batch_records=max_batch_records,
    )


def _socket_kwargs(cfg: ProducerConfig) -> Dict[str, Any]:
    """The network client's socket factory: the caller's, or plain sockets with
    ``socket_options``; wrapped in TLS for the ssl protocols."""
    client_kwargs: Dict[str, Any] = {}
    if "socket_factory" in cfg.hooks:
        if "socket_options" in cfg.explicit:
            raise errors.ConfigError(
                "socket_options applies to the producer's own sockets; with a "
                "socket_factory, set the options on the sockets it makes"
            )
        client_kwargs["socket_factory"] = cfg.hooks["socket_factory"]
    else:
        client_kwargs["socket_factory"] = functools.partial(
            default_socket_factory, socket_options=cfg["socket_options"]
        )
    if cfg["security.protocol"] in ("ssl", "sasl_ssl"):
        context = cfg.hooks.get("ssl_context") or ssl_context_from_config(
            cfg["ssl.truststore.location"],
            cfg["ssl.keystore.location"],
            reveal(cfg["ssl.key.password"]),
            cfg["ssl.endpoint.identification.algorithm"],
            keyfile=cfg["ssl_keyfile"],
            crlfile=cfg["ssl_crlfile"],
            ciphers=cfg["ssl_ciphers"],
        )
        client_kwargs["socket_factory"] = tls_socket_factory(
            context, client_kwargs.get("socket_factory", default_socket_factory)
        )
    return client_kwargs
