"""The ``cproducer`` Spark format (``cproducer.spark.KafkaDataSource``) on local[2,4] against
real brokers, read back with librdkafka (read_committed where transactions are involved).

The kill tests SIGKILL the session's Python workers once part of the write's records are in the
topic; Spark retries the failed tasks (local[2,4]: up to 4 attempts). At-least-once then shows
duplicates and no loss (the negative control: the test can tell), exactly-once every row once."""

from __future__ import annotations

import json
import os
import shutil
import signal
import threading
import time
import uuid
from pathlib import Path
from typing import Any, Dict, List

import pytest

from tests.integration.readback import assert_delivered, read_back
from tests.integration.test_spark import spark  # noqa: F401  (the session fixture)

READ_COMMITTED = {"isolation.level": "read_committed"}


@pytest.fixture
def fmt(spark: Any) -> Any:  # noqa: F811
    from cproducer.spark import KafkaDataSource

    spark.dataSource.register(KafkaDataSource)
    return spark


def _topic(broker: Any, partitions: int) -> str:
    name = f"fmt-{uuid.uuid4().hex[:10]}"
    broker.create_topic(name, partitions)
    return name


def _values(records: List[Any]) -> List[bytes]:
    return [r.value for r in records]


def test_batch_write_follows_spark_kafka_sink_contract(fmt: Any, broker: Any) -> None:
    """key/value/headers/partition columns; the topic option wins over a topic column."""
    from pyspark.sql import functions as F

    topic = _topic(broker, 3)
    n = 3000
    df = (
        fmt.range(n, numPartitions=2)
        .withColumn("key", F.concat(F.lit("k"), F.col("id").cast("string")))
        .withColumn("value", F.col("id").cast("string").cast("binary"))
        .withColumn("topic", F.lit("not-this-one"))
        .withColumn("partition", (F.col("id") % 3).cast("int"))
        .withColumn(
            "headers", F.array(F.struct(F.lit("h").alias("key"), F.lit(b"v").alias("value")))
        )
    )
    (
        df.write.format("cproducer")
        .option("kafka.bootstrap.servers", broker.bootstrap_servers)
        .option("kafka.linger.ms", "5")
        .option("topic", topic)
        .mode("append")
        .save()
    )
    records = read_back(broker.bootstrap_servers, topic, 3, n, timeout_s=60)
    # each of the two tasks sends its half of the range in order; no order between them
    assert_delivered(
        records,
        [b"%d" % i for i in range(n)],
        partitions=[i % 3 for i in range(n)],
        thread_of=lambda v: int(v) // (n // 2),
    )
    for r in records:
        i = int(r.value)
        assert r.partition == i % 3 and r.key == f"k{i}".encode() and r.headers == [("h", b"v")]


def _json_files(directory: Path, first: int, count: int, rows: int) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for f in range(first, first + count):
        tmp = directory / f".f{f:03d}.tmp"
        with open(tmp, "w") as out:
            for r in range(rows):
                out.write(json.dumps({"value": f"{f}-{r}"}) + "\n")
        tmp.rename(directory / f"f{f:03d}.json")  # the stream lists whole files only


def _stream(fmt: Any, src: Path, ckpt: Path, broker: Any, topic: str, **options: str) -> Any:
    reader = fmt.readStream.schema("value string").option("maxFilesPerTrigger", 1).json(str(src))
    writer = (
        reader.writeStream.format("cproducer")
        .option("kafka.bootstrap.servers", broker.bootstrap_servers)
        .option("topic", topic)
        .option("checkpointLocation", str(ckpt))
    )
    for k, v in options.items():
        writer = writer.option(k, v)
    q = writer.start()
    try:
        q.processAllAvailable()
    finally:
        q.stop()
    return q


def test_stream_restarted_from_checkpoint_writes_only_new_rows(
    fmt: Any, broker: Any, tmp_path: Path
) -> None:
    topic = _topic(broker, 2)
    src, ckpt = tmp_path / "in", tmp_path / "ckpt"
    _json_files(src, 0, 2, 100)
    first = _stream(fmt, src, ckpt, broker, topic)
    _json_files(src, 2, 2, 100)
    second = _stream(fmt, src, ckpt, broker, topic)
    assert first.id == second.id  # the same query, resumed
    values = _values(read_back(broker.bootstrap_servers, topic, 2, 400, settle_s=1.0))
    assert sorted(values) == sorted(f"{f}-{r}".encode() for f in range(4) for r in range(100))


