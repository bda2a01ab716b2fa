"""Instructions per record of the hot paths, counted by valgrind's callgrind (deterministic, unlike
wall-clock timings on a shared machine).

Each workload runs twice under callgrind, with N and 2N records; the difference of the two
totals divided by N is the cost of one record (start-up, imports and set-up cancel out).

Workloads:

- ``batch``: N records appended to one ``ProducerBatch`` with a shared per-record callback,
  then the batch completed (each callback gets its ``RecordMetadata``);
  ``batch-nocb``: the same without callbacks (futures dropped).
- ``send``: ``KafkaProducer.send`` of a keyed record with a callback, the Sender thread held
  still (nothing drained: the append path only), against a ``LocalBroker``.
- ``e2e``: ``send`` + ``flush`` with the Sender running: append, drain, requests, completion.
  Both threads and the waits are counted, and how records fall into batches depends on timing:
  a few hundred instructions per record from run to run, unlike the others.
- ``aio``: ``cproducer.aio.AIOKafkaProducer.send`` awaited per record (keyed, ``linger_ms=5``,
  the default ``max_batch_size``) on an event loop, the Sender held still: the loop thread's
  append path. Full batches queue up, so every append wakes the Sender (as under load).
- ``aio-e2e``: the same with the Sender running and every record's future awaited (chunks of
  1,000, the previous chunk awaited after the next is sent): both threads, timing-dependent as
  ``e2e``.

Copies and fills count one instruction per byte under valgrind (``rep movsb``/``stosb``): for
large records, read memcpy's and memset's share as bytes, not time.

``--value-size`` sets the value's bytes (100 by default), ``--codec`` the compression of the
``send``/``e2e`` producer, ``--batch-size`` its ``batch.size`` (``send`` with 16384: a queue of
full batches makes every send wake the Sender). ``--inner`` runs one measurement in this process
(what callgrind runs).

    python benchmarks/callgrind_per_record.py [--workloads batch,send] [-n 20000]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any, Callable, Dict, List


def _callback(md: Any, exc: Any) -> None:
    pass


def _batch_classes() -> Any:
    try:  # the layered package
        from cproducer.producer.internals.producer_batch import ProducerBatch
        from cproducer.record.record_batch_builder import RecordBatchBuilder
    except ImportError:  # the earlier flat one
        from cproducer._accumulator import ProducerBatch  # type: ignore[no-redef]
        from cproducer._records import RecordBatchBuilder  # type: ignore[no-redef]
    return ProducerBatch, RecordBatchBuilder


def run_batch(n: int, value_size: int, with_callback: bool) -> None:
    batch_cls, builder_cls = _batch_classes()
    key = b"key-000001"
    value = b"v" * value_size
    size = 64 + n * (value_size + 32)
    builder = builder_cls(bytearray(size), 0, size)
    batch = batch_cls(("topic", 0), builder, 0)
    cb = _callback if with_callback else None
    append = batch.try_append
    ts = 1_700_000_000_000

    def region() -> None:
        for _ in range(n):
            append(ts, key, value, None, cb, 0)
        batch.close()
        batch.complete(1000, -1)

    _measured(region)


def _producer(bootstrap: str, codec: str, batch_size: int) -> Any:
    from cproducer import KafkaProducer

    return KafkaProducer(
        bootstrap_servers=bootstrap,
        compression_type=None if codec == "none" else codec,
        linger_ms=5,
        batch_size=batch_size,
        buffer_memory=256 * 1024 * 1024,
    )


def _hold_sender(producer: Any) -> None:
    """Stop the Sender's work (it sleeps instead of draining) and wait until it took effect."""
    sender = producer._sender
    held = threading.Event()

    def idle() -> None:
        held.set()
        time.sleep(0.5)

    sender.run_once = idle
    sender.wakeup()
    if not held.wait(30):
        raise RuntimeError("the sender did not stop")


def run_send(
    n: int, value_size: int, bootstrap: str, codec: str, drain: bool, batch_size: int = 0
) -> None:
    keys = [f"key-{i:06d}".encode() for i in range(1000)]
    value = b"v" * value_size
    # held: one batch takes every record (a queue of several full batches would make each send
    # wake the Sender, as Java's does); draining: the default batch.size
    producer = _producer(bootstrap, codec, batch_size or (16384 if drain else 64 << 20))
    for i in range(200):  # warm-up: connection, metadata, the fast path
        producer.send("cg", value, keys[i % 1000], callback=_callback)
    producer.flush()
    if not drain:
        _hold_sender(producer)
    send = producer.send

    def region() -> None:
        for i in range(n):
            send("cg", value, keys[i % 1000], callback=_callback)
        if drain:
            producer.flush()

    _measured(region)
    os._exit(0)  # no close: the held Sender would never drain


