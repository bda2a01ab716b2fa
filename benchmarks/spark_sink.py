"""Spark sink benchmark: Spark's own Kafka sink against cproducer's and confluent-kafka's.

The same rows (--rows, default 1,000,000: an 8-byte key and a 100-byte value each, 4 Spark
partitions, local[2]) go to the same broker, into a fresh 4-partition topic per run, through:

- ``spark``: Spark's own sink, ``format("kafka")`` from the spark-sql-kafka-0-10 jar (Java's
  KafkaProducer in the JVM; ``./dev.sh spark-kafka-libs`` fetches it into .cache/spark-kafka/libs,
  ``$CPRODUCER_SPARK_KAFKA_LIBS`` names another directory; it is handed to the session as
  ``spark.jars``);
- ``cproducer``: cproducer's sink in the Python workers, ``format("cproducer")``
  (``cproducer.spark.KafkaDataSource``, a Python data source: no JVM jar);
- ``cproducer-fn`` (only when --sinks names it): the same writes through the function form,
  ``cproducer.spark.write_to_kafka`` (``mapInArrow``; streams through ``foreachBatch``), which
  skips the data source's planning and commit steps;
- ``spark-bulk`` (only when --sinks names it): Spark's sink given the sizes cproducer's sink
  picks for bulk writes (``kafka.batch.size`` 1 MiB, ``kafka.max.request.size`` 8 MiB,
  ``kafka.send.buffer.bytes`` -1), to tell the sizes from the rest;
- ``cproducer-eos`` (only when --sinks names it; on Apache Kafka): ``format("cproducer")`` with
  ``deliveryGuarantee=exactly-once``: each task's rows in one transaction of a producer of its own,
  with a batch marker (a committed offset) that a replayed task finds;
- ``confluent``: confluent-kafka producing row by row inside ``mapInArrow`` (streams: in
  ``foreachBatch``), the best a Python user has without a JVM jar.

Two modes: ``batch`` writes a cached DataFrame (``df.write``); ``stream`` runs a streaming query
over a directory of 4 parquet files holding the same rows (``readStream``, one file per
partition, ``trigger(availableNow=True)``), each run with its own fresh checkpoint directory, so
the source's read is part of every sink's time.

Settings that matter are the same for all: acks=all, linger.ms (--linger-ms; default 0, what
Spark's sink gets from its kafka-clients' defaults), compression.type (--compression, default
none), idempotence on (Java's default; librdkafka is told so), keys partitioned with murmur2
(librdkafka is told ``murmur2_random``, Java's partitioner). Batch and request sizes are each
sink's own defaults: Spark's sink 16 KiB batches in requests of up to 1 MiB (kafka-clients'),
cproducer's sink 1 MiB batches in requests of up to 8 MiB, librdkafka 1,000,000 bytes for both.

Each sink runs once untimed per mode first (warm-up: the JVM's JIT, the Python workers' imports),
then --repeats rounds in which the sinks alternate; the table gives the median time, rows/s and
the ratio of rows/s to Spark's sink's (medians of the same run), and the CPU seconds each kind of
process spent (on Linux): the JVM (Spark's driver and executor), the Python workers and the broker.
Every run is checked: reading the topic back with librdkafka finds --rows records (no row lost,
none twice).

Brokers: ``--broker tansu`` (default) an embedded Tansu (cproducer.tools.localbroker), fresh for
every run (its memory storage gets slower as it fills); ``--broker kafka`` Apache Kafka 4.4.0 in
KRaft mode (tests/tools/apache_kafka.py; jars from ``./dev.sh kafka-libs``,
``$CPRODUCER_KAFKA_LIBS``), one broker for the whole run, each run's topic deleted after it is
counted. Run from the repository's root:

    ./dev.sh spark-kafka-libs
    python benchmarks/spark_sink.py [--broker tansu|kafka] [--modes batch,stream]
                                    [--rows 1000000] [--repeats 3] [--linger-ms 0]
                                    [--compression none|gzip|snappy|lz4|zstd]
                                    [--sinks spark,cproducer,confluent,spark-bulk,cproducer-fn,
                                             cproducer-eos]
"""

from __future__ import annotations

import argparse
import glob
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional

