"""``AIOKafkaProducer``: aiokafka's asyncio producer API over the cproducer engine.

Change ``from aiokafka import AIOKafkaProducer`` to ``from cproducer.aio import
AIOKafkaProducer`` (and ``aiokafka.errors`` to ``cproducer.aio.errors``): the calls, their
results, their errors and the defaults stay aiokafka's (see ``config.py`` for the settings).

Underneath is the engine's ``KafkaProducer`` (accumulator, Sender thread, network client), so the
event loop only appends records and resolves futures:

- ``send`` does aiokafka's checks, serializes and partitions (aiokafka's ``DefaultPartitioner``:
  murmur2 for a key, a random available partition without one), then appends the record with the
  engine's C fast path, with the record's future as its callback. It never blocks the loop: the
  topic's partitions come from the engine's metadata, waited for in a worker thread when unknown;
  and when the buffer might not have room for the record (the engine would block for memory up to
  ``max.block.ms``), the append runs on the producer's one append thread instead, and every
  later ``send`` queues behind it there until it went through (records keep their call order).
- completions come back to the loop a batch at a time (``completions.py``).
- ``flush``, ``stop``, ``partitions_for`` on a new topic and the transaction calls block in the
  engine, so they run in the loop's default executor and are awaited.
"""

from __future__ import annotations

import asyncio
import functools
import random
import warnings
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Dict, List, Optional, Sequence, Set, Tuple

import numpy as np

from cproducer import errors as engine_errors
from cproducer.compat.aiokafka import errors
from cproducer.compat.aiokafka.batch_builder import BatchBuilder
from cproducer.compat.aiokafka.completions import LoopCompletions
from cproducer.compat.aiokafka.config import MISSING, engine_config
from cproducer.compat.aiokafka.fast_send import AioFastSend, TopicPartitions
from cproducer.compat.aiokafka.partitioner import DEFAULT_PARTITIONER
from cproducer.compat.aiokafka.structs import OffsetAndMetadata, RecordMetadata, TopicPartition
from cproducer.compat.aiokafka.token_provider import LoopTokenProvider
from cproducer.producer.config import ProducerConfig
from cproducer.producer.internals.transaction_manager import ABORTABLE_ERROR, IN_TRANSACTION
from cproducer.producer.internals.txn_request_handlers import fenced
from cproducer.producer.kafka_producer import KafkaProducer
from cproducer.utils.murmur2 import partition_for_key

#: a record's headers, as aiokafka takes them: (key, value) pairs
Headers = Sequence[Tuple[str, Optional[bytes]]]

# a record at least this much under the batch size needs one pooled buffer at most
_RECORD_OVERHEAD_BOUND = 1024


class _EngineErrors:
    """``with ENGINE_ERRORS:`` raises an engine error as aiokafka's (``errors.translate``), the
    engine's as its cause; other exceptions pass unchanged."""

    __slots__ = ()

    def __enter__(self) -> None:
        return None

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if isinstance(exc, engine_errors.KafkaError):
            raise errors.translate(exc) from exc


ENGINE_ERRORS = _EngineErrors()


