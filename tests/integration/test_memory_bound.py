"""buffer.memory bounds what the producer holds for records not yet acknowledged.

Each case runs in a child process of its own: a producer (lz4, its batches compressed as
records come) connects and warms up; then the broker is stopped
(SIGSTOP: connections stay open, nothing is answered) and the child sends until ``send`` /
``send_many`` refuses. That call must have blocked for ``max.block.ms`` and raised
``BufferExhaustedError``; what the producer allocated meanwhile (tracemalloc: pooled buffers,
compressed output, completion state, every Python object) and the RSS growth must stay
within ``buffer.memory`` plus a fixed allowance (2 MiB traced, 8 MiB of RSS). Then the broker
resumes, every accepted record is acknowledged, and after ``flush()`` the memory beyond the
pool's free buffers is handed back.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest

from cproducer.localbroker import LocalBroker

CHILD = r"""
import gc, json, os, signal, sys, time, tracemalloc
import pyarrow as pa
from cproducer import KafkaProducer
from cproducer.errors import BufferExhaustedError

bootstrap, topic, broker_pid, mode = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
size, buffer_memory, max_block_ms = int(sys.argv[5]), int(sys.argv[6]), int(sys.argv[7])


def rss_kb():
    with open("/proc/self/status") as fh:
        return int(next(line for line in fh if line.startswith("VmRSS:")).split()[1])


keys = [b"key-%04d" % i for i in range(1000)]
value = b"v" * size
chunk = 1000
arrow_keys = pa.array(keys[:chunk], pa.binary())
arrow_values = pa.array([value] * chunk, pa.binary())
acked = [0]


def on_completion(md, exc):
    if exc is None:
        acked[0] += 1


p = KafkaProducer(bootstrap_servers=bootstrap, compression_type="lz4", linger_ms=5,
                  buffer_memory=buffer_memory, max_block_ms=max_block_ms)
for i in range(3000):  # connect, learn the topic and the compression ratio
    p.send(topic, value, keys[i % 1000], callback=on_completion)
p.send_many(topic, arrow_values, keys=arrow_keys).get(30)
p.flush()
acked[0] = 0
gc.collect()
created_kb = rss_kb()
tracemalloc.start()
os.kill(broker_pid, signal.SIGSTOP)
accepted, futures, refused, blocked_s = 0, [], None, 0.0
try:
    deadline = time.monotonic() + 120
    while refused is None and time.monotonic() < deadline:
        t0 = time.monotonic()
        try:
            if mode == "send":
                p.send(topic, value, keys[accepted % 1000], callback=on_completion)
                accepted += 1
            else:
                fut = p.send_many(topic, arrow_values, keys=arrow_keys)
                futures.append(fut)
                # the records not accepted fail at once, with the error that refused them
                if fut.errors:
                    refused = type(next(iter(fut.errors.values()))).__name__
                accepted += chunk - len(fut.errors)
        except BufferExhaustedError as exc:
            refused = type(exc).__name__
        blocked_s = time.monotonic() - t0
    traced_peak = tracemalloc.get_traced_memory()[1]
    held_kb = rss_kb() - created_kb
    tracemalloc.stop()
finally:
    os.kill(broker_pid, signal.SIGCONT)
p.flush(60)
delivered = acked[0] if mode == "send" else sum(f.get(60).delivered for f in futures)
time.sleep(1.1)  # flush() hands memory back at most once a second
p.flush(60)
gc.collect()
after_flush_kb = rss_kb() - created_kb
print(json.dumps({
    "accepted": accepted, "delivered": delivered, "refused": refused, "blocked_s": blocked_s,
    "traced_peak": traced_peak, "held_kb": held_kb, "after_flush_kb": after_flush_kb,
    "pool_free_bytes": p.metrics()["producer-metrics"]["buffer-available-bytes"],
}))
p.close()
"""

MIB = 1 << 20


@pytest.mark.parametrize(
    "mode,size,buffer_memory",
    [
        ("send", 100, 4 * MIB),
        ("send", 10_000, 4 * MIB),
        ("send_many", 100, 4 * MIB),
        ("send_many", 10_000, 4 * MIB),
        ("send", 100, 32 * MIB),
    ],
)
def test_send_blocks_then_raises_and_never_holds_more_than_buffer_memory(
    broker: LocalBroker, new_topic, mode: str, size: int, buffer_memory: int
) -> None:
    topic = new_topic(6)
    max_block_ms = 300
    assert broker.process is not None
    try:
        out = subprocess.run(
            [
                sys.executable, "-c", CHILD, broker.bootstrap_servers, topic,
                str(broker.process.pid), mode, str(size), str(buffer_memory), str(max_block_ms),
            ],
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
    finally:
        os.kill(broker.process.pid, signal.SIGCONT)  # whatever happened to the child
    assert out.returncode == 0, out.stderr[-3000:]
    r = json.loads(out.stdout.strip().splitlines()[-1])
    # spent: the refusing call waited max.block.ms for memory, then raised
    assert r["refused"] == "BufferExhaustedError", r
    assert max_block_ms / 1000 * 0.9 <= r["blocked_s"] < max_block_ms / 1000 + 2, r
    # everything held while the broker did not answer: within buffer.memory + allowances (for
    # what is not charged: a send_many call's own arrays, a compressed copy on its way into
    # its batch, the protocol's buffers; the batches' debt of at most one allocation each)
    assert r["traced_peak"] <= buffer_memory + 2 * MIB, r
    assert r["held_kb"] * 1024 <= buffer_memory + 8 * MIB, r
    # every accepted record is acknowledged once the broker answers
    assert r["delivered"] == r["accepted"] > 0, r
    # after flush(): back to the pool's free buffers (kept, as in Java) plus a little
    assert r["after_flush_kb"] * 1024 <= buffer_memory + 2 * MIB, r