_REPO = Path(__file__).resolve().parents[1]
_CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
PARTITIONS = 4
LABELS = {
    "spark": "Spark's sink, format(kafka)",
    "cproducer": 'cproducer, format("cproducer")',
    "confluent": "confluent-kafka in mapInArrow",
    "cproducer-eos": "cproducer exactly-once",
    "spark-bulk": "Spark's sink, bulk sizes",
    "cproducer-fn": "cproducer write_to_kafka",
}


def spark_kafka_jars() -> List[str]:
    d = Path(
        os.environ.get("CPRODUCER_SPARK_KAFKA_LIBS") or _REPO / ".cache" / "spark-kafka" / "libs"
    )
    jars = sorted(glob.glob(str(d / "*.jar")))
    if not any("spark-sql-kafka-0-10" in j for j in jars):
        raise SystemExit(
            f"no spark-sql-kafka-0-10 jar in {d}: run `./dev.sh spark-kafka-libs` "
            "(benchmarks/java/spark-kafka/pom.xml) or set CPRODUCER_SPARK_KAFKA_LIBS"
        )
    return jars


def cpu_by_kind(broker_pid: Optional[int]) -> Dict[str, float]:
    """CPU seconds (user + system, with reaped children's) so far of this process's descendants,
    by kind: the JVM (Spark's), the PySpark workers and the broker (other processes on the
    machine are left out)."""
    out = {"jvm": 0.0, "workers": 0.0, "broker": 0.0}
    if not os.path.isdir("/proc"):
        return out
    procs = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        # the command's name, not its command line: an exited worker not yet reaped (a zombie)
        # has no command line left
        comm = stat[stat.find("(") + 1 : stat.rfind(")")]
        fields = stat[stat.rfind(")") + 2 :].split()
        # its own time and its reaped children's: a Python worker that exits during the run is
        # counted in its parent's (the daemon's) time, not lost
        ticks = sum(int(x) for x in fields[11:15])
        procs[int(pid)] = (int(fields[1]), ticks / _CLK_TCK, comm)
    ours = {os.getpid()}
    grew = True
    while grew:
        grew = False
        for pid, (ppid, _, _) in procs.items():
            if ppid in ours and pid not in ours:
                ours.add(pid)
                grew = True
    for pid in ours - {os.getpid()}:
        _, seconds, comm = procs[pid]
        if pid == broker_pid:
            out["broker"] += seconds
        elif comm == "java":
            out["jvm"] += seconds
        elif comm.startswith("python"):  # PySpark's daemon and workers: no other Python child
            out["workers"] += seconds
    return out


def count_back(bootstrap: str, topic: str, expected: int, settle_s: float = 0.5) -> int:
    """The records of ``topic``, read back with librdkafka from offset 0: until ``expected`` were
    seen, then ``settle_s`` more (duplicates would show), or 120 s. (Not the end offsets: Tansu's
    high watermarks do not count records.)"""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"count-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
            "fetch.wait.max.ms": 50,
        }
    )
    try:
        c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
        seen = 0
        deadline = time.monotonic() + 120
        settle: Optional[float] = None
        while time.monotonic() < (settle or deadline):
            for msg in c.consume(num_messages=10000, timeout=0.1):
                if msg.error() is None:
                    seen += 1
            if settle is None and seen >= expected:
                settle = time.monotonic() + settle_s
        return seen
    finally:
        c.close()


# ------------------------------------------------------------------ the sinks