BAD = [
    ({}, "value", "Option 'kafka.bootstrap.servers' must be specified"),
    ({"topic": None}, "value", "topic option required when no 'topic' attribute is present"),
    ({}, "cast(id as int) as value", "value attribute unsupported type int"),
    ({}, "value, id as partition", "partition attribute unsupported type bigint"),
    ({}, "value, array(1) as headers", "headers attribute unsupported type array<int>"),
    ({}, "value as key", "Required attribute 'value' not found"),
    ({"kafka.linger.msx": "1"}, "value", "unknown producer config 'linger.msx'"),
    ({"kafka.value.serializer": "x"}, "value", "Kafka option 'value.serializer' is not supported"),
    ({"kafka.transactional.id": "x"}, "value", "deliveryGuarantee=exactly-once"),
    ({"kafka.acks": "lots"}, "value", "acks"),
    ({"deliveryGuarantee": "twice"}, "value", "option deliveryGuarantee: expected"),
    ({"transactionalIdPrefix": "p"}, "value", "only used with deliveryGuarantee=exactly-once"),
    ({"topics": "t"}, "value", "unknown option 'topics'"),
]


@pytest.mark.parametrize("options,columns,message", BAD)
def test_bad_option_or_schema_fails_on_the_driver_naming_it(
    fmt: Any, options: Dict[str, Any], columns: str, message: str
) -> None:
    opts: Dict[str, Any] = {"kafka.bootstrap.servers": "127.0.0.1:1", "topic": "t", **options}
    if message.startswith("Option 'kafka.bootstrap"):
        del opts["kafka.bootstrap.servers"]
    df = fmt.range(10).selectExpr("id", "cast(cast(id as string) as binary) as value")
    df = df.selectExpr(*columns.split(", "))
    sc = fmt.sparkContext
    group = f"bad-{uuid.uuid4().hex[:8]}"
    sc.setJobGroup(group, "refused writes")
    try:
        writer = df.write.format("cproducer").mode("append")
        for k, v in opts.items():
            if v is not None:
                writer = writer.option(k, v)
        with pytest.raises(Exception, match=message):
            writer.save()
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
    assert sc.statusTracker().getJobIdsForGroup(group) == []  # no task ran


def test_overwrite_mode_is_refused(fmt: Any) -> None:
    df = fmt.range(1).selectExpr("cast(cast(id as string) as binary) as value")
    writer = df.write.format("cproducer").option("kafka.bootstrap.servers", "127.0.0.1:1")
    with pytest.raises(Exception, match="Save mode Overwrite not allowed for Kafka"):
        writer.option("topic", "t").mode("overwrite").save()


# ------------------------------------------------------------------ failures and exactly-once


def _spark_python_workers() -> List[int]:
    """The Python workers this test's Spark forked: children of a ``pyspark.daemon``."""

    def cmdline(pid: str) -> bytes:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                return f.read()
        except OSError:
            return b""

    daemons = {p for p in os.listdir("/proc") if p.isdigit() and b"pyspark.daemon" in cmdline(p)}
    workers = []
    for pid in daemons:
        try:
            with open(f"/proc/{pid}/stat") as f:
                ppid = f.read().rsplit(")", 1)[1].split()[1]
        except OSError:
            continue
        if ppid in daemons:
            workers.append(int(pid))
    return workers


def _high_watermark(broker: Any, topic: str, partitions: int) -> int:
    """The sum of the partitions' high watermarks: every record written, committed or not."""
    from confluent_kafka import Consumer
    from confluent_kafka import TopicPartition as TP

    c = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "hw"})
    try:
        return sum(
            c.get_watermark_offsets(TP(topic, p), timeout=10, cached=False)[1]
            for p in range(partitions)
        )
    finally:
        c.close()


def _kill_workers_once_rows_went_out(bootstrap: str, topic: str, at_least: int) -> Any:
    """A thread that SIGKILLs the Spark Python workers once ``at_least`` records (committed or
    not) are in ``topic``: the write's tasks die mid-batch, after part of their rows went out."""
    from confluent_kafka import Consumer
    from confluent_kafka import TopicPartition as TP

    killed: Dict[str, Any] = {}
    ready = threading.Event()

    def run() -> None:
        # read_uncommitted: the high watermark, open transactions included (not the LSO)
        c = Consumer(
            {"bootstrap.servers": bootstrap, "group.id": "w", "isolation.level": "read_uncommitted"}
        )
        try:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                high = sum(c.get_watermark_offsets(TP(topic, p), timeout=5)[1] for p in range(2))
                ready.set()  # connected: the write may start
                if high >= at_least:
                    killed["pids"] = _spark_python_workers()
                    killed["at"] = high
                    for pid in killed["pids"]:
                        os.kill(pid, signal.SIGKILL)
                    return
                time.sleep(0.01)
        finally:
            c.close()

    t = threading.Thread(target=run, daemon=True)
    t.start()
    assert ready.wait(30)
    return t, killed


