"""Spark sink benchmark: cproducer.spark.write_to_kafka vs confluent-kafka per row in mapInArrow.

1M rows x 100-byte values, 4 Spark partitions, local[2], a warm session (each approach runs once
untimed first), one LocalBroker, a fresh topic per run. Every row's delivery is counted. Both
clients get the same linger.ms and compression.type; batch and request sizes are each sink's
default (cproducer's sink: 1 MiB batches in requests of up to 8 MiB; librdkafka: 1,000,000 bytes
for both).

All approaches run in the same reused Python workers (local[2]: two of them). cproducer's sink
freezes each worker's garbage collector the first time it runs there (see
cproducer.spark._freeze_worker_gc), so after the untimed first round the other approaches' tasks
also skip the imported modules in PySpark's after-task gc.collect(). --no-gc-freeze keeps every
worker unfrozen.

Each approach runs --repeats times, interleaved with the others; the table gives the median time
and the CPU seconds each kind of process spent during the runs (on Linux): the JVM, the Python
workers and the broker. On a 2-core machine they all share the cores, so the broker's share
(Tansu's memory storage faults in a fresh page for every byte it keeps) is part of the time.
Every run gets a fresh broker on a new port: Tansu's memory storage gets slower as it fills
(measured: 0.30 CPU-s per 110 MB at first, 0.65 once ~400 MB are kept), which would charge each
run for the rows of the runs before it. So each run's producers are new, as confluent's are (its
sink makes one per task); ours is then reused by the worker's next task.
"mapInArrow alone" reads the same rows and produces nothing: Spark's own floor.

    python benchmarks/spark_sink.py [--rows 1000000] [--repeats 3] [--compression lz4]
                                    [--no-gc-freeze]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import uuid
from typing import Any, Dict, Iterator, List, Optional

_CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def cpu_by_kind(broker_pid: Optional[int]) -> Dict[str, float]:
    """CPU seconds (user + system) so far of the JVM, the PySpark workers and the broker."""
    out = {"jvm": 0.0, "workers": 0.0, "broker": 0.0}
    if not os.path.isdir("/proc"):
        return out
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                stat = f.read()
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ")
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        seconds = (int(fields[11]) + int(fields[12])) / _CLK_TCK
        if broker_pid is not None and int(pid) == broker_pid:
            out["broker"] += seconds
        elif b"java" in cmd.split(b" ")[0]:
            out["jvm"] += seconds
        elif b"pyspark.daemon" in cmd or b"pyspark.worker" in cmd:
            out["workers"] += seconds
    return out


def confluent_sink(df: Any, topic: str, bootstrap: str, config: Dict[str, Any]) -> int:
    """The best a user can do today without a JVM Kafka jar: produce per row in mapInArrow."""

    def task(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa
        from confluent_kafka import Producer

        p = Producer({"bootstrap.servers": bootstrap, **config})
        delivered = [0]

        def on_delivery(err: Any, msg: Any) -> None:
            if err is None:
                delivered[0] += 1

        for batch in batches:
            values = batch.column(0).to_pylist()
            for v in values:
                while True:
                    try:
                        p.produce(topic, v, on_delivery=on_delivery)
                        break
                    except BufferError:
                        p.poll(0.01)
                p.poll(0)
        p.flush(120)
        yield pa.RecordBatch.from_pydict({"delivered": pa.array([delivered[0]], pa.int64())})

    rows = df.select("value").mapInArrow(task, "delivered long").collect()
    return sum(r["delivered"] for r in rows)


def spark_alone(df: Any) -> int:
    """mapInArrow reading every row and producing nothing."""

    def task(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        n = 0
        for batch in batches:
            n += batch.num_rows
        yield pa.RecordBatch.from_pydict({"delivered": pa.array([n], pa.int64())})

    return sum(
        r["delivered"] for r in df.select("value").mapInArrow(task, "delivered long").collect()
    )


LABELS = {
    "alone": "mapInArrow alone (no producing)",
    "cproducer": "cproducer write_to_kafka",
    "confluent": "confluent-kafka per row, mapInArrow",
}


def main(argv: Any = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--linger-ms", type=int, default=5)
    ap.add_argument(
        "--compression", default="none", choices=["none", "gzip", "snappy", "lz4", "zstd"]
    )
    ap.add_argument(
        "--no-gc-freeze",
        action="store_true",
        help="write_to_kafka(freeze_worker_gc=False): no worker's garbage collector is frozen",
    )
    args = ap.parse_args(argv)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    from cproducer.localbroker import LocalBroker
    from cproducer.spark import write_to_kafka

    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    pad = "x" * 92
    df = (
        spark.range(args.rows, numPartitions=4)
        .select(
            F.concat(F.lpad(F.col("id").cast("string"), 8, "0"), F.lit(pad))
            .cast("binary")
            .alias("value")
        )
        .cache()
    )
    df.count()
    config = {"linger.ms": args.linger_ms, "compression.type": args.compression}
    times: Dict[str, List[float]] = {name: [] for name in LABELS}
    cpu: Dict[str, Dict[str, float]] = {name: {} for name in LABELS}
    for run in range(args.repeats + 1):  # run 0 warms up
        for name in LABELS:
            # A fresh broker for every run: Tansu's memory storage gets slower as it fills, which
            # would charge each run for the rows of the runs before it. A new port, so each run's
            # producers are new too (the same port would let our cached ones meet a broker that
            # forgot their producer id: a 0.1 s UNKNOWN_PRODUCER_ID retry confluent never pays).
            with LocalBroker() as broker:
                broker_pid = broker.process.pid if broker.process is not None else None
                topic = f"sink-{name}-{uuid.uuid4().hex[:6]}"
                broker.create_topic(topic, 4)
                before = cpu_by_kind(broker_pid)
                t0 = time.perf_counter()
                if name == "alone":
                    delivered = spark_alone(df)
                elif name == "cproducer":
                    report = write_to_kafka(
                        df,
                        topic,
                        bootstrap_servers=broker.bootstrap_servers,
                        linger_ms=args.linger_ms,
                        compression_type=args.compression,
                        freeze_worker_gc=not args.no_gc_freeze,
                    )
                    delivered = report.delivered
                else:
                    delivered = confluent_sink(df, topic, broker.bootstrap_servers, config)
                elapsed = time.perf_counter() - t0
                after = cpu_by_kind(broker_pid)
            assert delivered == args.rows, (name, delivered)
            if run:
                times[name].append(elapsed)
                for kind, seconds in after.items():
                    cpu[name][kind] = cpu[name].get(kind, 0.0) + seconds - before[kind]
    spark.stop()
    print(
        f"{args.rows:,} rows x 100 B, 4 partitions, local[2], linger.ms={args.linger_ms}, "
        f"compression={args.compression}, median of {args.repeats}, "
        f"Python {sys.version.split()[0]}, workers' gc {'not ' if args.no_gc_freeze else ''}frozen"
    )
    print(
        f"{'approach':<37}{'time s':>8}{'min-max':>12}{'rows/s':>12}"
        f"{'CPU s: JVM':>12}{'workers':>9}{'broker':>8}"
    )
    median = {name: statistics.median(v) for name, v in times.items()}
    for name in LABELS:
        c = {k: v / args.repeats for k, v in cpu[name].items()}
        spread = f"{min(times[name]):.2f}-{max(times[name]):.2f}"
        print(
            f"{LABELS[name]:<37}{median[name]:>8.2f}{spread:>12}{args.rows / median[name]:>12,.0f}"
            f"{c['jvm']:>12.2f}{c['workers']:>9.2f}{c['broker']:>8.2f}"
        )
    print(f"ratio: {median['confluent'] / median['cproducer']:.2f}x the rows/s (medians)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
