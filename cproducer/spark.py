"""Write a Spark DataFrame to Kafka from the Python workers (no JVM Kafka jar needed).

The data source (Spark 4's Python data source API), batch and Structured Streaming::

    from cproducer.spark import KafkaDataSource
    spark.dataSource.register(KafkaDataSource)
    df.write.format("cproducer").option("kafka.bootstrap.servers", "broker:9092") \
        .option("topic", "events").mode("append").save()

Its options and columns are Spark's Kafka sink's; ``deliveryGuarantee=exactly-once`` writes each
task in a transaction (see ``_write_exactly_once`` and docs/guides/spark.md). The function form,
on the same per-task code::

    from cproducer.spark import write_to_kafka
    report = write_to_kafka(df, "events", bootstrap_servers="broker:9092", linger_ms=5)

The column contract is Spark's Kafka sink's: ``value`` (binary or string, required), ``key``
(binary or string, optional), ``topic`` (string, optional: else the ``topic`` argument),
``partition`` (int, optional), ``headers`` (optional ``array<struct<key: string, value: binary>>``).
Other columns are ignored.

How: ``mapInArrow``. Each task hands its Arrow record batches to ``KafkaProducer.send_many``
(values and keys are read straight from the Arrow buffers: no Python object per row), flushes at its
end and yields one stats row (partition id, attempt, produced, delivered, errors, first error). One
producer per Python worker process and configuration is reused across tasks (the
four most recently used are kept; older ones are closed). The driver sums the rows into a
:class:`DeliveryReport` and raises :class:`KafkaSinkError` naming the failed tasks unless
``raise_on_error=False``.

Producer options default to the Java client's, except three sized for bulk writes:
``batch.size`` 1 MiB, ``max.request.size`` 8 MiB (a request carries several full batches; each
batch stays within a broker's default ``message.max.bytes``) and ``send.buffer.bytes`` -1 (the
OS's autotuning, as librdkafka). ``compression_type="lz4"`` is worth setting too: the broker then
stores a fraction of the bytes.

PySpark's daemon runs a full ``gc.collect()`` after every task of a reused Python worker, which
walks every module the worker imported (pandas and pyarrow: 40-100 ms a task, measured on 2 cores).
The sink's first task in each worker calls ``gc.freeze()`` so that later collections skip what was
alive then; ``freeze_worker_gc=False`` leaves the worker's collector alone.

Guarantee: at-least-once. A Spark task that is retried (or speculatively re-run) produces its rows
again; within one task attempt every row is sent once and counted as delivered or failed.
"""

from __future__ import annotations

import atexit
import itertools
import logging
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, List, Optional, Tuple

from cproducer.errors import ConfigError, KafkaError

_log = logging.getLogger("cproducer.spark")

SINK_BATCH_SIZE = 1048576
SINK_MAX_REQUEST_SIZE = 8 * 1048576
SINK_SEND_BUFFER_BYTES = -1

STATS_SCHEMA = (
    "partition_id int, attempt int, produced long, delivered long, errors long, first_error string"
)


class KafkaSinkError(KafkaError):
    """Some Spark tasks could not deliver all their rows; ``.report`` has the details."""

    def __init__(self, message: str, report: DeliveryReport) -> None:
        super().__init__(message)
        self.report = report


@dataclass
class TaskStats:
    partition_id: int
    attempt: int
    produced: int
    delivered: int
    errors: int
    first_error: Optional[str]


@dataclass
class DeliveryReport:
    produced: int
    delivered: int
    errors: int
    per_task: List[TaskStats] = field(default_factory=list)

    @property
    def failed_tasks(self) -> List[TaskStats]:
        return [t for t in self.per_task if t.errors or t.delivered != t.produced]


# ------------------------------------------------------------------ options


