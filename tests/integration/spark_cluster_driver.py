"""A Spark driver for a standalone cluster, run as its own process by the cluster tests.

    python -m tests.integration.spark_cluster_driver spark://127.0.0.1:PORT

Its own process because a Python process holds one SparkContext, and the local[2] tests may have
theirs. Reads one JSON command per line on stdin, answers one JSON line on stdout:

    {"op": "write", "bootstrap": ..., "topic": ..., "rows": N, "partitions": P,
     "delay_s": S, "progress_dir": D, "stall": [PARTITION, SECONDS], "guarantee": G}

writes N rows (value = key = the row number as text) with ``write_to_kafka`` from P Spark
partitions (with ``guarantee``: through ``format("cproducer")`` with that deliveryGuarantee).
The rows come from a ``mapInArrow`` that waits ``delay_s`` before each Arrow batch and leaves
``start-EXECUTOR_PID-PARTITION-ATTEMPT`` and ``end-...`` files in D, so a test can see which
executor JVM runs which task attempt while the write is under way. With ``stall``, the first
attempt of that partition, its batches all yielded, waits that long before it ends (a
``stalled-...`` file): a straggler, which Spark's speculation runs a copy of. (Its rows reach the
sink meanwhile: a straggler that stopped mid-way would hold its last batches in the buffers
between the Python workers and the JVM, and no row of it would be sent.) The answer has
the DeliveryReport's totals and each successful task attempt.

Speculation is on, with thresholds no task of the tests reaches unless it is made to stall: a
copy of a task starts once it has run 15 s and ten times the median of its stage's finished
tasks.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from typing import Any, Dict, Iterator


def _executor_pid() -> int:
    """The executor JVM this Python worker runs under (its nearest such ancestor), or -1."""
    pid = os.getpid()
    while pid > 1:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                if b"CoarseGrainedExecutorBackend" in fh.read():
                    return pid
            with open(f"/proc/{pid}/stat") as fh:
                pid = int(fh.read().rsplit(")", 1)[1].split()[1])
        except OSError:
            break
    return -1


def _rows(spark: Any, cmd: Dict[str, Any]) -> Any:
    delay_s = float(cmd.get("delay_s", 0.0))
    progress_dir = cmd.get("progress_dir")
    stall_partition, stall_s = cmd.get("stall") or (-1, 0.0)

    def generate(batches: Iterator[Any]) -> Iterator[Any]:
        import time

        import pyarrow as pa
        import pyarrow.compute as pc
        from pyspark import TaskContext

        ctx = TaskContext.get()
        tag = f"{_executor_pid()}-{ctx.partitionId()}-{ctx.attemptNumber()}"

        def mark(what: str) -> None:
            if progress_dir:
                with open(os.path.join(progress_dir, f"{what}-{tag}"), "w"):
                    pass

        mark("start")
        for batch in batches:
            if delay_s:
                time.sleep(delay_s)
            text = pc.cast(batch.column(0), pa.string())
            binary = pc.cast(text, pa.binary())
            yield pa.RecordBatch.from_arrays([binary, binary], ["key", "value"])
        if ctx.partitionId() == stall_partition and ctx.attemptNumber() == 0:
            mark("stalled")
            time.sleep(stall_s)
        mark("end")

    return spark.range(int(cmd["rows"]), numPartitions=int(cmd["partitions"])).mapInArrow(
        generate, "key binary, value binary"
    )


def main() -> int:
    from pyspark.sql import SparkSession

    from cproducer.spark import KafkaDataSource, write_to_kafka

    master = sys.argv[1]
    spark = (
        SparkSession.builder.master(master)
        .appName("cproducer-standalone-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.executor.memory", "512m")
        .config("spark.executor.cores", "1")
        .config("spark.speculation", "true")
        .config("spark.speculation.multiplier", "10")
        .config("spark.speculation.minTaskRuntime", "15s")
        .config("spark.pyspark.python", sys.executable)
        .config("spark.executorEnv.PYTHONPATH", os.environ.get("PYTHONPATH", ""))
        # small Arrow batches: a task sends several, so a kill can land between them
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", "5000")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    spark.dataSource.register(KafkaDataSource)
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        cmd = json.loads(line)
        if cmd.get("op") == "stop":
            break
        try:
            if cmd.get("guarantee"):  # the cproducer format: no report, the job fails or not
                (
                    _rows(spark, cmd)
                    .write.format("cproducer")
                    .option("kafka.bootstrap.servers", cmd["bootstrap"])
                    .option("kafka.linger.ms", "5")
                    .option("topic", cmd["topic"])
                    .option("deliveryGuarantee", cmd["guarantee"])
                    .mode("append")
                    .save()
                )
                print(json.dumps({"saved": True}), flush=True)
                continue
            report = write_to_kafka(
                _rows(spark, cmd),
                cmd["topic"],
                bootstrap_servers=cmd["bootstrap"],
                raise_on_error=False,
                linger_ms=5,
            )
            answer: Dict[str, Any] = {
                "produced": report.produced,
                "delivered": report.delivered,
                "errors": report.errors,
                "tasks": [
                    [t.partition_id, t.attempt, t.produced, t.delivered, t.errors, t.first_error]
                    for t in report.per_task
                ],
            }
        except Exception as exc:
            answer = {"error": f"{type(exc).__name__}: {exc}", "trace": traceback.format_exc()}
        print(json.dumps(answer), flush=True)
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
