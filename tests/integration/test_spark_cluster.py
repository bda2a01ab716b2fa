"""write_to_kafka on a real Spark standalone cluster: a master and two workers on loopback, so the
executors are separate JVMs with their own Python workers, as in production. Every row is read
back with librdkafka; an executor killed mid-write is survived through Spark's task retry."""

from __future__ import annotations

import collections
import json
import os
import queue
import subprocess
import sys
import threading
import time
import uuid
from typing import Any, Dict, Iterator, List, Set, Tuple

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

from cproducer.localbroker import LocalBroker
from cproducer.utils.murmur2 import partition_for_key
from tests.integration.readback import read_back
from tests.integration.spark_cluster import StandaloneCluster

ROWS = 200_000
TOPIC_PARTITIONS = 4
SPARK_PARTITIONS = 8


class Driver:
    """The driver process (tests/integration/spark_cluster_driver.py): JSON lines both ways."""

    def __init__(self, cluster: StandaloneCluster) -> None:
        self._log = open(os.path.join(cluster.work_dir, "driver.log"), "ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.integration.spark_cluster_driver", cluster.url],
            env=cluster.env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            text=True,
        )
        self._lines: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def wait_ready(self, timeout_s: float = 180) -> None:
        answer = self.answer(timeout_s)
        assert answer.get("ready"), f"the driver did not start: {answer}"

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith("{"):
                self._lines.put(json.loads(line))
        self._lines.put({"error": f"the driver exited with code {self.proc.wait()}"})

    def answer(self, timeout_s: float) -> Dict[str, Any]:
        return self._lines.get(timeout=timeout_s)

    def send(self, **cmd: Any) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()

    def close(self) -> None:
        try:
            self.send(op="stop")
            self.proc.wait(60)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()
        self._log.close()


@pytest.fixture(scope="module")
def cluster() -> Iterator[StandaloneCluster]:
    with StandaloneCluster(workers=2, cores=1, memory="1g") as c:
        yield c


@pytest.fixture(scope="module")
def driver(cluster: StandaloneCluster) -> Iterator[Driver]:
    d = Driver(cluster)  # starts its session while the workers register
    try:
        cluster.wait_for_workers()
        d.wait_ready()
        yield d
    finally:
        d.close()


def _start_write(driver: Driver, broker: Any, topic: str, **extra: Any) -> None:
    """Start a write of ROWS rows from SPARK_PARTITIONS partitions (its answer: driver.answer)."""
    driver.send(
        op="write",
        bootstrap=broker.bootstrap_servers,
        topic=topic,
        rows=ROWS,
        partitions=SPARK_PARTITIONS,
        **extra,
    )


def _write(driver: Driver, broker: LocalBroker, topic: str, **extra: Any) -> Dict[str, Any]:
    _start_write(driver, broker, topic, **extra)
    return driver.answer(300)


def _attempts(progress_dir: str, what: str) -> Set[Tuple[int, int, int]]:
    """(executor pid, partition, attempt) of every task attempt that reached ``what``."""
    out = set()
    for name in os.listdir(progress_dir):
        kind, executor, partition, attempt = name.split("-")
        if kind == what:
            out.add((int(executor), int(partition), int(attempt)))
    return out


