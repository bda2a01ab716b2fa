"""cproducer.spark.write_to_kafka on local[2] against a real broker, read back with librdkafka."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import uuid

import pytest

from cproducer.errors import ConfigError
from cproducer.localbroker import LocalBroker
from cproducer.spark import KafkaSinkError, write_to_kafka
from cproducer.utils.murmur2 import partition_for_key
from tests.integration.readback import assert_delivered, read_back


@pytest.fixture(scope="session")
def spark():
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2,4]")  # 4 attempts a task: the kill tests
        .appName("cproducer-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
    # stop() ends the SparkContext; the JVM behind py4j would live on until this process
    # exits, past the run's check that it leaves no process running
    from pyspark import SparkContext

    gateway = SparkContext._gateway
    if gateway is not None:
        gateway.shutdown()
        proc = getattr(gateway, "proc", None)
        if proc is not None:
            proc.stdin.close()  # pyspark's gateway JVM ends when its stdin closes
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        SparkContext._gateway = None
        SparkContext._jvm = None


def _topic(broker: LocalBroker, partitions: int) -> str:
    name = f"spark-{uuid.uuid4().hex[:10]}"
    broker.create_topic(name, partitions)
    return name


def test_keys_values_headers_every_row_once_and_murmur2_partitions(spark, broker) -> None:
    from pyspark.sql import functions as F

    n = 200_000
    topic = _topic(broker, 4)
    df = (
        spark.range(n, numPartitions=4)
        .withColumn("key", F.concat(F.lit("k"), (F.col("id") % 997).cast("string")).cast("binary"))
        .withColumn("value", F.col("id").cast("string").cast("binary"))
        .withColumn(
            "headers",
            F.array(F.struct(F.lit("src").alias("key"), F.lit(b"spark").alias("value"))),
        )
    )
    report = write_to_kafka(df, topic, bootstrap_servers=broker.bootstrap_servers, linger_ms=5)
    assert report.produced == report.delivered == n and report.errors == 0
    assert len(report.per_task) == 4
    records = read_back(broker.bootstrap_servers, topic, 4, n, timeout_s=120)
    # each Spark task's producer sends its slice of the range in order (4 slices of n / 4 rows);
    # there is no order between tasks
    sent = [b"%d" % i for i in range(n)]
    assert_delivered(records, sent, thread_of=lambda v: int(v) // (n // 4))
    for r in records[:5000]:
        assert r.partition == partition_for_key(r.key, 4)
        assert r.headers == [("src", b"spark")]


def test_string_values_null_keys_topic_column_and_partition_column(spark, broker) -> None:
    from pyspark.sql import functions as F

    t1, t2 = _topic(broker, 3), _topic(broker, 3)
    df = (
        spark.range(1000, numPartitions=2)
        .withColumn("value", F.col("id").cast("string"))
        .withColumn("key", F.lit(None).cast("binary"))
        .withColumn("topic", F.when(F.col("id") % 2 == 0, F.lit(t1)).otherwise(F.lit(t2)))
        .withColumn("partition", (F.col("id") % 3).cast("int"))
    )
    report = write_to_kafka(df, bootstrap_servers=broker.bootstrap_servers)
    assert report.delivered == 1000
    for t, parity in ((t1, 0), (t2, 1)):
        recs = read_back(broker.bootstrap_servers, t, 3, 500)
        # two tasks, each its half of the range in order
        mine = [i for i in range(1000) if i % 2 == parity]
        assert_delivered(
            recs,
            [b"%d" % i for i in mine],
            partitions=[i % 3 for i in mine],
            thread_of=lambda v: int(v) // 500,
        )
        for r in recs:
            i = int(r.value)
            assert i % 2 == parity and r.partition == i % 3 and r.key is None


def test_unreachable_broker_reports_errors_naming_tasks(spark) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    df = spark.range(100, numPartitions=2).selectExpr("cast(cast(id as string) as binary) as value")
    opts = {"kafka.bootstrap.servers": f"127.0.0.1:{port}", "kafka.max.block.ms": 1000}
    report = write_to_kafka(df, "t", raise_on_error=False, **opts)
    assert report.delivered == 0 and report.errors == 100
    assert all("KafkaTimeoutError" in (t.first_error or "") for t in report.per_task)
    with pytest.raises(KafkaSinkError, match=r"task \d"):
        write_to_kafka(df, "t", **opts)


def test_bad_column_type_fails_before_any_task(spark) -> None:
    df = spark.range(10).selectExpr("id as value")
    with pytest.raises(ConfigError, match="column 'value' must be binary or string"):
        write_to_kafka(df, "t", bootstrap_servers="127.0.0.1:1")
    df2 = spark.range(10).selectExpr(
        "cast(cast(id as string) as binary) as value", "array(1) as headers"
    )
    with pytest.raises(ConfigError, match="column 'headers'"):
        write_to_kafka(df2, "t", bootstrap_servers="127.0.0.1:1")


def test_worker_keeps_at_most_a_few_producers_closing_the_oldest(broker) -> None:
    """The per-worker cache (a module-level dict: no Spark needed) closes the least recently used
    producer past MAX_CACHED_PRODUCERS and hands back the same producer for the same options."""
    from cproducer import spark as sink

    base = {"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 1}
    options = [
        dict(base, **{"client.id": f"sink-cache-{i}"}) for i in range(sink.MAX_CACHED_PRODUCERS + 1)
    ]
    try:
        made = [sink._worker_producer(o) for o in options[:-1]]
        assert sink._worker_producer(options[0]) is made[0]  # reused, and now the most recent
        newest = sink._worker_producer(options[-1])
        assert made[1].closed  # the least recently used went
        assert not made[0].closed and not newest.closed
        assert len(sink._producers) == sink.MAX_CACHED_PRODUCERS
        assert sink._worker_producer(options[1]) is not made[1]  # a closed one is replaced
    finally:
        sink._close_worker_producers()


def test_streaming_dataframe_writes_each_micro_batch_through_foreach_batch(
    spark, broker, tmp_path
) -> None:
    """A streaming DataFrame (parquet files, availableNow): write_to_kafka returns the writer,
    and every row of every micro-batch arrives once."""
    from pyspark.sql import functions as F

    topic = _topic(broker, 2)
    source = tmp_path / "in"
    for part in range(3):  # three files, read as three micro-batches
        spark.range(part * 1000, (part + 1) * 1000, numPartitions=1).select(
            F.col("id").cast("string").alias("key"), F.col("id").cast("string").alias("value")
        ).write.mode("append").parquet(str(source))
    stream = (
        spark.readStream.schema("key string, value string")
        .option("maxFilesPerTrigger", 1)
        .parquet(str(source))
    )
    writer = write_to_kafka(stream, topic, bootstrap_servers=broker.bootstrap_servers)
    query = (
        writer.trigger(availableNow=True)
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .start()
    )
    query.awaitTermination(120)
    assert query.exception() is None
    assert query.lastProgress is not None and len(query.recentProgress) >= 3
    records = read_back(broker.bootstrap_servers, topic, 2, 3000)
    assert sorted(int(r.value) for r in records) == list(range(3000))
    assert all(r.key == r.value and r.partition == partition_for_key(r.key, 2) for r in records)


def test_sink_defaults_are_bulk_sized_and_explicit_options_win() -> None:
    from cproducer import spark as sink

    opts = sink._producer_options("127.0.0.1:1", {"linger_ms": 5})
    assert opts["batch.size"] == sink.SINK_BATCH_SIZE == 1048576
    assert opts["max.request.size"] == sink.SINK_MAX_REQUEST_SIZE == 8 * 1048576
    assert opts["send.buffer.bytes"] == -1  # the OS's autotuning
    mine = sink._producer_options(
        "127.0.0.1:1", {"max_request_size": 1048576, "kafka.send.buffer.bytes": 131072}
    )
    assert mine["max.request.size"] == 1048576 and mine["send.buffer.bytes"] == 131072


def test_freeze_worker_gc_freezes_once_per_process() -> None:
    import gc

    from cproducer import spark as sink

    assert not sink._gc_frozen and gc.get_freeze_count() == 0
    try:
        sink._freeze_worker_gc()
        frozen = gc.get_freeze_count()
        assert sink._gc_frozen and frozen > 1000  # the imported modules, at least
        garbage = [[]]
        garbage[0].append(garbage)  # a cycle made after the freeze is still collected
        del garbage
        assert gc.collect() >= 2
        alive = [[] for _ in range(5000)]  # tracked objects made after the freeze
        sink._freeze_worker_gc()  # a later task: nothing more is frozen
        # (frozen objects can still be freed by refcount, e.g. by another thread: the count
        # may drop, but a second freeze would have taken the 5000 lists)
        assert gc.get_freeze_count() <= frozen
        del alive
    finally:
        gc.unfreeze()
        sink._gc_frozen = False


def test_task_freezes_the_worker_gc_only_when_asked(broker, monkeypatch) -> None:
    """The task function runs outside Spark too (TaskContext.get() is None there)."""
    import pyarrow as pa

    from cproducer import spark as sink

    calls = []
    monkeypatch.setattr(sink, "_freeze_worker_gc", lambda: calls.append(1))
    topic = _topic(broker, 1)
    options = sink._producer_options(broker.bootstrap_servers, {"linger.ms": 1})
    batch = pa.RecordBatch.from_pydict({"value": pa.array([b"a", b"b"], pa.binary())})
    try:
        for freeze, expected_calls in ((False, 0), (True, 1)):
            task = sink._make_task(options, topic, {"value": "binary"}, freeze)
            (stats,) = list(task(iter([batch])))
            assert stats.column("delivered").to_pylist() == [2]
            assert len(calls) == expected_calls
    finally:
        sink._close_worker_producers()


def test_workers_that_ran_the_sink_have_their_gc_frozen(spark, broker) -> None:
    """Both local[2] workers run a sink task; a probe in the same (reused) workers then sees
    objects frozen out of PySpark's after-task collection."""

    def probe(batches):
        import gc
        import os

        import pyarrow as pa

        for _ in batches:
            pass
        yield pa.RecordBatch.from_pydict({"pid": [os.getpid()], "frozen": [gc.get_freeze_count()]})

    topic = _topic(broker, 2)
    df = spark.range(2000, numPartitions=4).selectExpr("cast(id as string) as value")
    assert write_to_kafka(df, topic, bootstrap_servers=broker.bootstrap_servers).delivered == 2000
    rows = df.mapInArrow(probe, "pid long, frozen long").collect()
    assert rows and all(r.frozen > 1000 for r in rows), rows
