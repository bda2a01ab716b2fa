"""KafkaProducer: the pure-Python facade (Java's ``KafkaProducer``, kafka-python's API).

``send`` follows Java's ``doSend``: interceptors' ``on_send`` → wait for the topic's metadata (at
most ``max.block.ms``) → serialize → partition → size check → ``RecordAccumulator.append`` → wake
the Sender when a batch filled up or a new one was made. Anything wrong with the record itself is
raised from ``send()`` before the record is accepted; once accepted, a record completes exactly
once, through its future and callback: success with its offset, or an error.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    Dict,
    Literal,
    Mapping,
    Optional,
    Sequence,
    Set,
    Tuple,
    Union,
    overload,
)

import numpy as np

from cproducer import errors
from cproducer.cluster import Cluster
from cproducer.producer.batch_future import BatchFuture
from cproducer.producer.columns import to_column
from cproducer.producer.config import ProducerConfig
from cproducer.producer.engine import ProducerEngine
from cproducer.producer.fast_send import FastSend
from cproducer.producer.interceptors import ProducerInterceptors, ProducerRecord
from cproducer.producer.internals.kafka_producer_metrics import KafkaProducerMetrics
from cproducer.producer.internals.produce_request_result import (
    FutureRecordMetadata,
    RecordMetadata,
)
from cproducer.producer.internals.sender_metrics import collect_metrics
from cproducer.producer.internals.transaction_manager import (
    IN_TRANSACTION,
    TransactionManager,
    TransactionState,
)
from cproducer.producer.partitioners import (
    KafkaPythonPartitioner,
    reruns_on_new_batch,
    resolve_partitioner,
)
from cproducer.producer.producer_args import (
    check_headers,
    check_partition_type,
    check_timestamp_type,
    check_topic,
    serialize,
    transaction_offsets,
)
from cproducer.producer.producer_args import (
    group_metadata as read_group_metadata,
)
from cproducer.producer.producer_components import build_components
from cproducer.producer.send_many import (
    append_columns,
    partition_order,
    partitions_of_column,
    size_upper_bounds,
)
from cproducer.producer.serializers import as_serialize_fn, takes_headers
from cproducer.record.record_batch_builder import (
    estimate_size_in_bytes_upper_bound,
    headers_size_in_bytes,
)
from cproducer.utils.memory_budget import release_free_memory
from cproducer.utils.metric_name import raw_metrics
from cproducer.utils.murmur2 import partition_for_key
from cproducer.utils.time import SYSTEM_CLOCK, as_clock

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from cproducer.producer.settings import ProducerSettings
    from cproducer.utils.metric_name import MetricName

log = logging.getLogger("cproducer.producer.kafka_producer")

#: a record's headers: (key, value) pairs
Headers = Sequence[Tuple[str, Optional[Union[bytes, bytearray, memoryview]]]]
#: a completion callback: ``(metadata, None)`` on success, ``(None, exception)`` on failure
SendCallback = Callable[[Optional[RecordMetadata], Optional[BaseException]], Any]

_MEMORY_RELEASE_INTERVAL_S = 1.0


class KafkaProducer:
    """A thread-safe Kafka producer: share one instance between threads.

    Configure with kafka-python-style keyword arguments (``linger_ms=5``) or a dict of Java names as
    the first argument (``{"bootstrap.servers": "host:9092", "linger.ms": 5}``).
    """

    def __init__(
        self, configs: Optional[Mapping[str, Any]] = None, **kwargs: Unpack[ProducerSettings]
    ) -> None:
        cfg = ProducerConfig(configs, **kwargs)
        self.config = cfg
        if "clock" in cfg.hooks and "time_ms" in cfg.hooks:
            raise errors.ConfigError("clock and time_ms: give one of the two (time_ms is older)")
        clock = as_clock(cfg.hooks.get("clock", cfg.hooks.get("time_ms", SYSTEM_CLOCK)))
        self._clock = clock
        # The time batches are made, lingered and expired in, and the metadata's topic-use times:
        # monotonic, like every other duration (requests, connections, the metadata refresh, the
        # transactional backoff, max.block.ms). Only record timestamps read the wall clock.
        self._batch_time_ms: Callable[[], int] = clock.monotonic_ms
        self.client_id: str = cfg["client.id"]
        self._max_block_ms: int = cfg["max.block.ms"]
        self._max_request_size: int = cfg["max.request.size"]
        self._total_memory: int = cfg["buffer.memory"]
        self._ignore_keys: bool = cfg["partitioner.ignore.keys"]
        self._key_serializer = as_serialize_fn(cfg["key.serializer"])
        self._value_serializer = as_serialize_fn(cfg["value.serializer"])
        # a serializer that takes the headers gets a list even for a record without any (and
        # may add to it), as kafka-python's send does
        self._headers_to_serializers = takes_headers(cfg["key.serializer"]) or takes_headers(
            cfg["value.serializer"]
        )
        # kafka-python refuses a record with neither key nor value; librdkafka (the confluent
        # facade) and Java take one
        self._null_records: bool = bool(cfg.hooks.get("null_records", False))
        self._interceptors = ProducerInterceptors(cfg["interceptor.classes"])
        self._partitioner = resolve_partitioner(
            cfg["partitioner.class"],
            kafka_python=cfg.spelling.get("partitioner.class") == "partitioner",
        )
        if self._partitioner is not None and hasattr(self._partitioner, "configure"):
            self._partitioner.configure(cfg.as_dict())
        # Java's (and kafka-python's) abort-for-new-batch rerun is the sticky partitioners'
        # protocol: only one implementing on_new_batch is asked again; any other partitioner is
        # called exactly once per record
        self._rerun_on_new_batch = self._partitioner is not None and reruns_on_new_batch(
            self._partitioner
        )
        # kafka-python reruns for records without a key only; Java (its legacy partitioners) for all
        self._rerun_keyed = not isinstance(self._partitioner, KafkaPythonPartitioner)
        self._closed = False
        self._close_lock = threading.Lock()
        self._last_memory_release = -_MEMORY_RELEASE_INTERVAL_S
        self._valid_topics: Set[str] = set()

        parts = build_components(cfg, clock, self._batch_time_ms)
        self._metadata = parts.metadata
        self._pool = parts.pool
        self._network_metrics = parts.network_metrics
        self._sender_metrics = parts.sender_metrics
        self._transaction_manager = parts.transaction_manager
        self._transactional = cfg["transactional.id"] is not None
        self._accumulator = parts.accumulator
        self._sasl_login = parts.sasl_login
        self._client = parts.client
        self._acks = cfg["acks"]
        self._sender = parts.sender
        #: what a facade (cproducer.aio, cproducer.compat.confluent) may use besides this API
        self.engine = ProducerEngine(self, parts)
        self._fast: Optional[FastSend] = None
        self._metrics_enabled = bool(cfg["metrics_enabled"])
        self._call_metrics = KafkaProducerMetrics()
        if (
            not self._interceptors
            and self._key_serializer is None
            and self._value_serializer is None
            and self._partitioner is None
        ):
            self._fast = FastSend(
                self._accumulator,
                self._metadata,
                self._send_slow,
                # the client's wake-up flags, set in C (see FastSend)
                self._sender.wakeup_for_data,
                self._max_request_size,
                self._total_memory,
                float(self._max_block_ms),
                self._ignore_keys,
                None if clock is SYSTEM_CLOCK else clock,
            )
            # the instance attribute wins over the method: send() goes straight into Cython
            self.send = self._fast.send  # type: ignore[method-assign]
            if self._transactional:
                # outside an open transaction every send goes to _send_slow, which refuses it
                fast = self._fast
                fast.divert = True

                def on_state_change(state: TransactionState) -> None:
                    fast.divert = self._closed or state != IN_TRANSACTION

                self._transaction_manager.on_state_change = on_state_change  # type: ignore[union-attr]
        self._sender.start()
        log.debug("producer %s started", self.client_id)
        if cfg["bootstrap_timeout_ms"] is not None or (
            "api_version" in cfg.explicit and cfg["api_version"] is None
        ):
            # kafka-python's eager bootstrap: the constructor waits for the cluster
            self._await_bootstrap(
                30000 if cfg["bootstrap_timeout_ms"] is None else cfg["bootstrap_timeout_ms"]
            )

    def _await_bootstrap(self, timeout_ms: int) -> None:
        """Wait up to ``timeout_ms`` for metadata from the cluster (the I/O thread fetches it from
        the bootstrap servers at start); without it, close and raise KafkaTimeoutError."""
        deadline = time.monotonic() + timeout_ms / 1000.0
        while self._metadata.fetch().is_bootstrap_configured:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                servers = ",".join(f"{h}:{p}" for h, p in self.config["bootstrap.servers"])
                self.close(0)
                raise errors.KafkaTimeoutError(
                    f"Unable to bootstrap from {servers}: no metadata within "
                    f"bootstrap_timeout_ms ({timeout_ms} ms){self._connection_errors()}"
                )
            try:
                self._metadata.await_update(self._metadata.version, remaining * 1000.0)
            except errors.KafkaTimeoutError:
                pass
            except errors.KafkaError:
                self.close(0)
                raise

    def bootstrap_connected(self) -> bool:
        """True when the producer has had the cluster's metadata and holds a ready connection to
        one of its brokers (kafka-python's "the bootstrap is connected")."""
        if self._closed:
            return False
        return (
            not self._metadata.fetch().is_bootstrap_configured
            and self._client.any_connection_ready()
        )

    # ------------------------------------------------------------------ send
    def send(
        self,
        topic: str,
        value: Any = None,
        key: Any = None,
        headers: Optional[Headers] = None,
        partition: Optional[int] = None,
        timestamp_ms: Optional[int] = None,
        callback: Optional[SendCallback] = None,
    ) -> FutureRecordMetadata:
        """Queue one record; returns its ``FutureRecordMetadata``.

        Raises (the record is then not accepted): ``ProducerClosedError``, ``InvalidTopicError``,
        ``InvalidPartitionError``, ``SerializationError`` (a key/value that is not bytes without a
        serializer, malformed headers), ``RecordTooLargeError``, ``KafkaTimeoutError`` (metadata or
        memory not available within ``max_block_ms``).

        This is Java's ``doSend``, in Python. With neither interceptors, serializers nor a
        partitioner, the instance's ``send`` is the Cython fast path (``FastSend.send``), which
        hands every case it does not take over to this method, as ``_send_slow``.
        """
        self._check_can_send()
        if value is None and key is None and not self._null_records:
            raise ValueError("Need at least one: key or value")  # kafka-python's refusal
        if self._interceptors:
            record = self._interceptors.on_send(
                ProducerRecord(topic, value, key, headers, partition, timestamp_ms)
            )
            topic, value, key, headers, partition, timestamp_ms = record
            callback = self._intercepted_callback(callback)
        if topic not in self._valid_topics:
            check_topic(topic)
        if timestamp_ms is not None:
            check_timestamp_type(timestamp_ms)
        start = self._clock.monotonic_ms()
        now = self._batch_time_ms()
        version = self._metadata.version
        cluster = self._metadata.fetch()
        count = cluster.partition_count_for_topic(topic)
        if count is None or (partition is not None and not 0 <= partition < count):
            version, cluster, count = self._wait_on_metadata(topic, partition, now)
        else:
            self._metadata.add(topic, now)
        remaining_ms = self._max_block_ms - (self._clock.monotonic_ms() - start)

        if headers is None and self._headers_to_serializers:
            headers = []
        key_bytes = serialize("key", self._key_serializer, topic, headers, key)
        value_bytes = serialize("value", self._value_serializer, topic, headers, value)
        if headers is not None:
            check_headers(headers)

        if partition is not None:
            check_partition_type(partition)
            part = partition
        else:
            part = self._partition(topic, key, key_bytes, value, value_bytes, cluster, count)

        size = estimate_size_in_bytes_upper_bound(key_bytes, value_bytes, headers)
        if size > self._max_request_size:
            raise errors.RecordTooLargeError(
                f"the record is {size} bytes when serialized, larger than max.request.size "
                f"({self._max_request_size})"
            )
        if size > self._total_memory:
            raise errors.RecordTooLargeError(
                f"the record is {size} bytes when serialized, larger than buffer.memory "
                f"({self._total_memory})"
            )
        if timestamp_ms is None:
            timestamp_ms = self._clock.milliseconds()
        abort_on_new_batch = (
            self._rerun_on_new_batch
            and partition is None
            and (key_bytes is None or self._rerun_keyed)
        )
        while True:
            result = self._accumulator.append(
                topic,
                part,
                timestamp_ms,
                key_bytes,
                value_bytes,
                headers,
                callback,
                remaining_ms,
                abort_on_new_batch,
                now,
                cluster,
            )
            if not result.abort_for_new_batch:
                break
            # Java's abort-for-new-batch: the sticky partitioner moves on, the record is
            # partitioned again and appended without a second abort
            on_new_batch = getattr(self._partitioner, "on_new_batch", None)
            if on_new_batch is not None:
                on_new_batch(topic, cluster, part)
            part = self._partition(topic, key, key_bytes, value, value_bytes, cluster, count)
            abort_on_new_batch = False
        if result.batch_is_full or result.new_batch_created:
            self._sender.wakeup_for_data()
        if self._fast is not None:
            self._fast.remember(topic, count, cluster, version)
        # None only with abort_for_new_batch, which the loop above appends again
        return result.future  # type: ignore[return-value]

    # the Python path, under a name the instance's fast `send` attribute does not shadow
    _send_slow = send
    # what send() does to a key or value, for the tests that check a serializer's effect
    _serialize = staticmethod(serialize)

    def _check_can_send(self) -> None:
        """What send() and send_many() refuse before looking at their arguments."""
        if self._closed:
            raise errors.ProducerClosedError("cannot send after the producer is closed")
        if self._transactional:
            self._transaction_manager.fail_if_not_ready_for_send()  # type: ignore[union-attr]

    def send_many(
        self,
        topic: str,
        values: Any,
        keys: Any = None,
        partition: Union[None, int, Sequence[int], np.ndarray] = None,
        headers: Optional[Sequence[Optional[Headers]]] = None,
        timestamps: Union[None, int, Sequence[int], np.ndarray] = None,
    ) -> BatchFuture:
        """Send many records with one call; returns a :class:`BatchFuture`.

        ``values`` / ``keys``: a list or tuple of bytes (None allowed), a numpy object or
        fixed-width ``S`` array, a pyarrow binary/large_binary/string array (read straight from its
        buffers), or a ``(buffer, offsets)`` pair. ``partition``: None (keys hashed with murmur2 in
        one pass; unkeyed records follow the sticky partitioner), an int, or one int per record
        (-1 = let the partitioner choose). ``headers``: None or one header list (or None) per
        record. ``timestamps``: None (now), an int, or one int per record. The whole call is
        checked before anything is appended: a bad element raises with its index and nothing of
        the call is accepted. Records of one partition keep their order.
        """
        self._check_can_send()
        if topic not in self._valid_topics:
            check_topic(topic)
        vcol = to_column(values, "values")
        n = vcol.n
        kcol = None if keys is None else to_column(keys, "keys")
        if kcol is not None and kcol.n != n:
            raise ValueError(f"keys has {kcol.n} elements, values has {n}")
        now = self._batch_time_ms()
        fixed_partition = None
        if isinstance(partition, int) and not isinstance(partition, bool):
            fixed_partition = partition
        elif partition is not None:
            partition = np.asarray(partition)
            if partition.shape != (n,) or partition.dtype.kind not in "iu":
                raise errors.InvalidPartitionError(
                    f"partition must be None, an int, or {n} ints; got shape "
                    f"{partition.shape} of {partition.dtype}"
                )
        _version, cluster, count = self._wait_on_metadata(topic, fixed_partition, now)
        hsizes = np.ones(n, dtype=np.int64)  # no headers: the count varint
        if headers is not None:
            if len(headers) != n:
                raise ValueError(f"headers has {len(headers)} elements, values has {n}")
            headers = list(headers)
            for i, h in enumerate(headers):
                if h is not None:
                    try:
                        check_headers(h)
                    except errors.SerializationError as exc:
                        raise errors.SerializationError(f"record {i}: {exc}") from None
                    hsizes[i] = headers_size_in_bytes(h)
        sizes = size_upper_bounds(
            kcol.lengths if kcol is not None else np.full(n, -1, dtype=np.int64),
            vcol.lengths,
            hsizes,
        )
        limit = min(self._max_request_size, self._total_memory)
        if n and sizes.max() > limit:
            bad = int(np.argmax(sizes > limit))
            raise errors.RecordTooLargeError(
                f"record {bad} is {int(sizes[bad])} bytes when serialized, larger than "
                f"max.request.size ({self._max_request_size}) or buffer.memory "
                f"({self._total_memory})"
            )
        if fixed_partition is not None:
            parts = np.full(n, fixed_partition, dtype=np.int32)
        elif partition is not None:
            parts = np.ascontiguousarray(partition, dtype=np.int32)
            bad_mask = (parts < -1) | (parts >= count)
            if bad_mask.any():
                bad = int(np.argmax(bad_mask))
                raise errors.InvalidPartitionError(
                    f"partition[{bad}] = {int(parts[bad])} is out of range for topic {topic!r} "
                    f"with {count} partitions (0..{count - 1}, or -1)"
                )
        elif kcol is not None and not self._ignore_keys:
            parts = partitions_of_column(kcol, count)
        else:
            parts = np.full(n, -1, dtype=np.int32)
        ts_array = None
        ts_scalar = self._clock.milliseconds()
        if timestamps is not None:
            if isinstance(timestamps, int):
                ts_scalar = timestamps
            else:
                ts_array = np.ascontiguousarray(timestamps, dtype=np.int64)
                if ts_array.shape != (n,):
                    raise ValueError(f"timestamps must be an int or {n} ints")
        # keyed records: group by partition, keeping each partition's records in call order.
        # With sticky (-1) records among them the call order is kept as it is: where a sticky
        # record lands depends on what was appended before it.
        order = partition_order(parts)
        future = BatchFuture(topic, n)
        appended, wakeup, failure = append_columns(
            self._accumulator,
            topic,
            vcol,
            kcol,
            parts,
            order,
            ts_array,
            ts_scalar,
            headers,
            future,
            float(self._max_block_ms),
            now,
            cluster,
            sizes,
            self._sender.wakeup,
        )
        if wakeup or appended:
            self._sender.wakeup()
        if failure is not None:
            # records not accepted (e.g. no memory within max.block.ms) fail with their index
            future.complete_segment(order, appended, n, -1, -1, 0, failure)
        return future

    def _intercepted_callback(self, callback: Any) -> Callable[[Any, Any], None]:
        interceptors = self._interceptors

        def on_completion(metadata: Any, exception: Any) -> None:
            interceptors.on_acknowledgement(metadata, exception)
            if callback is not None:
                callback(metadata, exception)

        return on_completion

    def _partition(
        self,
        topic: str,
        key: Any,
        key_bytes: Any,
        value: Any,
        value_bytes: Any,
        cluster: Cluster,
        count: int,
    ) -> int:
        if self._partitioner is not None:
            part = self._partitioner.partition(topic, key, key_bytes, value, value_bytes, cluster)
            if not isinstance(part, int) or part < -1 or part >= count:
                raise errors.InvalidPartitionError(
                    f"the partitioner returned {part!r} for topic {topic!r} with {count} "
                    "partitions; expected 0..count-1, or -1 for the built-in choice"
                )
            if part >= 0:
                return part
        if key_bytes is None or self._ignore_keys:
            return -1
        return partition_for_key(key_bytes, count)

    def _wait_on_metadata(self, topic: str, partition: Optional[int], now: int) -> Any:
        """Java's waitOnMetadata: block until the topic (and partition) is known (at most
        max.block.ms). ``now``: the batch time, for the topic's use time."""
        if partition is not None:
            check_partition_type(partition)
        if partition is not None and partition < 0:
            raise errors.InvalidPartitionError(f"partition must be >= 0, got {partition}")
        self._metadata.add(topic, now)
        begin = self._clock.monotonic_ms()
        version = self._metadata.version
        cluster = self._metadata.fetch()
        count = cluster.partition_count_for_topic(topic)
        refreshed_for_partition = False
        while True:
            if count is not None:
                if partition is None or partition < count:
                    self._valid_topics.add(topic)
                    return version, cluster, count
                if refreshed_for_partition:
                    raise errors.InvalidPartitionError(
                        f"partition {partition} is out of range for topic {topic!r}, which has "
                        f"{count} partitions (0..{count - 1})"
                    )
                refreshed_for_partition = True
            elapsed = self._clock.monotonic_ms() - begin
            remaining = self._max_block_ms - elapsed
            if remaining <= 0:
                raise errors.KafkaTimeoutError(
                    f"topic {topic!r} not present in metadata after {self._max_block_ms} ms "
                    f"(max_block_ms){self._connection_errors()}"
                )
            version = self._metadata.request_update_for_topic(topic)
            self._sender.wakeup()
            waited = self._call_metrics.start()
            try:
                self._metadata.await_update(version, remaining)
            except errors.KafkaTimeoutError:
                raise errors.KafkaTimeoutError(
                    f"topic {topic!r} not present in metadata after {self._max_block_ms} ms "
                    f"(max_block_ms){self._connection_errors()}"
                ) from None
            finally:
                self._call_metrics.record_since("metadata-wait", waited)
            if self._closed:
                raise errors.ProducerClosedError(
                    "the producer was closed while waiting for metadata"
                )
            self._metadata.maybe_throw_exception_for_topic(topic)
            version = self._metadata.version
            cluster = self._metadata.fetch()
            count = cluster.partition_count_for_topic(topic)

    # ------------------------------------------------------------------ transactions
    def _txn(self, what: str) -> TransactionManager:
        if self._closed:
            raise errors.ProducerClosedError(f"{what}: the producer is closed")
        tm = self._transaction_manager
        if tm is None or not self._transactional:
            raise errors.IllegalStateError(f"{what} needs transactional.id in the configuration")
        return tm

    def _txn_timeout(self, timeout: Optional[float]) -> float:
        return self._max_block_ms / 1000.0 if timeout is None else timeout

    def init_transactions(self, timeout: Optional[float] = None) -> None:
        """Get the producer id and epoch of ``transactional.id`` from its coordinator, fencing
        any earlier producer with the same id (and ending its open transaction). Call once,
        before the first ``begin_transaction``. Waits up to ``timeout`` s (default
        ``max.block.ms``); on ``KafkaTimeoutError``, calling it again waits for the same request."""
        start = self._call_metrics.start()
        result = self._txn("init_transactions").initialize_transactions()
        self._sender.wakeup()
        result.await_result(self._txn_timeout(timeout))
        self._call_metrics.record_since("txn-init", start)

    def begin_transaction(self) -> None:
        """Start a transaction: the records sent until commit/abort belong to it."""
        start = self._call_metrics.start()
        self._txn("begin_transaction").begin_transaction()
        self._call_metrics.record_since("txn-begin", start)

    def send_offsets_to_transaction(
        self, offsets: Any, group_metadata: Any, timeout: Optional[float] = None
    ) -> None:
        """Commit consumer offsets as part of the open transaction (consume-transform-produce):
        they take effect if and only if the transaction commits.

        ``offsets``: a mapping ``{TopicPartition or (topic, partition): offset}`` (the offset of
        the next record to consume; a value may also be an ``(offset, metadata)`` pair or have
        ``.offset``/``.metadata``), or an iterable of objects with ``.topic``, ``.partition``,
        ``.offset`` (e.g. confluent-kafka's ``TopicPartition`` list from ``consumer.position``).
        ``group_metadata`` (kafka-python's name for it): the group id (str) or a
        ``ConsumerGroupMetadata``."""
        start = self._call_metrics.start()
        tm = self._txn("send_offsets_to_transaction")
        group = read_group_metadata(group_metadata)
        parsed = transaction_offsets(offsets)
        if parsed:  # Java sends nothing for no offsets
            result = tm.send_offsets_to_transaction(parsed, group)
            self._sender.wakeup()
            result.await_result(self._txn_timeout(timeout))
        self._call_metrics.record_since("txn-send-offsets", start)

    def commit_transaction(self, timeout: Optional[float] = None) -> None:
        """Send every record of the transaction, then commit it. If a record failed, this raises
        ``TransactionAbortableError`` and the transaction must be aborted."""
        start = self._call_metrics.start()
        tm = self._txn("commit_transaction")
        timeout_s = self._txn_timeout(timeout)
        deadline = time.monotonic() + timeout_s
        result = tm.begin_commit()
        self._flush(timeout_s)  # no linger for the last batches; EndTxn waits for them anyway
        result.await_result(max(0.0, deadline - time.monotonic()))
        self._call_metrics.record_since("txn-commit", start)

    def abort_transaction(self, timeout: Optional[float] = None) -> None:
        """Abort the transaction: records not sent yet fail with ``TransactionAbortedError``,
        the sent ones are marked aborted (read_committed consumers skip them)."""
        start = self._call_metrics.start()
        result = self._txn("abort_transaction").begin_abort()
        self._sender.wakeup()
        result.await_result(self._txn_timeout(timeout))
        self._call_metrics.record_since("txn-abort", start)

    # ------------------------------------------------------------------ flush / close / info
    def flush(self, timeout: Optional[float] = None) -> None:
        """Send every record sent so far and wait until each completed (success or error).

        Raises IllegalStateError when called from a completion callback: callbacks run on the
        producer's I/O thread, which would wait for itself (Java 4.x refuses it the same way)."""
        if threading.current_thread() is self._sender.thread:
            raise errors.IllegalStateError(
                "flush() was called from a completion callback: callbacks run on the producer's "
                "I/O thread, which would wait for itself for ever (deadlock); flush from another "
                "thread"
            )
        start = self._call_metrics.start()
        try:
            self._flush(timeout)
        finally:
            self._call_metrics.record_since("flush", start)

    def _flush(self, timeout: Optional[float]) -> None:
        """flush's work (commit_transaction's too, whose time counts as the commit's)."""
        self._accumulator.begin_flush()
        self._sender.wakeup()
        if not self._accumulator.await_flush_completion(timeout):
            raise errors.KafkaTimeoutError(
                f"flush did not complete within {timeout} s{self._connection_errors()}"
            )
        # The pool keeps its free batch buffers (as Java's does); what finished batches freed
        # besides (grown and compressed copies) sits in the C allocator: hand it back to the
        # OS, at most once a second (a transaction per few records flushes very often)
        now = time.monotonic()
        if now - self._last_memory_release >= _MEMORY_RELEASE_INTERVAL_S:
            self._last_memory_release = now
            release_free_memory()

    def close(self, timeout: Optional[float] = None) -> None:
        """Send what was accepted, then stop. ``timeout=0``: abort pending records (each callback
        gets ``ProducerClosedError`` exactly once). Idempotent. From a completion callback it is
        ``close(0)`` that does not wait for the I/O thread it runs on (as Java's)."""
        # checked first: a bad timeout must not abort the pending records (kafka-python refuses
        # it with ValueError too)
        if timeout is not None and (
            isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout >= 0
        ):
            raise ValueError(f"close: timeout must be None or seconds >= 0, got {timeout!r}")
        with self._close_lock:
            if self._closed and not self._sender.thread.is_alive():
                return
            self._closed = True
            if self._fast is not None:
                self._fast.divert = True
        if threading.current_thread() is self._sender.thread:
            if timeout is None or timeout > 0:
                log.warning(
                    "close() from a completion callback: the timeout (%s) becomes 0, since the "
                    "producer's I/O thread cannot wait for itself; records not sent yet fail",
                    timeout,
                )
            self._sender.force_close_now()  # the thread stops once this callback returns
            self._close_components()
            return
        if timeout is None or timeout > 0:
            self._sender.initiate_close()
            self._sender.thread.join(timeout)
            if self._sender.thread.is_alive():
                log.warning("close timed out after %s s; aborting what is left", timeout)
        if self._sender.thread.is_alive() or timeout == 0:
            self._sender.force_close_now()
            self._sender.thread.join()
        self._close_components()

    def _close_components(self) -> None:
        self._pool.close()
        self._metadata.close()
        if self._sasl_login is not None:
            self._sasl_login.close()
        self._interceptors.close()
        close_partitioner = getattr(self._partitioner, "close", None)
        if close_partitioner is not None:
            close_partitioner()
        for serializer in (self.config["key.serializer"], self.config["value.serializer"]):
            close_serializer = getattr(serializer, "close", None)
            if callable(close_serializer):
                close_serializer()  # kafka-python's Serializer.close, Java's Serializer.close

    def __enter__(self) -> KafkaProducer:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:  # pragma: no cover - best effort at interpreter exit
        try:
            if not self._closed:
                self._sender.force_close_now()
        except Exception:
            pass

    def _connection_errors(self) -> str:
        """For a timeout's message: the last error of each address that cannot be connected to,
        the bootstrap servers first (empty when every connection attempt succeeded)."""
        failing = self._client.connection_failures.errors()
        if not failing:
            return ""
        order = [f"{h}:{p}" for h, p in self.config["bootstrap.servers"]]
        named = [a for a in order if a in failing] + sorted(set(failing) - set(order))
        return "".join(f"; cannot connect to {a}: {failing[a]}" for a in named)

    def partitions_for(self, topic: str) -> Set[int]:
        """The partition ids of ``topic`` (waits for its metadata up to ``max_block_ms``)."""
        if self._closed:
            raise errors.ProducerClosedError("the producer is closed")
        check_topic(topic)
        _version, cluster, _count = self._wait_on_metadata(topic, None, self._batch_time_ms())
        return {p.partition for p in cluster.partitions_for_topic(topic)}

    # None with metrics_enabled=False: typed as "the dict | Any" (typeshed's way for a None
    # that depends on the configuration), so that indexing the result needs no None check
    @overload
    def metrics(self, raw: Literal[False] = ...) -> Union[Dict[str, Dict[str, float]], Any]: ...
    @overload
    def metrics(self, raw: Literal[True]) -> Union[Dict[MetricName, Any], Any]: ...
    @overload
    def metrics(self, raw: bool) -> Any: ...
    def metrics(self, raw: bool = False) -> Any:
        """The producer's metrics as kafka-python 3.0 returns them, ``{group: {name: value}}``,
        with Java's names and meanings: ``producer-metrics``, ``producer-node-metrics.node-<id>``
        per broker connected to, ``producer-topic-metrics.<topic>`` per topic sent to and
        ``kafka-metrics-count``. Rates and averages are over ``metrics.num.samples`` windows of
        ``metrics.sample.window.ms``; every value is a float (NaN: an average or maximum with
        nothing in its windows). ``raw=True``: ``{MetricName: KafkaMetric}`` instead (see
        ``cproducer.utils.metric_name``). With ``metrics_enabled=False``: None, as kafka-python.
        Thread-safe; works after close() too."""
        if not self._metrics_enabled:
            return None
        if raw:
            return raw_metrics(self._metric_groups)
        return self._metric_groups()

    def _metric_groups(self) -> Dict[str, Dict[str, float]]:
        return collect_metrics(
            self._sender_metrics,
            self._network_metrics,
            client=self._client,
            metadata=self._metadata,
            now_ms=self._clock.monotonic_ms(),
            calls=self._call_metrics,
        )

    @property
    def closed(self) -> bool:
        return self._closed