def _check_every_row(broker: LocalBroker, topic: str) -> int:
    """Every row is in the topic, in its key's murmur2 partition; returns the duplicates."""
    records = read_back(broker.bootstrap_servers, topic, TOPIC_PARTITIONS, ROWS, timeout_s=120)
    values = [int(r.value) for r in records]
    assert set(values) == set(range(ROWS)), f"{ROWS - len(set(values))} rows missing"
    for r in records[:: max(1, len(records) // 5000)]:
        assert r.key == r.value and r.partition == partition_for_key(r.key, TOPIC_PARTITIONS)
    return len(values) - ROWS


def _committed_values(broker: Any, topic: str) -> List[int]:
    """The row numbers a read_committed reader (librdkafka) finds in ``topic``."""
    records = read_back(
        broker.bootstrap_servers,
        topic,
        TOPIC_PARTITIONS,
        ROWS,
        timeout_s=120,
        settle_s=2.0,
        config={"isolation.level": "read_committed"},
    )
    return [int(r.value) for r in records]


def _wait_for_a_row(broker: Any, topic: str, rows: range, timeout_s: float) -> bool:
    """Whether a record whose value is in ``rows`` shows up in ``topic`` within ``timeout_s``
    (read_uncommitted: a record of an open transaction counts)."""
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "group.id": f"watch-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
            "fetch.wait.max.ms": 20,
            "isolation.level": "read_uncommitted",
        }
    )
    try:
        consumer.assign(
            [TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(TOPIC_PARTITIONS)]
        )
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for msg in consumer.consume(num_messages=10000, timeout=0.05):
                if msg.error() is None and int(msg.value()) in rows:
                    return True
        return False
    finally:
        consumer.close()


def _kill_a_task_mid_write(cluster: Any, broker: Any, topic: str, progress: str) -> Any:
    """kill -9 the executor of a task attempt that has sent part of its rows; returns it."""
    # the victim: a task attempt that starts after another one finished (a warm cluster), so it
    # has its whole ~2.5 s ahead of it
    victim = None
    seen: Set[Tuple[int, int, int]] = set()
    deadline = time.monotonic() + 240
    while victim is None and time.monotonic() < deadline:
        started = _attempts(progress, "start")
        if seen and _attempts(progress, "end"):
            fresh = sorted(started - seen, key=lambda t: t[1])
            if fresh:
                victim = fresh[0]
        seen |= started
        time.sleep(0.02)
    assert victim is not None, "no task was seen starting"
    # kill once the broker has rows of the victim's range: the lost attempt did send some
    per_task = ROWS // SPARK_PARTITIONS
    first = victim[1] * per_task
    assert _wait_for_a_row(broker, topic, range(first, first + per_task), timeout_s=60)
    assert victim not in _attempts(progress, "end"), "the task finished before the kill"
    cluster.kill_executor(victim[0])
    return victim


def test_every_row_once_from_executors_in_separate_jvms(cluster, driver, broker, tmp_path) -> None:
    topic = f"cluster-{uuid.uuid4().hex[:10]}"
    broker.create_topic(topic, TOPIC_PARTITIONS)
    answer = _write(driver, broker, topic, progress_dir=str(tmp_path))
    assert "error" not in answer, answer
    assert answer["produced"] == answer["delivered"] == ROWS and answer["errors"] == 0
    assert sorted(t[0] for t in answer["tasks"]) == list(range(SPARK_PARTITIONS))
    # the tasks ran in both executors: JVMs of their own, one under each worker
    executors = {e for e, _p, _a in _attempts(str(tmp_path), "end")}
    by_worker = cluster.executors()
    assert len(executors) == 2 and -1 not in executors, executors
    assert all(len(set(pids) & executors) == 1 for pids in by_worker.values()), by_worker
    assert _check_every_row(broker, topic) == 0


def test_executor_killed_mid_write_retried_tasks_no_row_missing(
    cluster, driver, broker, tmp_path, record_property
) -> None:
    """kill -9 of the executor running a task that has sent part of its rows: Spark reruns the
    lost task elsewhere and the job completes. At-least-once: the rows the lost attempt had sent
    are in the topic twice, nothing is missing."""
    topic = f"cluster-kill-{uuid.uuid4().hex[:10]}"
    broker.create_topic(topic, TOPIC_PARTITIONS)
    progress = str(tmp_path)
    # 25k rows per task in batches of 5000, 0.5 s before each: ~2.5 s per task
    _start_write(driver, broker, topic, delay_s=0.5, progress_dir=progress)
    victim = _kill_a_task_mid_write(cluster, broker, topic, progress)
    per_task = ROWS // SPARK_PARTITIONS
    answer = driver.answer(300)
    assert "error" not in answer, answer
    assert answer["produced"] == answer["delivered"] == ROWS and answer["errors"] == 0
    retried: List[List[Any]] = [t for t in answer["tasks"] if t[1] > 0]
    assert [t[0] for t in retried] == [victim[1]], answer["tasks"]
    duplicates = _check_every_row(broker, topic)
    record_property("rows_written_twice", duplicates)
    print(f"\nexecutor kill: partition {victim[1]} retried, {duplicates} rows written twice")
    # the lost attempt's rows that reached the broker are there twice, and only those
    assert 0 < duplicates <= per_task