def run_aio(n: int, value_size: int, bootstrap: str, codec: str, drain: bool) -> None:
    import asyncio

    from cproducer.aio import AIOKafkaProducer

    keys = [f"key-{i:06d}".encode() for i in range(1000)]
    value = b"v" * value_size
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)

    async def start() -> Any:
        producer = AIOKafkaProducer(
            bootstrap_servers=bootstrap,
            acks="all",
            linger_ms=5,
            compression_type=None if codec == "none" else codec,
        )
        await producer.start()
        for i in range(200):  # warm-up: metadata, the fast path
            await (await producer.send("cg", value, key=keys[i % 1000]))
        return producer

    producer = loop.run_until_complete(start())
    if not drain:
        _hold_sender(producer._engine)
    send = producer.send

    async def held() -> None:
        for i in range(n):
            await send("cg", value, key=keys[i % 1000])

    async def awaited() -> None:
        previous: List[Any] = []
        for start in range(0, n, 1000):
            chunk = [
                await send("cg", value, key=keys[i % 1000]) for i in range(start, start + 1000)
            ]
            for future in previous:
                await future
            previous = chunk
        for future in previous:
            await future

    def region() -> None:
        loop.run_until_complete(awaited() if drain else held())

    _measured(region)
    os._exit(0)  # no stop: the held Sender would never drain


# Counted only inside sys.call_tracing (a call nothing else makes; without a trace function it
# adds nothing): the measured loop runs in it, start-up, imports and set-up are left out. The
# e2e workload counts the whole process, both threads.
TOGGLED = {"batch", "batch-nocb", "send", "aio"}


def _measured(region: Callable[[], None]) -> None:
    sys.call_tracing(region, ())


def _instructions(args: argparse.Namespace, workload: str, n: int, bootstrap: str) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "cg.out")
        toggles = ["sys_call_tracing"] if workload in TOGGLED else []
        cmd = [
            "valgrind",
            "--tool=callgrind",
            f"--callgrind-out-file={out}",
            *([f"--toggle-collect={t}" for t in toggles]),
            *(["--collect-atstart=no"] if toggles else []),
            sys.executable,
            os.path.abspath(__file__),
            "--inner",
            workload,
            "-n",
            str(n),
            "--value-size",
            str(args.value_size),
            "--codec",
            args.codec,
            "--batch-size",
            str(args.batch_size),
            "--bootstrap",
            bootstrap,
        ]
        # fixed hashes; no BLAS threads spinning (numpy is imported) in the counts
        env = dict(os.environ, PYTHONHASHSEED="0", OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if proc.returncode != 0:
            raise RuntimeError(f"{workload} failed:\n{proc.stderr[-3000:]}")
        with open(out) as fh:
            text = fh.read()
        m = re.search(r"^(?:summary|totals):\s*(\d+)", text, re.M)
        if m is None:
            raise RuntimeError("no totals in the callgrind output")
        return int(m.group(1))


def main(argv: Any = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--workloads", default="batch,batch-nocb,send")
    ap.add_argument("-n", type=int, default=20000)
    ap.add_argument("--value-size", type=int, default=100)
    ap.add_argument("--codec", default="none")
    ap.add_argument("--batch-size", type=int, default=0, help="batch.size of send/e2e")
    ap.add_argument("--bootstrap", default="")
    ap.add_argument("--inner", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.inner is not None:
        runs: Dict[str, Callable[[], None]] = {
            "batch": lambda: run_batch(args.n, args.value_size, True),
            "batch-nocb": lambda: run_batch(args.n, args.value_size, False),
            "send": lambda: run_send(
                args.n, args.value_size, args.bootstrap, args.codec, False, args.batch_size
            ),
            "e2e": lambda: run_send(
                args.n, args.value_size, args.bootstrap, args.codec, True, args.batch_size
            ),
            "aio": lambda: run_aio(args.n, args.value_size, args.bootstrap, args.codec, False),
            "aio-e2e": lambda: run_aio(args.n, args.value_size, args.bootstrap, args.codec, True),
        }
        runs[args.inner]()
        return 0

    workloads = args.workloads.split(",")
    broker = None
    bootstrap = ""
    if any(w in ("send", "e2e", "aio", "aio-e2e") for w in workloads):
        from cproducer.localbroker import LocalBroker

        broker = LocalBroker().start()
        bootstrap = broker.bootstrap_servers
        broker.create_topic("cg", 1)
    try:
        for w in workloads:
            small = _instructions(args, w, args.n, bootstrap)
            large = _instructions(args, w, 2 * args.n, bootstrap)
            print(f"{w:12s} {args.value_size:>6d} B  {(large - small) / args.n:10.0f} instr/record")
    finally:
        if broker is not None:
            broker.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