def confluent_rows(df: Any, topic: str, bootstrap: str, config: Dict[str, Any]) -> int:
    """Produce every row of ``df`` with confluent-kafka inside mapInArrow; the delivered count."""

    def task(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa
        from confluent_kafka import Producer

        p = Producer({"bootstrap.servers": bootstrap, **config})
        delivered = [0]

        def on_delivery(err: Any, msg: Any) -> None:
            if err is None:
                delivered[0] += 1

        for batch in batches:
            keys = batch.column(0).to_pylist()
            values = batch.column(1).to_pylist()
            for k, v in zip(keys, values):
                while True:
                    try:
                        p.produce(topic, v, k, on_delivery=on_delivery)
                        break
                    except BufferError:
                        p.poll(0.01)
                p.poll(0)
        p.flush(120)
        yield pa.RecordBatch.from_pydict({"delivered": pa.array([delivered[0]], pa.int64())})

    rows = df.select("key", "value").mapInArrow(task, "delivered long").collect()
    return sum(r["delivered"] for r in rows)


class Sinks:
    """One write of each sink in each mode; ``run(name, mode, bootstrap, topic)``."""

    def __init__(
        self,
        spark: Any,
        batch_df: Any,
        stream_dir: str,
        schema: Any,
        producer: Dict[str, Any],
        work: str,
    ) -> None:
        self.spark, self.batch_df = spark, batch_df
        self.stream_dir, self.schema = stream_dir, schema
        self.producer = producer  # Java producer settings every sink gets
        self.work = work
        from cproducer.spark import KafkaDataSource

        spark.dataSource.register(KafkaDataSource)

    def checkpoint(self) -> str:
        return tempfile.mkdtemp(prefix="checkpoint-", dir=self.work)

    def stream(self) -> Any:
        return self.spark.readStream.schema(self.schema).parquet(self.stream_dir)

    def kafka_options(self, bootstrap: str, topic: str) -> Dict[str, str]:
        options = {"kafka.bootstrap.servers": bootstrap, "topic": topic}
        options.update({f"kafka.{k}": str(v) for k, v in self.producer.items()})
        return options

    def run(self, name: str, mode: str, bootstrap: str, topic: str) -> None:
        getattr(self, f"{name.replace('-', '_')}_{mode}")(bootstrap, topic)

    def _start(self, writer: Any) -> None:
        query = writer.trigger(availableNow=True).start()
        query.awaitTermination()
        if query.exception() is not None:
            raise RuntimeError(f"streaming query failed: {query.exception()}")

    # Spark's own sink
    def spark_batch(self, bootstrap: str, topic: str) -> None:
        self.batch_df.write.format("kafka").options(**self.kafka_options(bootstrap, topic)).save()

    def spark_stream(self, bootstrap: str, topic: str) -> None:
        writer = (
            self.stream()
            .writeStream.format("kafka")
            .options(**self.kafka_options(bootstrap, topic))
            .option("checkpointLocation", self.checkpoint())
        )
        self._start(writer)

    def spark_bulk_options(self, bootstrap: str, topic: str) -> Dict[str, str]:
        from cproducer.spark import SINK_BATCH_SIZE, SINK_MAX_REQUEST_SIZE, SINK_SEND_BUFFER_BYTES

        return {
            **self.kafka_options(bootstrap, topic),
            "kafka.batch.size": str(SINK_BATCH_SIZE),
            "kafka.max.request.size": str(SINK_MAX_REQUEST_SIZE),
            "kafka.send.buffer.bytes": str(SINK_SEND_BUFFER_BYTES),
        }

    def spark_bulk_batch(self, bootstrap: str, topic: str) -> None:
        options = self.spark_bulk_options(bootstrap, topic)
        self.batch_df.write.format("kafka").options(**options).save()

    def spark_bulk_stream(self, bootstrap: str, topic: str) -> None:
        writer = (
            self.stream()
            .writeStream.format("kafka")
            .options(**self.spark_bulk_options(bootstrap, topic))
            .option("checkpointLocation", self.checkpoint())
        )
        self._start(writer)

    # cproducer's
    def cproducer_batch(self, bootstrap: str, topic: str) -> None:
        (
            self.batch_df.write.format("cproducer")
            .options(**self.kafka_options(bootstrap, topic))
            .mode("append")
            .save()
        )

    def cproducer_stream(self, bootstrap: str, topic: str) -> None:
        writer = (
            self.stream()
            .writeStream.format("cproducer")
            .options(**self.kafka_options(bootstrap, topic))
            .option("checkpointLocation", self.checkpoint())
        )
        self._start(writer)

    # cproducer's function form
    def cproducer_fn_batch(self, bootstrap: str, topic: str) -> None:
        from cproducer.spark import write_to_kafka

        write_to_kafka(self.batch_df, topic, bootstrap_servers=bootstrap, **self.producer)

    def cproducer_fn_stream(self, bootstrap: str, topic: str) -> None:
        from cproducer.spark import write_to_kafka

        writer = write_to_kafka(self.stream(), topic, bootstrap_servers=bootstrap, **self.producer)
        self._start(writer.option("checkpointLocation", self.checkpoint()))

    # cproducer's exactly-once option: a transaction per task, with a batch marker
    def cproducer_eos_batch(self, bootstrap: str, topic: str) -> None:
        (
            self.batch_df.write.format("cproducer")
            .options(**self.kafka_options(bootstrap, topic))
            .option("deliveryGuarantee", "exactly-once")
            .mode("append")
            .save()
        )

    def cproducer_eos_stream(self, bootstrap: str, topic: str) -> None:
        writer = (
            self.stream()
            .writeStream.format("cproducer")
            .options(**self.kafka_options(bootstrap, topic))
            .option("deliveryGuarantee", "exactly-once")
            .option("checkpointLocation", self.checkpoint())
        )
        self._start(writer)

    # confluent-kafka's
    def confluent_config(self) -> Dict[str, Any]:
        return {**self.producer, "enable.idempotence": True, "partitioner": "murmur2_random"}

    def confluent_batch(self, bootstrap: str, topic: str) -> None:
        confluent_rows(self.batch_df, topic, bootstrap, self.confluent_config())

    def confluent_stream(self, bootstrap: str, topic: str) -> None:
        config = self.confluent_config()

        def each(batch_df: Any, _batch_id: int) -> None:
            confluent_rows(batch_df, topic, bootstrap, config)

        writer = (
            self.stream()
            .writeStream.foreachBatch(each)
            .option("checkpointLocation", self.checkpoint())
        )
        self._start(writer)


# ------------------------------------------------------------------ brokers


@contextmanager
def tansu_per_run() -> Iterator[Callable[[], Any]]:
    """A fresh Tansu for every run: its memory storage slows as it fills."""
    from cproducer.tools.localbroker import LocalBroker

    @contextmanager
    def one() -> Iterator[Any]:
        with LocalBroker() as broker:
            yield broker

    yield one


@contextmanager
def kafka_for_all() -> Iterator[Callable[[], Any]]:
    """One Apache Kafka broker for every run (starting one takes seconds)."""
    sys.path.insert(0, str(_REPO))
    from tests.tools.apache_kafka import ApacheKafka

    with ApacheKafka() as broker:

        @contextmanager
        def one() -> Iterator[Any]:
            yield broker

        yield one


def delete_topic(bootstrap: str, topic: str) -> None:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})  # alive until the futures are done
    for future in admin.delete_topics([topic]).values():
        future.result(30)