def _producer_options(
    bootstrap_servers: Optional[str], producer_config: Dict[str, Any]
) -> Dict[str, Any]:
    """Keyword options and Spark-spelled ones (``kafka.linger.ms``) as Java config names."""
    from cproducer.producer.engine import config_name

    out: Dict[str, Any] = {}
    for key, value in producer_config.items():
        name = key[len("kafka.") :] if key.startswith("kafka.") else key
        java = config_name(name)
        if java is None:
            raise ConfigError(f"write_to_kafka: unknown producer option {key!r}")
        out[java] = value
    if bootstrap_servers is not None:
        out["bootstrap.servers"] = bootstrap_servers
    if "bootstrap.servers" not in out:
        raise ConfigError(
            "write_to_kafka: bootstrap_servers is required (argument or kafka.bootstrap.servers)"
        )
    for key, value in out.items():
        if callable(value) or (key.endswith("serializer") and value is not None):
            raise ConfigError(f"write_to_kafka: option {key!r} cannot be used in a Spark sink")
    # A sink writes in bulk: bigger batches cut the per-batch work (measured: 1.4x the rows/s
    # of 16 KiB batches). Requests carry up to 8 of them (one per partition of the task's
    # topic: each batch stays within a broker's default message.max.bytes, a request within its
    # socket.request.max.bytes of 100 MiB) and the socket buffer is left to the OS's autotuning,
    # as librdkafka does (measured, 1M x 100 B on one connection: 0.36 s and 0.14 CPU-s against
    # 0.52 s and 0.22 CPU-s with Java's 1 MiB requests and 128 KiB SO_SNDBUF; the broker's CPU
    # 0.33 s against 0.39 s). Explicit options win.
    out.setdefault("batch.size", SINK_BATCH_SIZE)
    out.setdefault("max.request.size", SINK_MAX_REQUEST_SIZE)
    out.setdefault("send.buffer.bytes", SINK_SEND_BUFFER_BYTES)
    return out


# ------------------------------------------------------------------ schema checks (driver side)


def _is_headers_type(dt: Any, value_types: Any) -> bool:
    """``array<struct<key: string, value: <value_types>>>``: the sink's ``headers`` column."""
    from pyspark.sql import types as T

    return (
        isinstance(dt, T.ArrayType)
        and isinstance(dt.elementType, T.StructType)
        and [f.name for f in dt.elementType.fields] == ["key", "value"]
        and isinstance(dt.elementType.fields[0].dataType, T.StringType)
        and isinstance(dt.elementType.fields[1].dataType, value_types)
    )


def _check_schema(df: Any, topic: Optional[str]) -> Dict[str, str]:
    """Column kinds by name; raises ConfigError before any task runs."""
    from pyspark.sql import types as T

    fields = {f.name: f.dataType for f in df.schema.fields}
    kinds: Dict[str, str] = {}

    def binary_or_string(name: str) -> str:
        dt = fields[name]
        if isinstance(dt, T.BinaryType):
            return "binary"
        if isinstance(dt, T.StringType):
            return "string"
        raise ConfigError(
            f"write_to_kafka: column {name!r} must be binary or string, got {dt.simpleString()}"
        )

    if "value" not in fields:
        raise ConfigError("write_to_kafka: the DataFrame needs a 'value' column (binary or string)")
    kinds["value"] = binary_or_string("value")
    if "key" in fields:
        kinds["key"] = binary_or_string("key")
    if "topic" in fields:
        if not isinstance(fields["topic"], T.StringType):
            raise ConfigError(
                "write_to_kafka: column 'topic' must be string, got "
                f"{fields['topic'].simpleString()}"
            )
        kinds["topic"] = "string"
    elif topic is None:
        raise ConfigError("write_to_kafka: give a topic argument or a 'topic' column")
    if "partition" in fields:
        if not isinstance(fields["partition"], (T.IntegerType, T.LongType, T.ShortType)):
            raise ConfigError(
                "write_to_kafka: column 'partition' must be an integer type, got "
                f"{fields['partition'].simpleString()}"
            )
        kinds["partition"] = "int"
    if "headers" in fields:
        dt = fields["headers"]
        ok = _is_headers_type(dt, (T.BinaryType, T.StringType))
        if not ok:
            raise ConfigError(
                "write_to_kafka: column 'headers' must be array<struct<key: string, value: "
                f"binary>>, got {dt.simpleString()}"
            )
        kinds["headers"] = "headers"
    return kinds


# ------------------------------------------------------------------ worker side

# one producer per configuration, most recently used last; at most MAX_CACHED_PRODUCERS are kept
# (a worker that wrote to many clusters or with many option sets closes the oldest)
_producers: OrderedDict[Tuple[Tuple[str, str], ...], Any] = OrderedDict()
_producers_lock = threading.Lock()
MAX_CACHED_PRODUCERS = 4


def _worker_producer(options: Dict[str, Any]) -> Any:
    """One producer per Python worker process and configuration, reused across tasks."""
    from cproducer import KafkaProducer

    key = tuple(sorted((k, repr(v)) for k, v in options.items()))
    evicted = []
    with _producers_lock:
        producer = _producers.get(key)
        if producer is None or producer.closed:
            producer = KafkaProducer(dict(options))
            _producers[key] = producer
        _producers.move_to_end(key)
        while len(_producers) > MAX_CACHED_PRODUCERS:
            evicted.append(_producers.popitem(last=False)[1])
    for old in evicted:  # a Python worker runs one task at a time: these are idle
        old.close(timeout=30)
    return producer


