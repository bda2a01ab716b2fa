"""The broker killed (SIGKILL) and restarted mid-stream, with storage that survives the crash
(Tansu's s3 engine against a local moto S3 server): every record completes exactly once, every
record acknowledged with an offset is there at that offset after the restart, and none is there
twice."""

from __future__ import annotations

import logging
import re
import socket
import subprocess
import sys
import threading
import time
import uuid
from typing import Any, Dict, List, Optional, Tuple

import boto3
import pytest

from cproducer import KafkaProducer, errors
from cproducer.localbroker import LocalBroker, free_port
from tests.integration.readback import assert_delivered, read_back


@pytest.fixture()
def s3_broker(monkeypatch):
    port = free_port()
    moto = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "moto server did not start"
                time.sleep(0.05)
        endpoint = f"http://127.0.0.1:{port}"
        for k, v in {
            "AWS_ACCESS_KEY_ID": "test",
            "AWS_SECRET_ACCESS_KEY": "test",
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_ENDPOINT": endpoint,
            "AWS_ALLOW_HTTP": "true",
        }.items():
            monkeypatch.setenv(k, v)
        boto3.client("s3", endpoint_url=endpoint).create_bucket(Bucket="tansu")
        with LocalBroker(storage="s3://tansu/") as broker:
            yield broker
    finally:
        moto.terminate()
        moto.wait(10)


def test_kill_and_restart_every_record_once(
    s3_broker: LocalBroker, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="cproducer.producer.internals.sender")
    topic = f"crash-{uuid.uuid4().hex[:8]}"
    s3_broker.create_topic(topic, 2)
    lock = threading.Lock()
    calls: Dict[int, List[Tuple[Any, Optional[BaseException]]]] = {}

    acked_500 = threading.Event()

    def callback(i: int):
        def done(md: Any, exc: Optional[BaseException]) -> None:
            with lock:
                calls.setdefault(i, []).append((md, exc))
            if i == 500:
                acked_500.set()

        return done

    def kill_and_restart() -> None:
        # from another thread, as soon as record 500 is acknowledged: later batches are then
        # in flight or in the accumulator, and go on being appended while the broker is down
        acked_500.wait(30)
        s3_broker.kill()
        time.sleep(0.2)
        s3_broker.start()

    n = 3000
    producer = KafkaProducer(
        bootstrap_servers=s3_broker.bootstrap_servers,
        delivery_timeout_ms=15000,
        request_timeout_ms=3000,
        retry_backoff_ms=50,
        reconnect_backoff_ms=20,
        reconnect_backoff_max_ms=200,
        linger_ms=2,
    )
    killer = threading.Thread(target=kill_and_restart)
    killer.start()
    try:
        for i in range(n):
            producer.send(topic, b"%d" % i, callback=callback(i))
            if i % 100 == 99:
                time.sleep(0.002)  # the stream spans the kill
        killer.join()
        producer.flush(timeout=60)
    finally:
        producer.close(timeout=10)
    assert sorted(calls) == list(range(n))
    assert all(len(c) == 1 for c in calls.values()), "a record completed twice"
    delivered = {i for i, c in calls.items() if c[0][1] is None}
    failed = [c[0][1] for c in calls.values() if c[0][1] is not None]
    assert all(isinstance(e, errors.KafkaError) for e in failed)
    # An acknowledgement without an offset is the broker's DUPLICATE_SEQUENCE_NUMBER answer to a
    # retried batch: it says it already holds the batch, and the producer completes it as a
    # success without offset, as Java's Sender and librdkafka do. Tansu 0.6.0's s3 engine, killed
    # in the middle of a produce request, can keep the producer's sequence and the batch's
    # offsets but lose the batch's data, then answer DUPLICATE_SEQUENCE_NUMBER when the batch is
    # retried. Seen in about half of the runs when the kill lands while a request is in flight;
    # librdkafka's idempotent producer, under the same kill, lost records it had acknowledged
    # *with* offsets. So a record acknowledged with an offset must be in the topic at exactly that
    # partition and offset; a record acknowledged without one can only be checked against the
    # broker's word, and the test says how many it could not find.
    with_offset = {i for i in delivered if calls[i][0][0].offset >= 0}
    # ...and every acknowledgement without an offset is accounted for by such an answer
    duplicate_answers = [
        int(m.group(1))
        for r in caplog.records
        if (
            m := re.search(r"already has the batch at sequence \d+ \((\d+) records", r.getMessage())
        )
    ]
    assert len(delivered) - len(with_offset) == sum(duplicate_answers)
    assert len(with_offset) > n // 3
    consumed = read_back(s3_broker.bootstrap_servers, topic, 2, len(with_offset), settle_s=1.0)
    values = [r.value for r in consumed]
    assert len(values) == len(set(values)), "a record is in the topic twice"
    at = {(r.partition, r.offset): int(r.value) for r in consumed if r.value is not None}
    misplaced = [
        (i, calls[i][0][0].partition, calls[i][0][0].offset)
        for i in sorted(with_offset)
        if at.get((calls[i][0][0].partition, calls[i][0][0].offset)) != i
    ]
    assert not misplaced, f"acknowledged with an offset, not there: {misplaced[:10]}"
    # what is there is there once, each partition in send order (the failed records, and those
    # acknowledged without an offset, may be missing: see above)
    assert_delivered(
        consumed,
        [b"%d" % i for i in range(n)],
        may_be_missing=[b"%d" % i for i in set(range(n)) - with_offset],
    )
    present = set(at.values())
    unverifiable = sorted(delivered - with_offset - present)
    if unverifiable:
        print(
            f"{len(unverifiable)} records acknowledged as duplicates (no offset) are not in the "
            f"topic: Tansu lost them in the kill ({unverifiable[0]}..{unverifiable[-1]})"
        )
