"""confluent-kafka's ``Producer`` against cproducer's drop-in facade, same code, same broker.

The loop is confluent-kafka's README loop: ``produce(topic, value, key, on_delivery=cb)``, then
``poll(0)`` (every message, or every ``--poll-every`` messages), ``BufferError`` -> ``poll(0.01)``
and retry, ``flush()`` at the end; every message's report is counted. Both run with librdkafka's
defaults plus ``--config`` (``compression.type=lz4`` by default, so the broker is not the
bottleneck). Each run is a child process (its own CPU time, all threads); the clients alternate
round by round on one broker, and the medians are compared.

    python benchmarks/compare_confluent_facade.py [--records 300000] [--rounds 5]
        [--poll-every 1] [--config compression.type=lz4 --config linger.ms=5]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import platform
import resource
import statistics
import sys
import time
from typing import Any, Dict, List

VALUE_SIZE = 100
DISTINCT_KEYS = 1000
PARTITIONS = 6
MODULES = {"confluent-kafka": "confluent_kafka", "facade": "cproducer.compat.confluent"}


def _cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _run(
    module_name: str, bootstrap: str, topic: str, n: int, poll_every: int, conf: Dict[str, str]
) -> Dict[str, Any]:
    import importlib

    module = importlib.import_module(module_name)
    keys = [f"key-{i:06d}".encode() for i in range(DISTINCT_KEYS)]
    value = b"v" * VALUE_SIZE
    p = module.Producer({"bootstrap.servers": bootstrap, **conf})
    p.produce(topic, b"warm-up")  # connections and metadata before the clock starts
    p.flush(30)
    delivered = [0]

    def on_delivery(err: Any, msg: Any) -> None:
        if err is None:
            delivered[0] += 1

    cpu0, t0 = _cpu_s(), time.perf_counter()
    for i in range(n):
        while True:
            try:
                p.produce(topic, value, keys[i % DISTINCT_KEYS], on_delivery=on_delivery)
                break
            except BufferError:
                p.poll(0.01)
        if i % poll_every == 0:
            p.poll(0)
    left = p.flush(60)
    wall, cpu = time.perf_counter() - t0, _cpu_s() - cpu0
    return {"delivered": delivered[0], "left": left, "wall_s": wall, "cpu_s": cpu}


def _child(
    module: str, bootstrap: str, topic: str, n: int, every: int, conf: Any, out: Any
) -> None:
    try:
        out.put(_run(module, bootstrap, topic, n, every, conf))
    except Exception as exc:  # reported, not raised: the other runs go on
        out.put({"error": f"{type(exc).__name__}: {exc}"})


def main(argv: List[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=300_000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--poll-every", type=int, default=1, help="poll(0) every N messages")
    ap.add_argument(
        "--config",
        action="append",
        default=None,
        metavar="KEY=VALUE",
        help="librdkafka property for both clients (default: compression.type=lz4)",
    )
    args = ap.parse_args(argv)
    conf = dict(c.split("=", 1) for c in (args.config or ["compression.type=lz4"]))
    from cproducer.localbroker import LocalBroker

    results: Dict[str, List[Dict[str, Any]]] = {name: [] for name in MODULES}
    ctx = mp.get_context("spawn")
    with LocalBroker() as broker:
        for rnd in range(args.rounds):
            for name, module in MODULES.items():
                topic = f"facade-bench-{name}-{rnd}-{os.getpid()}"
                broker.create_topic(topic, PARTITIONS)
                q = ctx.Queue()
                proc = ctx.Process(
                    target=_child,
                    args=(
                        module,
                        broker.bootstrap_servers,
                        topic,
                        args.records,
                        args.poll_every,
                        conf,
                        q,
                    ),
                )
                proc.start()
                res = q.get(timeout=900)
                proc.join()
                if "error" not in res and res["delivered"] != args.records:
                    res["error"] = f"delivered {res['delivered']} of {args.records}"
                if "error" in res:
                    print(f"{name} round {rnd}: ERROR {res['error']}", file=sys.stderr)
                    return 1
                res["rate"] = args.records / res["wall_s"]
                res["cpu_us"] = res["cpu_s"] / args.records * 1e6
                results[name].append(res)
                print(
                    f"round {rnd} {name:<16}{res['rate']:>12,.0f} msg/s"
                    f"{res['cpu_us']:>8.2f} CPU us/msg",
                    file=sys.stderr,
                    flush=True,
                )
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    )
    print(
        f"workload: {args.records} x {VALUE_SIZE} B, {DISTINCT_KEYS} keys, {PARTITIONS} "
        f"partitions, poll(0) every {args.poll_every} message(s), config {conf}, "
        f"{args.rounds} rounds (medians)"
    )
    base = results["confluent-kafka"]
    base_rate = statistics.median(r["rate"] for r in base)
    base_cpu = statistics.median(r["cpu_us"] for r in base)
    print(f"{'client':<18}{'msg/s':>12}{'CPU us/msg':>12}{'x msg/s':>10}{'x CPU':>8}")
    for name, runs in results.items():
        rate = statistics.median(r["rate"] for r in runs)
        cpu = statistics.median(r["cpu_us"] for r in runs)
        print(
            f"{name:<18}{rate:>12,.0f}{cpu:>12.2f}{rate / base_rate:>10.2f}{cpu / base_cpu:>8.2f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
