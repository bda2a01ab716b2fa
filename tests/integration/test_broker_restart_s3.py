"""The broker killed (SIGKILL) and restarted mid-stream, with storage that survives the crash
(Tansu's s3 engine against a local moto S3 server): every record completes exactly once, every
acknowledged record is there after the restart, and none is there twice."""

from __future__ import annotations

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
from cproducer.localbroker import LocalBroker
from tests.integration.readback import read_back


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture()
def s3_broker(monkeypatch):
    port = _free_port()
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


def test_kill_and_restart_every_record_once(s3_broker: LocalBroker) -> None:
    topic = f"crash-{uuid.uuid4().hex[:8]}"
    s3_broker.create_topic(topic, 2)
    lock = threading.Lock()
    calls: Dict[int, List[Tuple[Any, Optional[BaseException]]]] = {}

    def callback(i: int):
        def done(md: Any, exc: Optional[BaseException]) -> None:
            with lock:
                calls.setdefault(i, []).append((md, exc))

        return done

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
    try:
        for i in range(n):
            producer.send(topic, b"%d" % i, callback=callback(i))
            if i == n // 2:
                s3_broker.kill()
                time.sleep(0.2)
                s3_broker.start()
        producer.flush(timeout=60)
    finally:
        producer.close(timeout=10)
    assert sorted(calls) == list(range(n))
    assert all(len(c) == 1 for c in calls.values()), "a record completed twice"
    delivered = {i for i, c in calls.items() if c[0][1] is None}
    failed = [c[0][1] for c in calls.values() if c[0][1] is not None]
    assert all(isinstance(e, errors.KafkaError) for e in failed)
    assert len(delivered) > n // 2
    values = [r.value for r in read_back(s3_broker.bootstrap_servers, topic, 2, len(delivered))]
    assert len(values) == len(set(values)), "a record is in the topic twice"
    present = {int(v) for v in values if v is not None}
    assert delivered <= present, f"acknowledged but missing: {sorted(delivered - present)[:10]}"