@atexit.register
def _close_worker_producers() -> None:
    with _producers_lock:
        for producer in _producers.values():
            try:
                producer.close(timeout=30)
            except Exception:
                pass
        _producers.clear()


_gc_frozen = False


def _freeze_worker_gc() -> None:
    """Once per Python worker process: collect, then ``gc.freeze()`` what is alive.

    PySpark's daemon runs ``gc.collect()`` after every task of a reused worker. A full
    collection walks every tracked object: ~78k in a worker that has imported pyarrow and
    pandas (as mapInArrow does), 40-100 ms per task here, paid while the other task runs on the
    same cores. Frozen objects (the imported modules and whatever is alive now) are left out of
    later collections; what later tasks create is collected as before. The cost: cyclic garbage
    among the objects frozen here is never freed (created before this task's producer, so
    at most this one task's leftovers).
    """
    global _gc_frozen
    if _gc_frozen:
        return
    import gc

    gc.collect()
    gc.freeze()
    _gc_frozen = True


def _headers_of(column: Any) -> List[Any]:
    out: List[Any] = []
    for row in column.to_pylist():
        if row is None:
            out.append(None)
        else:
            out.append(
                [
                    (h["key"], h["value"].encode() if isinstance(h["value"], str) else h["value"])
                    for h in row
                ]
            )
    return out


def _send_batch(producer: Any, batch: Any, topic: Optional[str], kinds: Dict[str, str]) -> Any:
    """Send one Arrow record batch; returns the list of BatchFutures."""
    import pyarrow as pa
    import pyarrow.compute as pc

    futures = []
    if "topic" in kinds:
        topics = batch.column(batch.schema.get_field_index("topic"))
        groups = [t for t in pc.unique(topics).to_pylist()]
        for t in groups:
            if t is None:
                if topic is None:
                    raise ConfigError("write_to_kafka: a row has a null topic and no default topic")
                mask = pc.is_null(topics)
                t = topic
            else:
                mask = pc.equal(topics, pa.scalar(t))
            futures.extend(_send_batch(producer, batch.filter(mask), t, _without(kinds, "topic")))
        return futures
    assert topic is not None
    values = batch.column(batch.schema.get_field_index("value"))
    keys = batch.column(batch.schema.get_field_index("key")) if "key" in kinds else None
    partition = None
    if "partition" in kinds:
        col = batch.column(batch.schema.get_field_index("partition"))
        partition = col.fill_null(-1).to_numpy(zero_copy_only=False).astype("int32")
    headers = (
        _headers_of(batch.column(batch.schema.get_field_index("headers")))
        if "headers" in kinds
        else None
    )
    futures.append(
        producer.send_many(topic, values, keys=keys, partition=partition, headers=headers)
    )
    return futures


def _without(kinds: Dict[str, str], name: str) -> Dict[str, str]:
    return {k: v for k, v in kinds.items() if k != name}


def _task_stats(
    options: Dict[str, Any],
    topic: Optional[str],
    kinds: Dict[str, str],
    freeze_gc: bool,
    batches: Iterator[Any],
) -> TaskStats:
    """Send every Arrow batch of one task through ``send_many``, flush, count what completed."""
    from pyspark import TaskContext

    ctx = TaskContext.get()
    pid = ctx.partitionId() if ctx else -1
    attempt = ctx.attemptNumber() if ctx else 0
    produced = delivered = errors = 0
    first_error: Optional[str] = None
    futures: List[Any] = []
    try:
        if freeze_gc:
            _freeze_worker_gc()
        producer = _worker_producer(options)
        for batch in batches:
            try:
                futures.extend(_send_batch(producer, batch, topic, kinds))
                produced += batch.num_rows
            except Exception as exc:  # refused before acceptance: the rows count as errors
                produced += batch.num_rows
                errors += batch.num_rows
                first_error = first_error or f"{type(exc).__name__}: {exc}"
        producer.flush()
    except Exception as exc:
        first_error = first_error or f"{type(exc).__name__}: {exc}"
    delivered, errors, first_error = _settle(futures, produced, errors, first_error)
    return TaskStats(pid, attempt, produced, delivered, errors, first_error)


