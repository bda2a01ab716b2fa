"""asyncio producers compared: cproducer.aio vs aiokafka vs confluent-kafka's AIOProducer.

One fresh LocalBroker; each client runs in its own child process (its CPU time is its own, all
threads included) on its own topic, the clients alternating round by round. The workload is the
same for all: N x 100-byte values, 1,000 distinct keys, 6 partitions, acks=all, linger 5 ms, no
compression, and every record's future awaited (one ``await`` of the client's own coroutine
per record, ``send`` or confluent's ``produce``, the topic bound with ``functools.partial``: no
coroutine of the benchmark's around it). Two ways of awaiting the futures (``--await-modes``,
both by default, each client in each mode every round):

- ``each``: the records are sent in chunks of 1,000, each chunk's futures awaited one ``await``
  per future in send order while the next chunks are sent, at most 16 chunks outstanding;
- ``gather``: the records are sent in chunks of 10,000, each chunk's futures awaited with one
  ``asyncio.gather(*futures, return_exceptions=True)`` while the next chunk is sent, at most 2
  chunks outstanding (a common way to wait for a burst of sends: the per-future cost of gather's
  done-callbacks counts here).

Only the sending and awaiting is timed, not start/stop, and only after a warm-up of the same
kind (``--warmup`` records, 10,000 by default: the topic's metadata fetched, the pipeline
running). Prints each round, then the medians per client and mode and the ratios of
cproducer.aio's msg/s to each peer's in that mode (medians of the same run).

    python benchmarks/compare_async.py [--records 100000] [--rounds 5] [--await-modes each,gather]
                                       [--warmup 10000]
                                       [--clients cproducer.aio,aiokafka,confluent.aio]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import functools
import json
import multiprocessing as mp
import os
import platform
import resource
import statistics
import sys
import time
from typing import Any, Awaitable, Callable, Deque, Dict, List

# this checkout's cproducer, not an installed one (the clients' child processes get this path too)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

VALUE_SIZE = 100
DISTINCT_KEYS = 1000
PARTITIONS = 6
#: records per chunk and chunks outstanding, per await mode
CHUNK = {"each": 1000, "gather": 10_000}
WINDOW = {"each": 16, "gather": 2}
#: "gather" or "each" (set in each child from --await-modes)
AWAIT_MODE = "gather"
#: records sent (and awaited) before the clock starts (set in each child from --warmup)
WARMUP = 0


def _cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


async def _drive(send: Callable[..., Awaitable[Any]], n: int) -> int:
    """Send n records with ``await send(value, key=key)`` (the client's own coroutine with the
    topic bound: no coroutine of the benchmark's around each call), awaiting every record's
    future."""
    keys = [f"key-{i:06d}".encode() for i in range(DISTINCT_KEYS)]
    value = b"v" * VALUE_SIZE
    outstanding: Deque[Any] = collections.deque()
    delivered = 0

    async def settle(chunk: Any) -> int:
        if AWAIT_MODE == "gather":
            return sum(1 for r in await chunk if not isinstance(r, BaseException))
        delivered = 0
        for future in chunk:
            try:
                await future
                delivered += 1
            except Exception:
                pass
        return delivered

    chunk, window = CHUNK[AWAIT_MODE], WINDOW[AWAIT_MODE]
    for start in range(0, n, chunk):
        futures = [
            await send(value, key=keys[i % DISTINCT_KEYS])
            for i in range(start, min(n, start + chunk))
        ]
        if AWAIT_MODE == "gather":
            outstanding.append(asyncio.gather(*futures, return_exceptions=True))
        else:
            outstanding.append(futures)
        if len(outstanding) >= window:
            delivered += await settle(outstanding.popleft())
    while outstanding:
        delivered += await settle(outstanding.popleft())
    return delivered


async def _aiokafka_style(cls: Any, bootstrap: str, topic: str, n: int) -> Dict[str, float]:
    producer = cls(bootstrap_servers=bootstrap, acks="all", linger_ms=5)
    await producer.start()
    try:
        return await _timed(functools.partial(producer.send, topic), n)
    finally:
        await producer.stop()


async def _timed(send: Callable[..., Awaitable[Any]], n: int) -> Dict[str, float]:
    if WARMUP:
        # the steady state: the topic's metadata known, the connection and the pipeline warm
        await _drive(send, WARMUP)
    cpu0, t0 = _cpu_s(), time.perf_counter()
    delivered = await _drive(send, n)
    return {"delivered": delivered, "wall_s": time.perf_counter() - t0, "cpu_s": _cpu_s() - cpu0}


async def run_cproducer_aio(bootstrap: str, topic: str, n: int) -> Dict[str, float]:
    from cproducer.aio import AIOKafkaProducer

    return await _aiokafka_style(AIOKafkaProducer, bootstrap, topic, n)


async def run_aiokafka(bootstrap: str, topic: str, n: int) -> Dict[str, float]:
    from aiokafka import AIOKafkaProducer

    return await _aiokafka_style(AIOKafkaProducer, bootstrap, topic, n)


async def run_confluent_aio(bootstrap: str, topic: str, n: int) -> Dict[str, float]:
    from confluent_kafka.aio import AIOProducer

    producer = AIOProducer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    try:
        return await _timed(functools.partial(producer.produce, topic), n)
    finally:
        await producer.close()


CLIENTS = {
    "cproducer.aio": run_cproducer_aio,
    "aiokafka": run_aiokafka,
    "confluent.aio": run_confluent_aio,
}


def _child(name: str, bootstrap: str, topic: str, n: int, mode: str, warmup: int, out: Any) -> None:
    global AWAIT_MODE, WARMUP
    AWAIT_MODE, WARMUP = mode, warmup
    try:
        out.put({"client": name, **asyncio.run(CLIENTS[name](bootstrap, topic, n))})
    except Exception as exc:  # reported, not raised: the other clients still run
        out.put({"client": name, "error": f"{type(exc).__name__}: {exc}"})


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main(argv: List[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--warmup", type=int, default=10_000, help="records before the clock")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--clients", default=",".join(CLIENTS))
    ap.add_argument(
        "--await-modes", default="each,gather", help="each, gather or both (comma-separated)"
    )
    ap.add_argument("--json", help="also write every run here")
    args = ap.parse_args(argv)
    from cproducer.localbroker import LocalBroker

    names = [c for c in args.clients.split(",") if c]
    modes = [m for m in args.await_modes.split(",") if m]
    for name in names:
        if name not in CLIENTS:
            ap.error(f"--clients: unknown client {name!r} (one of {', '.join(CLIENTS)})")
    for mode in modes:
        if mode not in CHUNK:
            ap.error(f"--await-modes: unknown mode {mode!r} (each or gather)")
    print("command: python benchmarks/compare_async.py " + " ".join(sys.argv[1:]), flush=True)
    print(f"load average at start: {_load()}", flush=True)
    runs: List[Dict[str, Any]] = []
    ctx = mp.get_context("spawn")
    with LocalBroker() as broker:
        for rnd in range(args.rounds):
            order = names[rnd % len(names) :] + names[: rnd % len(names)]  # alternate who is first
            for mode in modes if rnd % 2 == 0 else modes[::-1]:
                for name in order:
                    res = _one_run(broker, ctx, name, mode, rnd, args)
                    runs.append(res)
                    label = f"round {rnd} {mode:<6} {name:<14}"
                    if "error" in res:
                        print(f"{label} ERROR {res['error']}", flush=True)
                    else:
                        print(
                            f"{label} {args.records / res['wall_s']:>10,.0f} msg/s "
                            f"{res['cpu_s'] / args.records * 1e6:>7.2f} CPU us/msg",
                            flush=True,
                        )
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
        f", load average at the end: {_load()}"
    )
    print(
        f"workload: {args.records} x {VALUE_SIZE} B, {DISTINCT_KEYS} keys, "
        f"{PARTITIONS} partitions, acks=all, linger 5 ms, every future awaited, "
        f"{args.warmup} warm-up records, {args.rounds} rounds"
    )
    print(f"{'mode':<8}{'client':<14}{'median msg/s':>14}{'CPU us/msg':>12}")
    for mode in modes:
        medians: Dict[str, float] = {}
        for name in names:
            ok = [r for r in runs if r["client"] == name and r["mode"] == mode and "error" not in r]
            if not ok:
                print(f"{mode:<8}{name:<14} no successful run")
                continue
            medians[name] = statistics.median(args.records / r["wall_s"] for r in ok)
            cpu = statistics.median(r["cpu_s"] / args.records * 1e6 for r in ok)
            print(f"{mode:<8}{name:<14}{medians[name]:>14,.0f}{cpu:>12.2f}")
        ours = medians.get("cproducer.aio")
        for peer in ("aiokafka", "confluent.aio"):
            if ours and peer in medians:
                print(f"{mode:<8}cproducer.aio / {peer}: {ours / medians[peer]:.2f}x msg/s")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(runs, fh, indent=2)
    return 0 if all("error" not in r for r in runs) else 1


def _one_run(broker: Any, ctx: Any, name: str, mode: str, rnd: int, args: Any) -> Dict[str, Any]:
    topic = f"async-{name.replace('.', '-')}-{mode}-{rnd}-{os.getpid()}"
    broker.create_topic(topic, PARTITIONS)
    q = ctx.Queue()
    proc = ctx.Process(
        target=_child,
        args=(name, broker.bootstrap_servers, topic, args.records, mode, args.warmup, q),
    )
    proc.start()
    res: Dict[str, Any] = q.get(timeout=900)
    proc.join()
    if "error" not in res and res["delivered"] != args.records:
        res["error"] = f"delivered {res['delivered']} of {args.records}"
    res["round"], res["mode"] = rnd, mode
    return res


if __name__ == "__main__":
    sys.exit(main())