# ------------------------------------------------------------------ main


def main(argv: Any = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--broker", choices=["tansu", "kafka"], default="tansu")
    ap.add_argument("--modes", default="batch,stream")
    ap.add_argument(
        "--sinks",
        default="spark,cproducer,confluent",
        help="any of spark, cproducer, confluent, spark-bulk, cproducer-fn, cproducer-eos "
        "(Apache Kafka only: Tansu's transactions are partial, docs/tested-against.md)",
    )
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--linger-ms", type=int, default=0)
    ap.add_argument(
        "--compression", default="none", choices=["none", "gzip", "snappy", "lz4", "zstd"]
    )
    args = ap.parse_args(argv)
    modes = [m for m in args.modes.split(",") if m]
    sinks = [s for s in args.sinks.split(",") if s]
    for s in sinks:
        if s not in LABELS:
            ap.error(f"unknown sink {s!r}: one of {', '.join(LABELS)}")
    for m in modes:
        if m not in ("batch", "stream"):
            ap.error(f"unknown mode {m!r}: batch or stream")
    jars = spark_kafka_jars()
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    load_before = os.getloadavg()
    work = tempfile.mkdtemp(prefix="spark-sink-")
    builder = SparkSession.builder
    if args.broker == "tansu":
        # every run's broker is new, so every run's Spark producer too: close the idle ones
        # soon (Spark keeps them 10 minutes; a spark-bulk one holds up to 32 MiB of pooled
        # 1 MiB batches, and a pile of them filled the driver's heap)
        builder = builder.config("spark.kafka.producer.cache.timeout", "20s").config(
            "spark.kafka.producer.cache.evictorThreadRunInterval", "5s"
        )
    spark = (
        builder.master("local[2]")
        .config("spark.driver.memory", "2g")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.jars", ",".join(jars))
        # one parquet file per partition for the stream, as the batch DataFrame has 4
        .config("spark.sql.files.openCostInBytes", str(128 * 1048576))
        .config("spark.sql.streaming.forceDeleteTempCheckpointLocation", "true")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    try:
        pad = "x" * 92
        df = spark.range(args.rows, numPartitions=PARTITIONS).select(
            F.lpad(F.col("id").cast("string"), 8, "0").cast("binary").alias("key"),
            F.concat(F.lpad(F.col("id").cast("string"), 8, "0"), F.lit(pad))
            .cast("binary")
            .alias("value"),
        )
        stream_dir = os.path.join(work, "source")
        df.write.parquet(stream_dir)
        batch_df = df.cache()
        batch_df.count()
        producer = {
            "acks": "all",
            "linger.ms": args.linger_ms,
            "compression.type": args.compression,
        }
        bench = Sinks(spark, batch_df, stream_dir, df.schema, producer, work)
        stream_partitions = spark.read.parquet(stream_dir).rdd.getNumPartitions()
        times: Dict[str, List[float]] = {f"{s} {m}": [] for m in modes for s in sinks}
        cpu: Dict[str, Dict[str, float]] = {k: {} for k in times}
        brokers = tansu_per_run() if args.broker == "tansu" else kafka_for_all()
        with brokers as broker_for_run:
            for run in range(args.repeats + 1):  # run 0 warms up
                order = sinks if run % 2 else sinks[::-1]
                for mode in modes:
                    for name in order:
                        with broker_for_run() as broker:
                            pid = broker.process.pid if broker.process is not None else None
                            topic = f"sink-{name}-{mode}-{uuid.uuid4().hex[:6]}"
                            broker.create_topic(topic, PARTITIONS)
                            before = cpu_by_kind(pid)
                            t0 = time.perf_counter()
                            bench.run(name, mode, broker.bootstrap_servers, topic)
                            elapsed = time.perf_counter() - t0
                            after = cpu_by_kind(pid)
                            written = count_back(broker.bootstrap_servers, topic, args.rows)
                            if args.broker == "kafka":
                                delete_topic(broker.bootstrap_servers, topic)
                        if written != args.rows:
                            raise SystemExit(f"{name} {mode}: {written} rows in the topic")
                        key = f"{name} {mode}"
                        print(
                            f"  {'warm-up' if run == 0 else f'round {run}'}: {key} {elapsed:.2f} s",
                            file=sys.stderr,
                        )
                        if run:
                            times[key].append(elapsed)
                            for kind, seconds in after.items():
                                cpu[key][kind] = cpu[key].get(kind, 0.0) + seconds - before[kind]
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)
    load_after = os.getloadavg()
    print(
        f"{args.rows:,} rows x (8 B key, 100 B value), {PARTITIONS} partitions "
        f"(stream: {stream_partitions} parquet files), local[2], broker {args.broker}, "
        f"acks=all, linger.ms={args.linger_ms}, compression={args.compression}, "
        f"median of {args.repeats}, Python {sys.version.split()[0]}"
    )
    print(
        f"load average (1, 5, 15 min): before {', '.join(f'{x:.2f}' for x in load_before)}; "
        f"after {', '.join(f'{x:.2f}' for x in load_after)}"
    )
    print(
        f"{'mode':<7}{'sink':<31}{'time s':>8}{'min-max':>12}{'rows/s':>11}{'vs Spark':>9}"
        f"{'CPU s: JVM':>12}{'workers':>9}{'broker':>8}"
    )
    for mode in modes:
        median = {s: statistics.median(times[f"{s} {mode}"]) for s in sinks}
        for s in sinks:
            key = f"{s} {mode}"
            c = {k: v / args.repeats for k, v in cpu[key].items()}
            spread = f"{min(times[key]):.2f}-{max(times[key]):.2f}"
            ratio = f"{median['spark'] / median[s]:.2f}x" if "spark" in median else "-"
            print(
                f"{mode:<7}{LABELS[s]:<31}{median[s]:>8.2f}{spread:>12}"
                f"{args.rows / median[s]:>11,.0f}{ratio:>9}"
                f"{c['jvm']:>12.2f}{c['workers']:>9.2f}{c['broker']:>8.2f}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