def _settle(
    futures: List[Any], produced: int, errors: int, first_error: Optional[str]
) -> Tuple[int, int, Optional[str]]:
    """(delivered, errors, first error) once every future completed."""
    delivered = 0
    for fut in futures:
        try:
            result = fut.get(timeout=600)
        except Exception as exc:
            first_error = first_error or f"{type(exc).__name__}: {exc}"
            continue
        delivered += result.count - len(result.errors)
        errors += len(result.errors)
        if result.errors and first_error is None:
            index, row_exc = next(iter(result.errors.items()))
            first_error = f"row {index}: {type(row_exc).__name__}: {row_exc}"
    if delivered + errors < produced:
        errors = produced - delivered
    return delivered, errors, first_error


def _make_task(
    options: Dict[str, Any], topic: Optional[str], kinds: Dict[str, str], freeze_gc: bool
) -> Any:
    def task(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        s = _task_stats(options, topic, kinds, freeze_gc, batches)
        yield pa.RecordBatch.from_pydict(
            {
                "partition_id": pa.array([s.partition_id], pa.int32()),
                "attempt": pa.array([s.attempt], pa.int32()),
                "produced": pa.array([s.produced], pa.int64()),
                "delivered": pa.array([s.delivered], pa.int64()),
                "errors": pa.array([s.errors], pa.int64()),
                "first_error": pa.array([s.first_error], pa.string()),
            }
        )

    return task


# ------------------------------------------------------------------ driver side


def write_to_kafka(
    df: Any,
    topic: Optional[str] = None,
    *,
    bootstrap_servers: Optional[str] = None,
    raise_on_error: bool = True,
    freeze_worker_gc: bool = True,
    **producer_config: Any,
) -> Any:
    """Write ``df`` to Kafka; returns a :class:`DeliveryReport` (see the module docstring).

    ``freeze_worker_gc``: the first task in each Python worker calls ``gc.freeze()`` (see
    :func:`_freeze_worker_gc`), so that PySpark's full collection after every task skips the
    worker's imported modules. False leaves the worker's garbage collector alone.

    For a streaming DataFrame, returns the ``DataStreamWriter`` (call ``.start()``) that writes
    each micro-batch with this function through ``foreachBatch``.
    """
    options = _producer_options(bootstrap_servers, producer_config)
    kinds = _check_schema(df, topic)
    if getattr(df, "isStreaming", False):

        def each(batch_df: Any, _batch_id: int) -> None:
            write_to_kafka(
                batch_df,
                topic,
                raise_on_error=raise_on_error,
                freeze_worker_gc=freeze_worker_gc,
                **_as_kwargs(options),
            )

        return df.writeStream.foreachBatch(each)
    columns = [c for c in ("value", "key", "topic", "partition", "headers") if c in kinds]
    stats = df.select(*columns).mapInArrow(
        _make_task(options, topic, kinds, freeze_worker_gc), STATS_SCHEMA
    )
    per_task = [
        TaskStats(
            r["partition_id"],
            r["attempt"],
            r["produced"],
            r["delivered"],
            r["errors"],
            r["first_error"],
        )
        for r in stats.collect()
    ]
    report = DeliveryReport(
        produced=sum(t.produced for t in per_task),
        delivered=sum(t.delivered for t in per_task),
        errors=sum(t.errors for t in per_task),
        per_task=sorted(per_task, key=lambda t: t.partition_id),
    )
    if raise_on_error and report.failed_tasks:
        names = ", ".join(
            f"task {t.partition_id} (attempt {t.attempt}): {t.errors} errors, {t.first_error}"
            for t in report.failed_tasks[:5]
        )
        raise KafkaSinkError(
            f"write_to_kafka: {report.errors} of {report.produced} rows failed in "
            f"{len(report.failed_tasks)} task(s): {names}",
            report,
        )
    return report


def _as_kwargs(options: Dict[str, Any]) -> Dict[str, Any]:
    return {"kafka." + k: v for k, v in options.items()}


# ------------------------------------------------------------------ the "cproducer" format

#: the format's own options, lowercased as Spark hands them over -> their spelling in messages
_FORMAT_OPTIONS = {
    "topic": "topic",
    "deliveryguarantee": "deliveryGuarantee",
    "transactionalidprefix": "transactionalIdPrefix",
    "jobid": "jobId",
    "freezeworkergc": "freezeWorkerGc",
    "markerreader.": "markerReader.<librdkafka key>",
}
#: read by Spark itself (the stream's checkpoint), handed to the data source too
_SPARK_OPTIONS = frozenset({"checkpointlocation", "path"})
AT_LEAST_ONCE = "at-least-once"
EXACTLY_ONCE = "exactly-once"
DEFAULT_TRANSACTIONAL_ID_PREFIX = "cproducer-spark"
#: local properties Structured Streaming sets on the jobs of a micro-batch (StreamExecution's
#: QUERY_ID_KEY, MicroBatchExecution's BATCH_ID_KEY); the query id survives a restart from the
#: checkpoint, the batch id of a replayed batch is the same
_QUERY_ID_PROPERTY = "sql.streaming.queryId"
_BATCH_ID_PROPERTY = "streaming.sql.batchId"


@dataclass
class WritePlan:
    """What the driver decided from the options and the schema; pickled to every task."""

    options: Dict[str, Any]
    topic: Optional[str]
    kinds: Dict[str, str]
    exactly_once: bool = False
    transactional_id_prefix: str = DEFAULT_TRANSACTIONAL_ID_PREFIX
    #: batch writes: the id the transactional ids derive from (the jobId option, else a fresh
    #: uuid per write); streams use the query id instead
    job_id: Optional[str] = None
    freeze_gc: bool = True
    #: librdkafka settings of the consumer that reads the batch markers (exactly-once)
    marker_reader: Dict[str, str] = field(default_factory=dict)


def _spark_contract(schema: Any, topic: Optional[str]) -> Dict[str, str]:
    """Column kinds by name, checked as Spark's ``KafkaWriter.validateQuery`` checks them (its
    wording): ``topic`` string unless the topic option is set, ``key`` and ``value`` string or
    binary, ``headers`` array<struct<key:string,value:binary>>, ``partition`` int."""
    from pyspark.sql import types as T

    fields = {f.name: f.dataType for f in schema.fields}
    kinds: Dict[str, str] = {}

    def check(name: str, ok: bool, wanted: str) -> None:
        if not ok:
            got = fields[name].simpleString()
            raise ConfigError(
                f"{name} attribute unsupported type {got}. {name} must be a(n) {wanted}"
            )

    if topic is None:  # the option, when given, wins over the column (Spark: a literal)
        if "topic" not in fields:
            raise ConfigError(
                "topic option required when no 'topic' attribute is present. Use the topic "
                "option for setting a topic."
            )
        check("topic", isinstance(fields["topic"], T.StringType), "string")
        kinds["topic"] = "string"
    if "key" in fields:
        check("key", isinstance(fields["key"], (T.StringType, T.BinaryType)), "string or binary")
        kinds["key"] = "key"
    if "value" not in fields:
        raise ConfigError("Required attribute 'value' not found")
    check("value", isinstance(fields["value"], (T.StringType, T.BinaryType)), "string or binary")
    kinds["value"] = "value"
    if "headers" in fields:
        dt = fields["headers"]
        ok = _is_headers_type(dt, T.BinaryType)  # Spark's sink: binary header values only
        check("headers", ok, "array<struct<key:string,value:binary>>")
        kinds["headers"] = "headers"
    if "partition" in fields:
        check("partition", isinstance(fields["partition"], T.IntegerType), "int")
        kinds["partition"] = "int"
    return kinds


def _format_options(options: Any, schema: Any, streaming: bool) -> WritePlan:
    """Check every option and the schema on the driver (in ``writer``/``streamWriter``, before
    any task runs); Spark's messages where Spark's sink has one."""
    from cproducer.producer.config import ProducerConfig

    producer: Dict[str, Any] = {}
    plan_opts: Dict[str, str] = {}
    marker_reader: Dict[str, str] = {}
    for raw_key, value in options.items():
        key = raw_key.lower()  # Spark's options are case-insensitive
        if key.startswith("kafka."):
            name = key[len("kafka.") :]
            if name in ("key.serializer", "value.serializer"):
                what = "keys" if name.startswith("key") else "values"
                raise ConfigError(
                    f"Kafka option '{name}' is not supported as {what} are serialized with "
                    "ByteArraySerializer."
                )
            if name == "transactional.id":
                raise ConfigError(
                    "Kafka option 'transactional.id' is not supported: every task would share "
                    "it and fence the others; use deliveryGuarantee=exactly-once (and "
                    "transactionalIdPrefix), which gives each task its own"
                )
            producer[name] = value
        elif key.startswith("markerreader."):
            marker_reader[key[len("markerreader.") :]] = value
        elif key in _FORMAT_OPTIONS:
            plan_opts[key] = value
        elif key not in _SPARK_OPTIONS:
            known = ", ".join(sorted(["kafka.<producer config>", *_FORMAT_OPTIONS.values()]))
            raise ConfigError(f"cproducer format: unknown option {raw_key!r} (known: {known})")
    if "bootstrap.servers" not in producer:
        raise ConfigError(
            "Option 'kafka.bootstrap.servers' must be specified for configuring Kafka producer"
        )
    ProducerConfig(producer)  # refuses unknown keys and bad values the way the producer does
    guarantee = plan_opts.get("deliveryguarantee", AT_LEAST_ONCE).lower()
    if guarantee not in (AT_LEAST_ONCE, EXACTLY_ONCE):
        raise ConfigError(
            f"option deliveryGuarantee: expected {AT_LEAST_ONCE!r} or {EXACTLY_ONCE!r}, "
            f"got {guarantee!r}"
        )
    exactly_once = guarantee == EXACTLY_ONCE
    for opt in ("transactionalidprefix", "jobid", "markerreader."):
        if not exactly_once and (opt in plan_opts or (opt.endswith(".") and marker_reader)):
            raise ConfigError(
                f"option {_FORMAT_OPTIONS[opt]} is only used with deliveryGuarantee=exactly-once"
            )
    if exactly_once:
        try:
            import confluent_kafka  # noqa: F401
        except ImportError:
            raise ConfigError(
                "deliveryGuarantee=exactly-once reads each task's batch marker (a committed "
                "offset) with librdkafka's consumer: pip install confluent-kafka"
            ) from None
        for name in ("enable.idempotence", "acks"):
            if name in producer and str(producer[name]).lower() not in ("true", "all", "-1"):
                raise ConfigError(
                    f"kafka.{name}={producer[name]} cannot be used with exactly-once "
                    "(transactions need the idempotent producer and acks=all)"
                )
        if streaming and "jobid" in plan_opts:
            raise ConfigError(
                "option jobId is for batch writes; a stream's transactional ids derive from "
                "its query id (kept in the checkpoint)"
            )
    freeze = plan_opts.get("freezeworkergc", "true").lower()
    if freeze not in ("true", "false"):
        raise ConfigError(f"option freezeWorkerGc: expected true or false, got {freeze!r}")
    topic = plan_opts.get("topic")
    kinds = _spark_contract(schema, topic)
    # the function form's bulk defaults (batch.size, max.request.size, send.buffer.bytes)
    producer = _producer_options(None, producer)
    import uuid

    return WritePlan(
        options=producer,
        topic=topic,
        kinds=kinds,
        exactly_once=exactly_once,
        transactional_id_prefix=plan_opts.get(
            "transactionalidprefix", DEFAULT_TRANSACTIONAL_ID_PREFIX
        ),
        job_id=None if streaming else plan_opts.get("jobid") or uuid.uuid4().hex,
        freeze_gc=freeze == "true",
        marker_reader=marker_reader,
    )


def _committed_batch(plan: WritePlan, group: str, marker: Tuple[str, int]) -> int:
    """The offset committed for ``marker`` by ``group`` (-1 if none), read with require_stable:
    the broker answers only once no transaction holding an offset for it is pending.

    librdkafka's consumer sends its OffsetFetch with require_stable when it reads
    read_committed (its default, set here anyway). Not its admin client's
    list_consumer_group_offsets: librdkafka 2.16's crashes (SIGSEGV in its main thread) when
    the group coordinator is not known yet, as on a fresh cluster's first call."""
    from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

    retry_codes = {
        KafkaError.NOT_COORDINATOR,
        KafkaError.COORDINATOR_NOT_AVAILABLE,
        KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
        KafkaError.UNSTABLE_OFFSET_COMMIT,
        KafkaError._TIMED_OUT,
    }

    conf: Dict[str, Any] = {
        "bootstrap.servers": plan.options["bootstrap.servers"],
        "group.id": group,
        "isolation.level": "read_committed",
        "enable.auto.commit": False,
    }
    for name in ("security.protocol", "sasl.mechanism", "client.id"):
        if name in plan.options:
            conf[name] = str(plan.options[name])
    conf.update(plan.marker_reader)
    consumer = Consumer(conf)
    deadline = time.monotonic() + 120
    try:
        while True:
            try:
                (tp,) = consumer.committed([TopicPartition(marker[0], marker[1])], timeout=60)
                break
            except KafkaException as exc:
                # a fresh cluster answers NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS while
                # it creates __consumer_offsets: retriable, as for Java's consumer
                err = exc.args[0] if exc.args else None
                again = err is not None and (err.retriable() or err.code() in retry_codes)
                if not again or time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
    finally:
        consumer.close()
    if tp.error is not None:
        raise KafkaSinkError(
            f"exactly-once: reading the batch marker of group {group!r}: {tp.error}",
            DeliveryReport(0, 0, 0),
        )
    return int(tp.offset) if tp.offset >= 0 else -1


def _first_topic(batch: Any, plan: WritePlan) -> str:
    if plan.topic is not None:
        return plan.topic
    for t in batch.column(batch.schema.get_field_index("topic")).to_pylist():
        if t is not None:
            return str(t)
    raise ConfigError("a row has a null topic and no topic option")


def _write_exactly_once(
    plan: WritePlan, run_id: str, batch_id: int, batches: Iterator[Any]
) -> Tuple[TaskStats, bool]:
    """One transaction for the task's rows and its batch marker; (stats, skipped)."""
    from pyspark import TaskContext

    from cproducer import KafkaProducer

    ctx = TaskContext.get()
    pid = ctx.partitionId() if ctx else 0
    attempt = ctx.attemptNumber() if ctx else 0
    it = iter(batches)
    first = next(it, None)
    while first is not None and first.num_rows == 0:
        first = next(it, None)
    if first is None:  # nothing to write: no transaction, no marker
        return TaskStats(pid, attempt, 0, 0, 0, None), False
    # one transactional id per (prefix, query or job, Spark partition): every attempt of this
    # task (retry, speculative copy, replay after a driver restart) uses the same id, so its
    # init_transactions fences the attempts before it and aborts their open transaction
    txn_id = f"{plan.transactional_id_prefix}-{run_id}-{pid}"
    marker = (_first_topic(first, plan), 0)
    producer = KafkaProducer({**plan.options, "transactional.id": txn_id})
    try:
        producer.init_transactions()
        # the marker: the group's committed offset on partition 0 of the first row's topic is
        # batch id + 1 once this task's transaction for that batch committed. Read after the
        # fencing, with require_stable: an earlier attempt's transaction is settled by then.
        if _committed_batch(plan, txn_id, marker) > batch_id:
            return TaskStats(pid, attempt, 0, 0, 0, None), True
        producer.begin_transaction()
        produced = errors = 0
        first_error: Optional[str] = None
        futures: List[Any] = []
        for batch in itertools.chain((first,), it):
            futures.extend(_send_batch(producer, batch, plan.topic, plan.kinds))
            produced += batch.num_rows
        producer.flush()
        delivered, errors, first_error = _settle(futures, produced, errors, first_error)
        if errors:
            producer.abort_transaction()
            return TaskStats(pid, attempt, produced, delivered, errors, first_error), False
        if not _spark_jvm_alive():
            # the input ended because the JVM that fed it died (an executor killed): PyArrow
            # sees a stream cut at a batch boundary as a clean end, so these may be only part
            # of the task's rows. Committing them with the marker would make the rerun skip the
            # rest; aborting leaves the whole task to it.
            producer.abort_transaction()
            raise KafkaSinkError(
                "exactly-once: the Spark JVM feeding this task is gone; transaction aborted",
                DeliveryReport(produced, 0, produced),
            )
        producer.send_offsets_to_transaction({marker: (batch_id + 1, f"batch {batch_id}")}, txn_id)
        producer.commit_transaction()
        return TaskStats(pid, attempt, produced, delivered, 0, None), False
    finally:
        producer.close(timeout=30)


def _spark_jvm_alive() -> bool:
    """Whether the JVM that started this Python worker (its nearest ``java`` ancestor: the
    executor, or the driver in local mode) still runs. When it dies its children are
    reparented, so the chain no longer reaches a ``java`` process. True where /proc is absent
    (cannot tell)."""
    import os

    pid = os.getpid()
    try:
        for _ in range(8):  # worker -> daemon -> JVM, with room for a wrapper or two
            with open(f"/proc/{pid}/stat") as f:
                pid = int(f.read().rsplit(")", 1)[1].split()[1])
            if pid <= 1:
                return False
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv0 = f.read().split(b"\0", 1)[0]
            if os.path.basename(argv0) == b"java":
                return True
    except (OSError, ValueError, IndexError):
        return True
    return False


def _write_task(plan: WritePlan, batches: Iterator[Any], stream_batch: bool) -> Any:
    """The body of a write task of the format: the commit message, or raise so Spark retries."""
    from pyspark import TaskContext

    skipped = False
    if plan.exactly_once:
        ctx = TaskContext.get()
        if stream_batch:
            run_id = ctx.getLocalProperty(_QUERY_ID_PROPERTY) if ctx else None
            batch_text = ctx.getLocalProperty(_BATCH_ID_PROPERTY) if ctx else None
            if run_id is None or batch_text is None:
                raise KafkaSinkError(
                    "exactly-once: this task carries no streaming query id or batch id "
                    "(continuous processing is not supported)",
                    DeliveryReport(0, 0, 0),
                )
            batch_id = int(batch_text)
        else:
            run_id, batch_id = str(plan.job_id), 0
        stats, skipped = _write_exactly_once(plan, run_id, batch_id, batches)
    else:
        stats = _task_stats(plan.options, plan.topic, plan.kinds, plan.freeze_gc, batches)
    if stats.errors:
        # a failed task is retried by Spark: its rows go out again (at-least-once), or, with
        # exactly-once, in a new transaction after this one was aborted
        raise KafkaSinkError(
            f"cproducer format: task {stats.partition_id} (attempt {stats.attempt}): "
            f"{stats.errors} of {stats.produced} rows failed: {stats.first_error}",
            DeliveryReport(stats.produced, stats.delivered, stats.errors, [stats]),
        )
    return KafkaCommitMessage(stats=stats, skipped=skipped)


def _report(messages: List[Any]) -> DeliveryReport:
    per_task = [m.stats for m in messages if isinstance(m, KafkaCommitMessage)]
    return DeliveryReport(
        produced=sum(t.produced for t in per_task),
        delivered=sum(t.delivered for t in per_task),
        errors=sum(t.errors for t in per_task),
        per_task=sorted(per_task, key=lambda t: t.partition_id),
    )


try:  # the Python data source API: Spark 4.0+
    from pyspark.sql.datasource import (
        DataSource,
        DataSourceArrowWriter,
        DataSourceStreamArrowWriter,
        WriterCommitMessage,
    )
except ImportError:  # pragma: no cover - older Spark: write_to_kafka only
    pass
else:

    @dataclass
    class KafkaCommitMessage(WriterCommitMessage):
        """A task's stats; ``skipped``: exactly-once found its batch already committed."""

        stats: TaskStats
        skipped: bool = False

    class KafkaBatchWriter(DataSourceArrowWriter):
        def __init__(self, plan: WritePlan) -> None:
            self.plan = plan
            self.report: Optional[DeliveryReport] = None

        def write(self, iterator: Iterator[Any]) -> KafkaCommitMessage:
            return _write_task(self.plan, iterator, stream_batch=False)  # type: ignore[no-any-return]

        def commit(self, messages: List[Optional[WriterCommitMessage]]) -> None:
            self.report = _report(list(messages))
            _log.info("cproducer format: wrote %s", self.report)

    class KafkaStreamWriter(DataSourceStreamArrowWriter):
        def __init__(self, plan: WritePlan) -> None:
            self.plan = plan
            self.report: Optional[DeliveryReport] = None

        def write(self, iterator: Iterator[Any]) -> KafkaCommitMessage:
            return _write_task(self.plan, iterator, stream_batch=True)  # type: ignore[no-any-return]

        def commit(self, messages: List[Optional[WriterCommitMessage]], batchId: int) -> None:
            self.report = _report(list(messages))
            _log.info("cproducer format: batch %d: %s", batchId, self.report)

        def abort(self, messages: List[Optional[WriterCommitMessage]], batchId: int) -> None:
            # at-least-once: what the finished tasks sent stays; exactly-once: their
            # transactions committed with their markers, so the replay skips them
            _log.warning("cproducer format: batch %d aborted", batchId)

    class KafkaDataSource(DataSource):
        """``df.write.format("cproducer")`` / ``df.writeStream.format("cproducer")`` after
        ``spark.dataSource.register(KafkaDataSource)``: Spark's Kafka sink contract, written
        by cproducer from the Python workers (see docs/guides/spark.md)."""

        @classmethod
        def name(cls) -> str:
            return "cproducer"

        def writer(self, schema: Any, overwrite: bool) -> KafkaBatchWriter:
            if overwrite:
                # Spark's sink also takes ErrorIfExists; Spark refuses that mode to every
                # Python data source before asking it
                raise ConfigError(
                    "Save mode Overwrite not allowed for Kafka. Allowed save mode is Append."
                )
            return KafkaBatchWriter(_format_options(self.options, schema, streaming=False))

        def streamWriter(self, schema: Any, overwrite: bool) -> KafkaStreamWriter:
            # overwrite (complete mode) writes every row of the result again, as Spark's sink
            return KafkaStreamWriter(_format_options(self.options, schema, streaming=True))
