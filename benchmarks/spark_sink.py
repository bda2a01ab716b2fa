"""Spark sink benchmark: cproducer.spark.write_to_kafka vs confluent-kafka per row in mapInArrow.

1M rows x 100-byte values, 4 Spark partitions, local[2], a warm session (each approach runs once
untimed first), one LocalBroker, a fresh topic per run. Every row's delivery is counted.

    python benchmarks/spark_sink.py [--rows 1000000]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import uuid
from typing import Any, Iterator


def confluent_sink(df: Any, topic: str, bootstrap: str) -> int:
    """The best a user can do today without a JVM Kafka jar: produce per row in mapInArrow."""

    def task(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa
        from confluent_kafka import Producer

        p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
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


def main(argv: Any = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
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
    results = {}
    with LocalBroker() as broker:
        for name in ("cproducer", "confluent"):
            for warm in (True, False):
                topic = f"sink-{name}-{uuid.uuid4().hex[:6]}"
                broker.create_topic(topic, 4)
                t0 = time.perf_counter()
                if name == "cproducer":
                    report = write_to_kafka(
                        df, topic, bootstrap_servers=broker.bootstrap_servers, linger_ms=5
                    )
                    delivered = report.delivered
                else:
                    delivered = confluent_sink(df, topic, broker.bootstrap_servers)
                elapsed = time.perf_counter() - t0
                if not warm:
                    assert delivered == args.rows, (name, delivered)
                    results[name] = elapsed
    spark.stop()
    print(f"{args.rows} rows x 100 B, 4 partitions, local[2], Python {sys.version.split()[0]}")
    print(f"{'approach':<34}{'time s':>8}{'rows/s':>12}")
    labels = {
        "cproducer": "cproducer write_to_kafka",
        "confluent": "confluent-kafka per row, mapInArrow",
    }
    for name, elapsed in results.items():
        print(f"{labels[name]:<34}{elapsed:>8.2f}{args.rows / elapsed:>12,.0f}")
    print(f"ratio: {results['confluent'] / results['cproducer']:.2f}x the rows/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
