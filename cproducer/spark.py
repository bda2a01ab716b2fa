"""Write a Spark DataFrame to Kafka from the Python workers (no JVM Kafka jar needed).

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
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, List, Optional, Tuple

from cproducer.errors import ConfigError, KafkaError

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
        ok = (
            isinstance(dt, T.ArrayType)
            and isinstance(dt.elementType, T.StructType)
            and [f.name for f in dt.elementType.fields] == ["key", "value"]
            and isinstance(dt.elementType.fields[0].dataType, T.StringType)
            and isinstance(dt.elementType.fields[1].dataType, (T.BinaryType, T.StringType))
        )
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


def _make_task(
    options: Dict[str, Any], topic: Optional[str], kinds: Dict[str, str], freeze_gc: bool
) -> Any:
    def task(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa
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
        yield pa.RecordBatch.from_pydict(
            {
                "partition_id": pa.array([pid], pa.int32()),
                "attempt": pa.array([attempt], pa.int32()),
                "produced": pa.array([produced], pa.int64()),
                "delivered": pa.array([delivered], pa.int64()),
                "errors": pa.array([errors], pa.int64()),
                "first_error": pa.array([first_error], pa.string()),
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