class AIOKafkaProducer:
    """aiokafka's ``AIOKafkaProducer``, on the cproducer engine.

    Make it inside a running event loop; ``await start()`` (or ``async with``) before sending,
    ``await stop()`` after. Keyword arguments, defaults and errors are aiokafka's (SASL GSSAPI is
    refused: no Kerberos).
    """

    _closed: Optional[bool] = None  # not set up: nothing for __del__ to do

    def __init__(
        self,
        *,
        loop: Optional[asyncio.AbstractEventLoop] = None,
        bootstrap_servers: Any = "localhost",
        client_id: Optional[str] = None,
        metadata_max_age_ms: int = 300000,
        request_timeout_ms: int = 40000,
        api_version: Any = None,
        acks: Any = MISSING,
        key_serializer: Optional[Callable[[Any], Any]] = None,
        value_serializer: Optional[Callable[[Any], Any]] = None,
        compression_type: Optional[str] = None,
        max_batch_size: int = 16384,
        partitioner: Callable[[Any, List[int], List[int]], int] = DEFAULT_PARTITIONER,
        max_request_size: int = 1048576,
        linger_ms: int = 0,
        retry_backoff_ms: int = 100,
        security_protocol: str = "PLAINTEXT",
        ssl_context: Any = None,
        connections_max_idle_ms: Optional[int] = 540000,
        enable_idempotence: bool = False,
        transactional_id: Optional[str] = None,
        transaction_timeout_ms: int = 60000,
        sasl_mechanism: str = "PLAIN",
        sasl_plain_password: Optional[str] = None,
        sasl_plain_username: Optional[str] = None,
        sasl_kerberos_service_name: str = "kafka",
        sasl_kerberos_domain_name: Optional[str] = None,
        sasl_oauth_token_provider: Any = None,
    ) -> None:
        if loop is None:
            loop = asyncio.get_running_loop()
        else:
            warnings.warn(
                "The `loop` parameter is deprecated (as in aiokafka since 0.7.1): the producer "
                "uses the running loop",
                DeprecationWarning,
                stacklevel=2,
            )
        self._loop = loop
        self._config = engine_config(
            bootstrap_servers=bootstrap_servers,
            client_id=client_id,
            metadata_max_age_ms=metadata_max_age_ms,
            request_timeout_ms=request_timeout_ms,
            api_version=api_version,
            acks=acks,
            compression_type=compression_type,
            max_batch_size=max_batch_size,
            max_request_size=max_request_size,
            linger_ms=linger_ms,
            retry_backoff_ms=retry_backoff_ms,
            security_protocol=security_protocol,
            ssl_context=ssl_context,
            connections_max_idle_ms=connections_max_idle_ms,
            enable_idempotence=enable_idempotence,
            transactional_id=transactional_id,
            transaction_timeout_ms=transaction_timeout_ms,
            sasl={
                "sasl_mechanism": sasl_mechanism,
                "sasl_plain_password": sasl_plain_password,
                "sasl_plain_username": sasl_plain_username,
                "sasl_kerberos_service_name": sasl_kerberos_service_name,
                "sasl_kerberos_domain_name": sasl_kerberos_domain_name,
                "sasl_oauth_token_provider": sasl_oauth_token_provider,
            },
        )
        if "sasl_oauth_token_provider" in self._config:
            self._config["sasl_oauth_token_provider"] = LoopTokenProvider(
                self._config["sasl_oauth_token_provider"], loop, request_timeout_ms / 1000
            )
        engine_cfg = ProducerConfig(**self._config)  # the engine's checks, now rather than later
        self.client_id: str = engine_cfg["client.id"]
        self._bootstrap_servers = bootstrap_servers
        self._request_timeout_ms = request_timeout_ms
        self._batch_size = max_batch_size
        # key and value each at most this long: the record needs one pooled buffer at most
        self._small_record = max(0, (max_batch_size - _RECORD_OVERHEAD_BOUND) // 2)
        self._max_request_size = max_request_size
        self._key_serializer = key_serializer
        self._value_serializer = value_serializer
        self._partitioner = partitioner
        self._default_partitioner = partitioner is DEFAULT_PARTITIONER
        self._transactional = transactional_id is not None
        self._completions = LoopCompletions(loop, engine_cfg["acks"])
        self._engine: Optional[KafkaProducer] = None
        self._engine_send: Callable[..., Any] = self._not_started
        self._topics: Dict[str, TopicPartitions] = {}
        # the engine's parts the loop reads without blocking (set by start())
        self._metadata: Any = None
        self._pool: Any = None
        self._transaction_manager: Any = None
        self._append_thread: Optional[ThreadPoolExecutor] = None
        self._fast: Optional[AioFastSend] = None
        self._closed = False

    # ------------------------------------------------------------------ life cycle
    async def start(self) -> None:
        """Connect: start the engine, fetch the cluster's metadata (``KafkaConnectionError``
        when no bootstrap server answers within ``request_timeout_ms``) and, with a
        ``transactional_id``, get the producer id (fencing an older producer with the id)."""
        if self._loop is not asyncio.get_running_loop():
            # aiokafka's check, an assert there
            raise AssertionError("Please create objects with the same loop as running with")
        if self._engine is not None:
            return
        if self._closed:
            raise errors.ProducerClosed("the producer was stopped; make a new one")
        engine = await self._loop.run_in_executor(None, self._start_engine)
        if self._closed:  # stopped while starting
            await self._loop.run_in_executor(None, engine.close)
            raise errors.ProducerClosed("the producer was stopped while it started")
        self._engine = engine
        parts = engine.engine
        self._metadata = parts.metadata
        self._pool = parts.pool
        self._transaction_manager = parts.transaction_manager
        self._engine_send = parts.send
        self._fast = AioFastSend(
            self._loop,
            parts.send,
            self._send_slow,
            self._pool,
            self._metadata,
            self._completions,
            self._transaction_manager,
            self._topics,
            self._transactional,
            self._batch_size,
            self._small_record,
        )
        if (
            self._default_partitioner
            and self._key_serializer is None
            and self._value_serializer is None
        ):
            # the instance attribute wins over the method: send() goes straight into C
            self.send = self._fast.send  # type: ignore[method-assign]

    def _start_engine(self) -> KafkaProducer:
        # in a worker thread: everything here may block
        engine = KafkaProducer(**self._config)
        try:
            try:
                # aiokafka's start(): each bootstrap server is tried once, then it gives up
                engine.engine.await_cluster(
                    self._request_timeout_ms / 1000.0, fail_unreachable=True
                )
            except engine_errors.NoBrokersAvailable as exc:
                raise errors.KafkaConnectionError(str(exc)) from None
            except engine_errors.KafkaTimeoutError:
                raise errors.KafkaConnectionError(
                    f"Unable to bootstrap from {self._bootstrap_servers!r} within "
                    f"{self._request_timeout_ms} ms (request_timeout_ms)"
                ) from None
            except engine_errors.KafkaError as exc:  # e.g. refused credentials, at once
                raise errors.KafkaConnectionError(
                    f"Unable to bootstrap from {self._bootstrap_servers!r}: {exc}"
                ) from exc
            if self._transactional:
                with ENGINE_ERRORS:
                    engine.init_transactions()
        except BaseException:
            engine.close(0)
            raise
        return engine

    async def stop(self) -> None:
        """Send every record accepted so far, wait for their results, then close."""
        if self._closed:
            return
        self._closed = True
        if self._fast is not None:
            self._fast.divert = True
        engine = self._engine
        if engine is not None:
            await self._loop.run_in_executor(None, engine.close)
            self._completions.drain()  # every record has completed: resolve their futures now
        if self._append_thread is not None:
            self._append_thread.shutdown(wait=False)

    async def flush(self) -> None:
        """Wait until every record sent so far completed and its future is resolved."""
        engine = self._engine
        if engine is None or self._closed:
            return
        await self._loop.run_in_executor(None, engine.flush)
        self._completions.drain()

    async def __aenter__(self) -> AIOKafkaProducer:
        await self.start()
        return self

    async def __aexit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        await self.stop()

    def __del__(self, _warnings: Any = warnings) -> None:
        # as aiokafka: a producer made and never stopped is reported, started or not (a
        # ResourceWarning and the loop's exception handler)
        if self._closed is False:
            _warnings.warn(f"Unclosed AIOKafkaProducer {self!r}", ResourceWarning, source=self)
            if not self._loop.is_closed():
                self._loop.call_exception_handler(
                    {"producer": self, "message": "Unclosed AIOKafkaProducer"}
                )
            if self._engine is not None:
                try:
                    self._engine.close(0)
                except Exception:
                    pass

    @property
    def client(self) -> Any:
        """aiokafka's ``AIOKafkaClient``: none here (the engine has its own network client)."""
        raise AttributeError(
            "cproducer.aio.AIOKafkaProducer has no 'client' (aiokafka's AIOKafkaClient): use "
            "await producer.partitions_for(topic) for a topic's partitions, aiokafka's "
            "AIOKafkaAdminClient for the cluster's metadata"
        )

    # ------------------------------------------------------------------ metadata
    async def partitions_for(self, topic: str) -> Set[int]:
        """The partition ids of ``topic`` (``UnknownTopicOrPartitionError`` when the broker does
        not show it within ``request_timeout_ms``)."""
        return set((await self._partitions(topic)).all)

    def _known_partitions(self, topic: str) -> Optional[TopicPartitions]:
        metadata = self._metadata
        version = metadata.version  # read before the cluster: a newer one refreshes again
        cluster = metadata.fetch()
        infos = cluster.partitions_for_topic(topic)
        if not infos:
            return None
        state = TopicPartitions(
            version,
            tuple(p.partition for p in infos),
            tuple(p.partition for p in cluster.available_partitions_for_topic(topic)),
        )
        self._topics[topic] = state
        return state

    async def _partitions(self, topic: str) -> TopicPartitions:
        engine = self._require_started()
        state = self._topics.get(topic)
        if state is not None and state.version == self._metadata.version:
            return state
        state = self._known_partitions(topic)
        if state is None:
            with ENGINE_ERRORS:
                try:
                    await self._loop.run_in_executor(None, engine.partitions_for, topic)
                except engine_errors.KafkaTimeoutError:
                    raise errors.UnknownTopicOrPartitionError(
                        f"topic {topic!r} not in the metadata after {self._request_timeout_ms} ms"
                    ) from None
            state = self._known_partitions(topic)
            if state is None:  # pragma: no cover - the engine returned without the topic
                raise errors.UnknownTopicOrPartitionError(topic)
        return state

    def _require_started(self) -> KafkaProducer:
        if self._closed:
            raise errors.ProducerClosed()
        if self._engine is None:
            self._not_started()
        return self._engine  # type: ignore[return-value]

    @staticmethod
    def _not_started(*_args: Any) -> Any:
        raise errors.IllegalOperation("the producer is not started: await producer.start() first")

    # ------------------------------------------------------------------ send
    async def send(
        self,
        topic: str,
        value: Any = None,
        key: Any = None,
        partition: Optional[int] = None,
        timestamp_ms: Optional[int] = None,
        headers: Optional[Headers] = None,
    ) -> asyncio.Future[RecordMetadata]:
        """Queue a record; returns a future of its ``RecordMetadata`` (``await`` it for the
        result; cancelling it does not stop the record).

        Raises: ``ProducerClosed``; ``IllegalOperation`` (a transactional producer outside a
        transaction); ``MessageSizeTooLargeError`` (larger than ``max_request_size``);
        ``KafkaTimeoutError`` (no buffer space within ``request_timeout_ms``); ``TypeError``
        (a key/value that is not bytes); ``AssertionError`` (no key and no value, a partition
        the topic does not have), as aiokafka does.

        Without serializers and with the default partitioner, the instance's ``send`` is the C
        path (``AioFastSend.send``), which hands every case it does not take over to this
        method, as ``_send_slow``."""
        if value is None and key is None:
            raise AssertionError("Need at least one: key or value")
        state = await self._partitions(topic)
        if self._transactional and self._transaction_manager.state != IN_TRANSACTION:
            raise errors.IllegalOperation("Can't send messages while not in transaction")
        if self._key_serializer is not None:
            key = self._key_serializer(key)
        if self._value_serializer is not None:
            value = self._value_serializer(value)
        if partition is None:
            if not self._default_partitioner:
                partition = self._partitioner(key, list(state.all), list(state.available))
            elif key is None:
                partition = random.choice(state.available)
            else:
                partition = partition_for_key(key, state.count)
        elif partition not in state.all_set:
            raise AssertionError(f"Unrecognized partition {partition!r} of topic {topic!r}")
        if headers is not None and not headers:
            headers = None
        future, delivery = self._completions.new_record_delivery()
        await self._append(
            self._may_block(key, value, headers),
            self._engine_send,
            topic,
            value,
            key,
            headers,
            partition,
            timestamp_ms,
            delivery,
        )
        return future

    # the Python path, under a name the instance's C `send` attribute does not shadow
    _send_slow = send

    async def _append(self, may_block: bool, append: Callable[..., Any], *args: Any) -> Any:
        """``append(*args)`` into the engine: on the loop, or on the append thread when it
        ``may_block`` (``_may_block``); engine errors raised as aiokafka's."""
        if may_block:
            return await self._off_loop(functools.partial(append, *args))
        with ENGINE_ERRORS:
            return append(*args)

    def _may_block(self, key: Any, value: Any, headers: Any) -> bool:
        """Whether the engine's append of this record might wait for buffer space: an upper
        bound of the memory it needs against what is free now (only the loop's thread appends,
        so that cannot shrink before the append), or appends wait off the loop already (then
        this one queues behind them: records keep their call order)."""
        if self._fast is not None and self._fast.off_loop:
            return True
        size = (0 if value is None else len(value)) + (0 if key is None else len(key))
        size += _RECORD_OVERHEAD_BOUND
        for h_key, h_value in headers or ():
            size += 10 + 3 * len(h_key) + (0 if h_value is None else len(h_value))
        return bool(self._pool.available_memory < max(self._batch_size, size))

    async def _off_loop(self, append: Callable[[], Any]) -> Any:
        """An engine append on the producer's one append thread, where it may wait for buffer
        space (up to ``request_timeout_ms``, then ``KafkaTimeoutError``)."""
        fast = self._fast
        assert fast is not None
        if self._append_thread is None:
            self._append_thread = ThreadPoolExecutor(1, thread_name_prefix="cproducer-aio-append")
        fast.off_loop += 1
        try:
            with ENGINE_ERRORS:
                return await self._loop.run_in_executor(self._append_thread, append)
        finally:
            fast.off_loop -= 1

    async def send_and_wait(
        self,
        topic: str,
        value: Any = None,
        key: Any = None,
        partition: Optional[int] = None,
        timestamp_ms: Optional[int] = None,
        headers: Optional[Headers] = None,
    ) -> RecordMetadata:
        """``send``, then wait for the record's ``RecordMetadata``."""
        future = await self.send(topic, value, key, partition, timestamp_ms, headers)
        return await future

    # ------------------------------------------------------------------ batches
    def create_batch(self) -> BatchBuilder:
        """An empty ``BatchBuilder`` of at most ``max_batch_size`` bytes, with the producer's
        serializers; fill it with ``append`` and send it with ``send_batch``."""
        return BatchBuilder(
            self._batch_size,
            key_serializer=self._key_serializer,
            value_serializer=self._value_serializer,
        )

    async def send_batch(
        self, batch: BatchBuilder, topic: str, *, partition: Optional[int]
    ) -> asyncio.Future[Optional[RecordMetadata]]:
        """Send a batch's records to one partition (None: the partitioner's choice for no key,
        as aiokafka); returns a future of the ``RecordMetadata`` of its first record (None for an
        empty batch or with acks=0). The batch is closed."""
        state = await self._partitions(topic)
        if partition is None:
            # aiokafka asks its partitioner, with no key (the default: a random available one)
            partition = self._partitioner(None, list(state.all), list(state.available))
        if partition not in state.all_set:
            raise AssertionError(f"Unrecognized partition {partition!r} of topic {topic!r}")
        if self._transactional and self._transaction_manager.state != IN_TRANSACTION:
            raise errors.IllegalOperation("Can't send messages while not in transaction")
        batch.close()
        timestamps = np.array(batch.timestamps, dtype=np.int64)
        headers = batch.headers if batch.has_headers else None
        engine = self._require_started()
        future, delivery = self._completions.new_batch_delivery(
            functools.partial(_first_record_metadata, topic, partition, self._completions.acks)
        )
        may_block = self._may_block(None, None, None) or self._pool.available_memory < (
            batch.size() + 2 * self._batch_size
        )
        batch_future = await self._append(
            may_block,
            engine.send_many,
            topic,
            batch.values,
            batch.keys,
            partition,
            headers,
            timestamps,
        )
        batch_future.add_callback(delivery)
        return future

    # ------------------------------------------------------------------ transactions
    def _ensure_transactional(self) -> KafkaProducer:
        if not self._transactional:
            raise errors.IllegalOperation(
                "You need to configure transaction_id to use transactions"
            )
        return self._require_started()

    def _fence_on_epoch_error(self) -> None:
        """aiokafka takes a record answered INVALID_PRODUCER_EPOCH (what Apache Kafka answers a
        fenced producer's Produce since KIP-588) as fenced: fatal. The engine, as Java, makes
        the transaction abortable and learns of the fencing from the abort; the facade ends
        the producer at once, as aiokafka does."""
        tm = self._transaction_manager
        if tm.state == ABORTABLE_ERROR and errors.is_fenced(tm.last_error):
            tm.transition_to_fatal_error(fenced(tm.last_error))

    async def _in_thread(self, fn: Callable[..., Any], *args: Any) -> None:
        self._fence_on_epoch_error()
        with ENGINE_ERRORS:
            try:
                await self._loop.run_in_executor(None, fn, *args)
            except engine_errors.TransactionAbortableError as exc:
                self._fence_on_epoch_error()
                # aiokafka raises the error that made the transaction abortable
                cause = exc.__cause__ or getattr(self._transaction_manager, "last_error", None)
                raise errors.translate(cause if cause is not None else exc) from exc

    async def begin_transaction(self) -> None:
        engine = self._ensure_transactional()
        self._fence_on_epoch_error()
        with ENGINE_ERRORS:
            engine.begin_transaction()

    async def commit_transaction(self) -> None:
        """Send the transaction's records and commit it (raises the error of a record that
        failed: then abort)."""
        engine = self._ensure_transactional()
        await self._in_thread(engine.commit_transaction)
        self._completions.drain()

    async def abort_transaction(self) -> None:
        """Abort the transaction. As aiokafka, its records sent so far go to the broker first
        (their futures succeed; read_committed consumers skip them), then the abort."""
        engine = self._ensure_transactional()

        def flush_then_abort() -> None:
            engine.flush()
            engine.abort_transaction()

        await self._in_thread(flush_then_abort)
        self._completions.drain()

    def transaction(self) -> TransactionContext:
        """``async with producer.transaction():`` begins a transaction, commits it when the block
        ends, aborts it when the block raises (unless the producer hit a fatal error)."""
        return TransactionContext(self)

    async def send_offsets_to_transaction(self, offsets: Any, group_id: str) -> None:
        """Commit a consumer group's offsets with the open transaction: ``offsets`` maps
        ``TopicPartition`` to the next offset to consume (an int, or ``(offset, metadata)``)."""
        engine = self._ensure_transactional()
        if self._transaction_manager.state != IN_TRANSACTION:
            raise errors.IllegalOperation("Not in the middle of a transaction")
        if not group_id or not isinstance(group_id, str):
            raise ValueError(group_id)
        await self._in_thread(engine.send_offsets_to_transaction, _offsets(offsets), group_id)

    def _is_fatal_error(self) -> bool:
        if self._engine is None:
            return False
        self._fence_on_epoch_error()
        return self._engine.engine.is_fatal_error()


class TransactionContext:
    """What ``producer.transaction()`` returns."""

    def __init__(self, producer: AIOKafkaProducer) -> None:
        self._producer = producer

    async def __aenter__(self) -> TransactionContext:
        await self._producer.begin_transaction()
        return self

    async def __aexit__(self, exc_type: Any, exc_value: Any, traceback: Any) -> None:
        if exc_type is None:
            await self._producer.commit_transaction()
        elif not self._producer._is_fatal_error():
            # the block's exception goes on; a fatal error leaves nothing to abort
            await self._producer.abort_transaction()


def _first_record_metadata(topic: str, partition: int, acks: int, result: Any) -> Any:
    """A ``send_batch`` future's value from the engine's BatchResult: the first record's
    metadata (aiokafka's timestamp -1: the broker did not set one), None for an empty batch or
    with acks=0, or the first failed record's error (an exception instance)."""
    if result.errors:
        return errors.translate(result.errors[min(result.errors)])
    if result.count == 0 or acks == 0:
        return None
    return RecordMetadata(
        topic,
        partition,
        TopicPartition(topic, partition),
        int(result.offsets[0]),
        -1,
        0,
        None,
    )


def _offsets(offsets: Any) -> Dict[Tuple[str, int], Tuple[int, str]]:
    """aiokafka's check of ``send_offsets_to_transaction``'s offsets, to the engine's form."""
    if not offsets or not isinstance(offsets, dict):
        raise ValueError(offsets)
    out: Dict[Tuple[str, int], Tuple[int, str]] = {}
    for tp, value in offsets.items():
        if not (
            isinstance(tp, tuple)
            and len(tp) == 2
            and isinstance(tp[0], str)
            and isinstance(tp[1], int)
        ):
            raise TypeError("Key should be TopicPartition instance")
        if isinstance(value, int):
            offset, metadata = value, ""
        else:
            try:
                offset, metadata = value
            except Exception as exc:
                raise ValueError(offsets) from exc
            if not isinstance(metadata, str):
                raise TypeError("Metadata should be a string")
        out[TopicPartition(tp[0], tp[1])] = OffsetAndMetadata(offset, metadata)
    return out
