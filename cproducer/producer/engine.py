"""``ProducerEngine``: what a facade over ``KafkaProducer`` may use besides its public API.

The aiokafka and confluent-kafka facades (``cproducer.aio``, ``cproducer.compat.confluent``)
drive the engine more closely than kafka-python's API allows: they append with a completion
hook of their own, partition themselves, wait for a topic's metadata with their own timeouts,
flush without blocking, purge, and read the transaction state. Everything they need is here,
declared and documented, so the engine's private parts can change without them. A facade's
per-record fast path takes the objects it reads in C (``metadata``, ``pool``,
``transaction_manager``, ``send``) once, at construction.

Get it from ``KafkaProducer.engine``.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Set

from cproducer import errors
from cproducer.cluster import Cluster
from cproducer.producer.config import ProducerConfig
from cproducer.producer.internals.buffer_pool import BufferPool
from cproducer.producer.internals.producer_metadata import ProducerMetadata
from cproducer.producer.internals.transaction_manager import FATAL_ERROR, TransactionManager
from cproducer.producer.producer_components import ProducerComponents

if TYPE_CHECKING:  # pragma: no cover
    from cproducer.producer.kafka_producer import KafkaProducer


def config_name(name: str) -> Optional[str]:
    """The Java name of a configuration key spelled either way (``linger_ms`` or
    ``linger.ms``), or None for a key the producer does not know."""
    from cproducer.producer.config import (
        _ALIASES,  # the one table of names, owned by the config module
    )

    return _ALIASES.get(name)


class ProducerEngine:
    """A ``KafkaProducer``'s engine, as a facade sees it. Thread-safe where the producer is."""

    __slots__ = ("_producer", "_parts")

    def __init__(self, producer: KafkaProducer, parts: ProducerComponents) -> None:
        self._producer = producer
        self._parts = parts

    # ------------------------------------------------------------------ the parts read in C
    @property
    def config(self) -> ProducerConfig:
        """The producer's resolved configuration (Java names)."""
        return self._producer.config

    @property
    def metadata(self) -> ProducerMetadata:
        """The cluster view (Java's ``ProducerMetadata``): ``version``/``version_cell`` (moves
        on with each update), ``fetch()`` (the current ``Cluster``), ``add``,
        ``request_update_for_topic``, ``request_full_listing``/``listings``, ``await_update``,
        ``maybe_throw_exception_for_topic``."""
        return self._parts.metadata

    @property
    def pool(self) -> BufferPool:
        """The buffer pool records are appended into (``available_memory``: Java's
        ``BufferPool.availableMemory``, what an append can take without waiting)."""
        return self._parts.pool

    @property
    def transaction_manager(self) -> Optional[TransactionManager]:
        """The transaction manager (``state``, ``last_error``, ``has_ongoing_transaction``,
        ``producer_id_and_epoch``); None without idempotence."""
        return self._parts.transaction_manager

    @property
    def send(self) -> Callable[..., Any]:
        """The producer's ``send(topic, value, key, headers, partition, timestamp_ms, callback)``
        (its Cython fast path when it has one): ``callback(metadata, exception)`` is the
        completion hook, called once on the I/O thread (Java's ``send(record, callback)``)."""
        return self._producer.send  # type: ignore[no-any-return]

    @property
    def batch_time_ms(self) -> Callable[[], int]:
        """The clock batches are made, lingered and expired in (monotonic ms); a topic's use
        time for ``metadata.add`` is read from it."""
        return self._producer._batch_time_ms

    @property
    def io_thread(self) -> threading.Thread:
        """The Sender's thread (Java's ``ioThread``): completion callbacks run on it."""
        return self._parts.sender.thread

    @property
    def check_can_send(self) -> Callable[[], None]:
        """``check_can_send()`` raises what ``send`` refuses before it looks at its arguments:
        ``ProducerClosedError``, or the transaction manager's refusal outside a transaction
        (Java's ``TransactionManager.failIfNotReadyForSend``). The producer's own method, so a
        facade that keeps it calls it without a layer between."""
        return self._producer._check_can_send

    @property
    def wakeup(self) -> Callable[[], None]:
        """``wakeup()`` wakes the Sender (Java's ``Sender.wakeup``): new data, a flush, a
        metadata request. The Sender's own method, kept by a facade as it is."""
        return self._parts.sender.wakeup

    # ------------------------------------------------------------------ calls
    def partition_count(self, topic: str, timeout_s: float) -> int:
        """Wait up to ``timeout_s`` until ``topic``'s partitions are known (Java's
        ``waitOnMetadata`` without ``max.block.ms``): the count, or ``KafkaTimeoutError``, or the
        topic's error from the broker (e.g. ``TopicAuthorizationFailedError``)."""
        md = self._parts.metadata
        deadline = time.monotonic() + timeout_s
        md.add(topic, self._producer._batch_time_ms())
        while True:
            count = md.fetch().partition_count_for_topic(topic)
            if count is not None:
                return int(count)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise errors.KafkaTimeoutError(f"topic {topic!r} not in the metadata")
            version = md.request_update_for_topic(topic)
            self._parts.sender.wakeup()
            md.await_update(version, remaining * 1000.0)
            md.maybe_throw_exception_for_topic(topic)

    def await_cluster(self, timeout_s: float, fail_unreachable: bool = False) -> Cluster:
        """Wait up to ``timeout_s`` until a broker answered a metadata request (the bootstrap
        servers alone do not count; neither does a rebootstrap, KIP-899, which moves the version
        on to the bootstrap view): the cluster, or ``KafkaTimeoutError``, or the error that
        failed the update (e.g. refused credentials, at once). ``fail_unreachable``: raise
        ``NoBrokersAvailable`` as soon as every bootstrap address failed to connect once (what
        aiokafka's ``start()`` does) instead of trying again until the timeout."""
        md = self._parts.metadata
        deadline = time.monotonic() + timeout_s
        bootstrap = [f"{h}:{p}" for h, p in self._producer.config["bootstrap.servers"]]
        while True:
            cluster = md.fetch()
            if not cluster.is_bootstrap_configured:
                return cluster
            if fail_unreachable:
                failing = self.connection_errors()
                if all(address in failing for address in bootstrap):
                    raise errors.NoBrokersAvailable(
                        "Unable to bootstrap from "
                        + ", ".join(f"{a} ({failing[a]})" for a in bootstrap)
                    )
            version = md.request_update()
            self._parts.sender.wakeup()
            remaining_ms = (deadline - time.monotonic()) * 1000.0
            if remaining_ms <= 0:
                raise errors.KafkaTimeoutError("no metadata yet")
            if not fail_unreachable:
                md.await_update(version, remaining_ms)
                continue
            # in slices, watching the connections: a refusal does not move the version on
            try:
                md.await_update(version, min(remaining_ms, 20.0))
            except errors.KafkaTimeoutError:
                if time.monotonic() >= deadline:
                    raise

    def connection_errors(self) -> Dict[str, str]:
        """``host:port`` -> the last error connecting to it, for each address whose last
        connection attempt failed (the bootstrap servers and the brokers learned since)."""
        return self._parts.client.connection_failures.errors()

    def await_full_listing(self, timeout_s: float) -> Cluster:
        """Ask for the metadata of every topic in the cluster and wait up to ``timeout_s`` for
        the answer: the cluster, or ``KafkaTimeoutError``."""
        md = self._parts.metadata
        deadline = time.monotonic() + timeout_s
        answered = md.request_full_listing()
        self._parts.sender.wakeup()
        while True:
            version = md.version  # read before the check: no update slips between
            if md.listings > answered:
                return md.fetch()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise errors.KafkaTimeoutError("no metadata for every topic in time")
            md.await_update(version, remaining * 1000.0)

    def begin_flush(self) -> None:
        """Make every batch sendable now and wake the Sender (Java's
        ``RecordAccumulator.beginFlush`` + ``Sender.wakeup``); end with ``await_flush``."""
        self._parts.accumulator.begin_flush()
        self._parts.sender.wakeup()

    def await_flush(self, timeout_s: Optional[float]) -> bool:
        """Wait up to ``timeout_s`` (None: without limit; 0: not at all) for the records
        appended before ``begin_flush`` to complete, and end that flush (Java's
        ``RecordAccumulator.awaitFlushCompletion``). True when they did."""
        return bool(self._parts.accumulator.await_flush_completion(timeout_s))

    def abort_undrained_batches(self, exc: BaseException) -> None:
        """Fail the batches not handed to a request yet with ``exc`` (Java's
        ``RecordAccumulator.abortUndrainedBatches``)."""
        self._parts.accumulator.abort_undrained_batches(exc)

    def incomplete_batches(self) -> List[Any]:
        """The batches appended and not completed yet (Java's ``IncompleteBatches.copyAll``)."""
        return list(self._parts.accumulator.incomplete_batches())

    def has_ongoing_transaction(self) -> bool:
        """A transaction is open or ending (Java's
        ``TransactionManager.hasOngoingTransaction``); False without transactions."""
        tm = self._parts.transaction_manager
        return tm is not None and bool(tm.has_ongoing_transaction())

    def is_fatal_error(self) -> bool:
        """The transaction manager is in its fatal state: the producer can only be closed."""
        tm = self._parts.transaction_manager
        return tm is not None and tm.state == FATAL_ERROR

    def set_connection_listener(
        self, listener: Optional[Callable[[int, str, int, bool, str], None]]
    ) -> None:
        """``listener(node_id, host, port, up, reason)`` is called on the I/O thread when a
        connection to a broker (node_id < 0: a bootstrap server) comes up, fails or is lost."""
        self._parts.client.connection_listener = listener

    def connected_node_ids(self) -> Set[int]:
        """The ids of the brokers a connection is open to, now."""
        return set(self._parts.client._conns)

    def metadata_age_ms(self) -> int:
        """Milliseconds since the last metadata update, successful or not (-1: none yet)."""
        last = self._parts.metadata._last_refresh_ms  # the producer's monotonic ms
        return max(0, self._producer._clock.monotonic_ms() - last) if last else -1

    def metrics(self, raw: bool = False) -> Any:
        """``KafkaProducer.metrics`` (Java's ``KafkaProducer.metrics``)."""
        return self._producer.metrics(raw)

    def close(self, timeout: Optional[float] = None) -> None:
        """``KafkaProducer.close`` (Java's ``KafkaProducer.close(Duration)``)."""
        self._producer.close(timeout)

    def flush(self, timeout: Optional[float] = None) -> None:
        """``KafkaProducer.flush`` (Java's ``KafkaProducer.flush``)."""
        self._producer.flush(timeout)

    def set_sasl_credentials(self, username: str, password: str) -> None:
        """The username and password of the SASL PLAIN/SCRAM authentications from now on
        (librdkafka's ``rd_kafka_sasl_set_credentials``): connections already authenticated
        keep theirs. ``ConfigError`` when the producer does not authenticate with PLAIN or
        SCRAM."""
        from cproducer.security.password import Password
        from cproducer.security.sasl_client import OAUTHBEARER

        login = self._parts.sasl_login
        if login is None or login.mechanism == OAUTHBEARER:
            raise errors.ConfigError(
                "SASL credentials are for sasl.mechanism PLAIN or SCRAM-SHA-256/512, which this "
                "producer does not use"
            )
        # one connection reads them as it starts authenticating (SaslLogin.new_client)
        login.username = username
        login._password = Password(password)

    def free_memory(self) -> int:
        """``pool.available_memory``: bytes an append can take now without waiting."""
        return int(self._parts.pool.available_memory)