@pytest.mark.kafka
@pytest.mark.parametrize("guarantee", ["exactly-once"])
def test_executor_killed_mid_write_exactly_once_reads_every_row_once(
    cluster, driver, kafka_broker, tmp_path, guarantee
) -> None:
    """The same kill through the cproducer format with deliveryGuarantee=exactly-once, on Apache
    Kafka: the lost attempt's open transaction is aborted when the rerun's init_transactions
    fences it, and a read_committed reader sees every row once. (The at-least-once control
    is the test above: the same kill leaves duplicates.)"""
    topic = f"cluster-eos-{uuid.uuid4().hex[:10]}"
    kafka_broker.create_topic(topic, TOPIC_PARTITIONS)
    progress = str(tmp_path)
    _start_write(
        driver, kafka_broker, topic, delay_s=0.5, progress_dir=progress, guarantee=guarantee
    )
    victim = _kill_a_task_mid_write(cluster, kafka_broker, topic, progress)
    answer = driver.answer(300)
    assert answer.get("saved"), answer
    assert any(a[1] == victim[1] and a[2] > 0 for a in _attempts(progress, "end")), victim
    values = _committed_values(kafka_broker, topic)
    assert set(values) == set(range(ROWS)) and len(values) == ROWS


@pytest.mark.kafka
@pytest.mark.parametrize("guarantee", ["at-least-once", "exactly-once"])
def test_speculative_copy_of_a_straggler(
    cluster, driver, kafka_broker, tmp_path, guarantee
) -> None:
    """The first attempt of one task sends its rows, then does not end: Spark's speculation runs
    a copy of it on the other executor, whose success ends the task (Spark kills the first).
    Exactly-once: the copy's init_transactions fences the straggler and aborts its open
    transaction; a read_committed reader sees every row once. At-least-once, the control: the
    straggler's rows that went out are in the topic twice."""
    topic = f"cluster-spec-{uuid.uuid4().hex[:10]}"
    kafka_broker.create_topic(topic, TOPIC_PARTITIONS)
    progress = str(tmp_path)
    straggler = 3
    _start_write(
        driver,
        kafka_broker,
        topic,
        progress_dir=progress,
        stall=[straggler, 120.0],
        guarantee=guarantee,
    )
    answer = driver.answer(300)
    assert answer.get("saved"), answer
    stalled = _attempts(progress, "stalled")
    assert {(p, a) for _e, p, a in stalled} == {(straggler, 0)}, stalled
    (first_executor,) = {e for e, _p, _a in stalled}
    copies = {(e, a) for e, p, a in _attempts(progress, "end") if p == straggler}
    # the task ended by a copy (attempt > 0) in the other executor: speculation, not a retry
    assert len(copies) == 1 and all(a > 0 and e != first_executor for e, a in copies), copies
    values = _committed_values(kafka_broker, topic)
    assert set(values) == set(range(ROWS))
    per_task = ROWS // SPARK_PARTITIONS
    straggler_rows = set(range(straggler * per_task, (straggler + 1) * per_task))
    twice = len(values) - ROWS
    print(f"\nspeculation, {guarantee}: {twice} rows written twice")
    if guarantee == "exactly-once":
        assert twice == 0
    else:
        duplicated = {v for v, n in collections.Counter(values).items() if n > 1}
        assert 0 < twice <= per_task and duplicated <= straggler_rows