@pytest.mark.kafka
@pytest.mark.parametrize("guarantee", ["at-least-once", "exactly-once"])
def test_tasks_killed_mid_batch(fmt: Any, kafka_broker: Any, guarantee: str) -> None:
    n = 600_000
    topic = _topic(kafka_broker, 2)
    df = fmt.range(n, numPartitions=2).selectExpr(
        "cast(concat(cast(id as string), repeat('x', 90)) as binary) as value"
    )
    watcher, killed = _kill_workers_once_rows_went_out(
        kafka_broker.bootstrap_servers, topic, n // 10
    )
    sc = fmt.sparkContext
    group = f"kill-{uuid.uuid4().hex[:8]}"
    sc.setJobGroup(group, "killed write")
    try:
        (
            df.write.format("cproducer")
            .option("kafka.bootstrap.servers", kafka_broker.bootstrap_servers)
            .option("kafka.batch.size", "65536")  # records go out early in the task
            .option("topic", topic)
            .option("deliveryGuarantee", guarantee)
            .mode("append")
            .save()
        )
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
    watcher.join(10)
    assert killed.get("pids")  # rows had gone out (committed or not) when the workers died
    failed = sum(
        sc.statusTracker().getStageInfo(stage).numFailedTasks
        for job in sc.statusTracker().getJobIdsForGroup(group)
        for stage in sc.statusTracker().getJobInfo(job).stageIds
    )
    assert failed >= 1  # ... before their tasks had finished: Spark retried them
    # exactly-once: n records, each once. At-least-once: the retries' duplicates make the count
    # reach n before the logs' ends are read, so read up to the high watermarks (no markers)
    expected = n if guarantee == "exactly-once" else _high_watermark(kafka_broker, topic, 2)
    records = read_back(
        kafka_broker.bootstrap_servers,
        topic,
        2,
        expected,
        timeout_s=120,
        settle_s=2.0,
        config=READ_COMMITTED,
    )
    ids = [int(r.value[:-90]) for r in records]
    assert set(ids) == set(range(n))  # no row missing
    if guarantee == "exactly-once":
        assert len(ids) == n
    else:  # the killed attempts' rows went out and stay: the test sees the retries' duplicates
        assert len(ids) > n


@pytest.mark.kafka
def test_exactly_once_batch_job_rerun_with_the_same_job_id_writes_nothing(
    fmt: Any, kafka_broker: Any
) -> None:
    topic = _topic(kafka_broker, 2)
    df = fmt.range(1000, numPartitions=2).selectExpr("cast(cast(id as string) as binary) as value")
    job = f"job-{uuid.uuid4().hex[:8]}"
    for _ in range(2):
        (
            df.write.format("cproducer")
            .option("kafka.bootstrap.servers", kafka_broker.bootstrap_servers)
            .option("topic", topic)
            .option("deliveryGuarantee", "exactly-once")
            .option("jobId", job)
            .mode("append")
            .save()
        )
    values = _values(
        read_back(
            kafka_broker.bootstrap_servers, topic, 2, 1000, settle_s=1.0, config=READ_COMMITTED
        )
    )
    assert sorted(values) == sorted(str(i).encode() for i in range(1000))


@pytest.mark.kafka
@pytest.mark.parametrize("guarantee", ["at-least-once", "exactly-once"])
def test_stream_replaying_a_batch_after_a_driver_restart(
    fmt: Any, kafka_broker: Any, tmp_path: Path, guarantee: str
) -> None:
    """The driver 'dies' after the tasks of batch 1 committed and before Spark's commit log
    recorded it (its commit file removed): the restarted query replays batch 1."""
    topic = _topic(kafka_broker, 2)
    src, ckpt = tmp_path / "in", tmp_path / "ckpt"
    _json_files(src, 0, 2, 200)
    opts = {"deliveryGuarantee": guarantee}
    _stream(fmt, src, ckpt, kafka_broker, topic, **opts)
    last = ckpt / "commits" / "1"
    assert last.exists()
    last.unlink()
    crc = ckpt / "commits" / ".1.crc"
    if crc.exists():
        crc.unlink()
    _json_files(src, 2, 1, 200)
    _stream(fmt, src, ckpt, kafka_broker, topic, **opts)
    shutil.rmtree(ckpt)
    values = _values(
        read_back(
            kafka_broker.bootstrap_servers, topic, 2, 600, settle_s=1.5, config=READ_COMMITTED
        )
    )
    assert set(values) == {f"{f}-{r}".encode() for f in range(3) for r in range(200)}
    if guarantee == "exactly-once":
        assert len(values) == 600
    else:  # batch 1 written twice
        assert len(values) == 800
