"""Peer comparison: cproducer vs confluent-kafka, kafka-python and aiokafka, same run, same broker.

One fresh LocalBroker; each client runs in its own child process (so the CPU time measured is its
own, all threads included); each gets its own topic. The workload: N x 100-byte values, 1,000
distinct keys, lz4, linger 5 ms, acks=all, 6 partitions, every record acknowledged (the count is
checked). Prints msg/s, client CPU us per message and ratios to confluent-kafka.
``--transactions K``: every client (confluent, send, send_many) commits a transaction every K
records instead. ``--plot DIR`` writes the results (``peers.json``, read by the documentation's
performance page) and a bar chart of them (``peers.png``, matplotlib) into DIR; with
``--transactions K`` the files are ``peers_txn<K>.*``.

    python benchmarks/compare_peers.py [--records 300000] [--clients confluent,send,send_many,...]
                                       [--transactions 10000] [--plot docs/_static/perf]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import platform
import resource
import sys
import time
from typing import Any, Callable, Dict, List

VALUE_SIZE = 100
DISTINCT_KEYS = 1000
PARTITIONS = 6
#: records per transaction (0: no transactions); set in each child from --transactions
TXN_RECORDS = 0


def _txn_config() -> Dict[str, Any]:
    return {"transactional.id": f"peers-{os.getpid()}"} if TXN_RECORDS else {}


def _txn_step(p: Any, i: int) -> None:
    """Before record i: at every TXN_RECORDS boundary, commit the last transaction, begin one."""
    if TXN_RECORDS and i % TXN_RECORDS == 0:
        if i:
            p.commit_transaction()
        p.begin_transaction()


def _txn_end(p: Any) -> None:
    if TXN_RECORDS:
        p.commit_transaction()


def _workload(n: int):
    keys = [f"key-{i:06d}".encode() for i in range(DISTINCT_KEYS)]
    value = b"v" * VALUE_SIZE
    return keys, value


def _cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def run_confluent(bootstrap: str, topic: str, n: int) -> int:
    from confluent_kafka import Producer

    keys, value = _workload(n)
    p = Producer(
        {
            "bootstrap.servers": bootstrap,
            "compression.type": "lz4",
            "linger.ms": 5,
            "acks": "all",
            "queue.buffering.max.messages": 1_000_000,
            **_txn_config(),
        }
    )
    if TXN_RECORDS:
        p.init_transactions()
    delivered = [0]

    def on_delivery(err: Any, msg: Any) -> None:
        if err is None:
            delivered[0] += 1

    for i in range(n):
        _txn_step(p, i)
        while True:
            try:
                p.produce(topic, value, keys[i % DISTINCT_KEYS], on_delivery=on_delivery)
                break
            except BufferError:
                p.poll(0.01)
        if i % 1000 == 0:
            p.poll(0)
    _txn_end(p)
    p.flush(60)
    return delivered[0]


def run_cproducer_send(bootstrap: str, topic: str, n: int) -> int:
    from cproducer import KafkaProducer

    keys, value = _workload(n)
    delivered = [0]

    def on_completion(md: Any, exc: Any) -> None:
        if exc is None:
            delivered[0] += 1

    with KafkaProducer(
        _txn_config(), bootstrap_servers=bootstrap, compression_type="lz4", linger_ms=5, acks="all"
    ) as p:
        if TXN_RECORDS:
            p.init_transactions()
        send = p.send
        if not TXN_RECORDS:
            for i in range(n):
                send(topic, value, keys[i % DISTINCT_KEYS], callback=on_completion)
        else:
            for i in range(n):
                _txn_step(p, i)
                send(topic, value, keys[i % DISTINCT_KEYS], callback=on_completion)
            _txn_end(p)
        p.flush()
    return delivered[0]


def run_cproducer_send_many(bootstrap: str, topic: str, n: int) -> int:
    from cproducer import KafkaProducer

    keys, value = _workload(n)
    chunk = TXN_RECORDS or 10_000  # with transactions: one send_many per transaction
    all_keys = [keys[i % DISTINCT_KEYS] for i in range(chunk)]
    values = [value] * chunk
    futures = []
    with KafkaProducer(
        _txn_config(), bootstrap_servers=bootstrap, compression_type="lz4", linger_ms=5, acks="all"
    ) as p:
        if TXN_RECORDS:
            p.init_transactions()
        sent = 0
        while sent < n:
            m = min(chunk, n - sent)
            _txn_step(p, sent)
            futures.append(p.send_many(topic, values[:m], keys=all_keys[:m]))
            sent += m
        _txn_end(p)
        p.flush()
        return sum(f.get(60).count - len(f.get(60).errors) for f in futures)


def run_kafka_python(bootstrap: str, topic: str, n: int) -> int:
    from kafka import KafkaProducer

    keys, value = _workload(n)
    delivered = [0]

    def ok(_md: Any) -> None:
        delivered[0] += 1

    p = KafkaProducer(bootstrap_servers=bootstrap, compression_type="lz4", linger_ms=5, acks="all")
    for i in range(n):
        p.send(topic, value, key=keys[i % DISTINCT_KEYS]).add_callback(ok)
    p.flush(60)
    p.close()
    return delivered[0]


def run_aiokafka(bootstrap: str, topic: str, n: int) -> int:
    import asyncio

    from aiokafka import AIOKafkaProducer

    keys, value = _workload(n)

    async def main() -> int:
        p = AIOKafkaProducer(
            bootstrap_servers=bootstrap, compression_type="lz4", linger_ms=5, acks="all"
        )
        await p.start()
        try:
            futs = []
            for i in range(n):
                futs.append(await p.send(topic, value, key=keys[i % DISTINCT_KEYS]))
            done = await asyncio.gather(*futs, return_exceptions=True)
            return sum(1 for d in done if not isinstance(d, BaseException))
        finally:
            await p.stop()

    return asyncio.run(main())


CLIENTS: Dict[str, Callable[[str, str, int], int]] = {
    "confluent": run_confluent,
    "send": run_cproducer_send,
    "send_many": run_cproducer_send_many,
    "kafka-python": run_kafka_python,
    "aiokafka": run_aiokafka,
}


LABELS = {
    "confluent": "confluent-kafka produce + delivery callback",
    "send": "cproducer send + callback",
    "send_many": "cproducer send_many (lists, 10k per call)",
    "kafka-python": "kafka-python send + callback",
    "aiokafka": "aiokafka send",
}

IMPORTS = {
    "confluent": "confluent_kafka",
    "send": "cproducer.producer.kafka_producer",
    "send_many": "cproducer.producer.kafka_producer",
    "kafka-python": "kafka",
    "aiokafka": "aiokafka",
}


def _child(name: str, bootstrap: str, topic: str, n: int, txn: int, out: Any) -> None:
    global TXN_RECORDS
    TXN_RECORDS = txn
    try:
        if txn and name not in ("confluent", "send", "send_many"):
            raise NotImplementedError("not measured with --transactions")
        import importlib

        importlib.import_module(IMPORTS[name])  # import time is not the client's throughput
        cpu0, t0 = _cpu_s(), time.perf_counter()
        delivered = CLIENTS[name](bootstrap, topic, n)
        wall, cpu = time.perf_counter() - t0, _cpu_s() - cpu0
        out.put({"client": name, "delivered": delivered, "wall_s": wall, "cpu_s": cpu})
    except Exception as exc:  # reported, not raised: the other clients still run
        out.put({"client": name, "error": f"{type(exc).__name__}: {exc}"})


def main(argv: List[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=300_000)
    ap.add_argument("--clients", default=",".join(CLIENTS))
    ap.add_argument("--json", help="also write the results here")
    ap.add_argument("--transactions", type=int, default=0, metavar="K", help="commit every K")
    ap.add_argument("--plot", metavar="DIR", help="write peers.json and peers.png into DIR")
    args = ap.parse_args(argv)
    from cproducer.localbroker import LocalBroker

    names = [c for c in args.clients.split(",") if c]
    results = []
    ctx = mp.get_context("spawn")
    with LocalBroker() as broker:
        for name in names:
            topic = f"peers-{name}-{os.getpid()}"
            broker.create_topic(topic, PARTITIONS)
            q = ctx.Queue()
            proc = ctx.Process(
                target=_child,
                args=(name, broker.bootstrap_servers, topic, args.records, args.transactions, q),
            )
            proc.start()
            res = q.get(timeout=900)
            proc.join()
            if "error" not in res and res["delivered"] != args.records:
                res["error"] = f"delivered {res['delivered']} of {args.records}"
            results.append(res)
            print(json.dumps(res), file=sys.stderr, flush=True)
    base = next((r for r in results if r["client"] == "confluent" and "error" not in r), None)
    machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    print(f"machine: {machine}")
    workload = (
        f"{args.records} x {VALUE_SIZE} B, {DISTINCT_KEYS} keys, lz4, linger 5 ms, "
        f"acks=all, {PARTITIONS} partitions"
        + (f", a transaction every {args.transactions} records" if args.transactions else "")
    )
    print(f"workload: {workload}")
    print(f"{'client':<14}{'msg/s':>12}{'CPU us/msg':>12}{'x msg/s':>10}{'x CPU':>8}")
    for r in results:
        if "error" in r:
            print(f"{r['client']:<14} ERROR {r['error']}")
            continue
        rate = args.records / r["wall_s"]
        cpu_us = r["cpu_s"] / args.records * 1e6
        if base:
            base_rate = args.records / base["wall_s"]
            base_cpu = base["cpu_s"] / args.records * 1e6
            ratios = f"{rate / base_rate:>10.2f}{cpu_us / base_cpu:>8.2f}"
        else:
            ratios = ""
        print(f"{r['client']:<14}{rate:>12,.0f}{cpu_us:>12.2f}{ratios}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(results, fh, indent=2)
    if args.plot:
        stem = f"peers_txn{args.transactions}" if args.transactions else "peers"
        report = {
            "records": args.records,
            "workload": f"{workload}; {machine}",
            "labels": {r["client"]: LABELS[r["client"]] for r in results},
            "results": results,
        }
        os.makedirs(args.plot, exist_ok=True)
        with open(os.path.join(args.plot, f"{stem}.json"), "w") as fh:
            json.dump(report, fh, indent=2)
            fh.write("\n")
        plot(report, os.path.join(args.plot, f"{stem}.png"))
    return 0 if all("error" not in r for r in results) else 1


def plot(report: Dict[str, Any], path: str) -> None:
    """Two bar charts side by side: msg/s and client CPU per message, each bar labelled with its
    ratio to confluent-kafka's (when confluent ran)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    n = report["records"]
    done = [r for r in report["results"] if "error" not in r]
    labels = [report["labels"][r["client"]] for r in done]
    rates = [n / r["wall_s"] for r in done]
    cpus = [r["cpu_s"] / n * 1e6 for r in done]
    base = next((i for i, r in enumerate(done) if r["client"] == "confluent"), None)
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 0.55 * len(done) + 1.6), sharey=True)
    ys = list(range(len(done)))[::-1]
    colors = ["#8c8c8c" if r["client"] in ("confluent", "kafka-python", "aiokafka") else "#2a7ab9"
              for r in done]  # fmt: skip
    for ax, values, title, fmt in (
        (left, rates, "messages per second (higher is better)", "{:,.0f}"),
        (right, cpus, "client CPU µs per message (lower is better)", "{:.2f}"),
    ):
        ax.barh(ys, values, color=colors)
        ax.set_title(title, fontsize=10)
        ax.set_xlim(0, max(values) * 1.45)
        for y, v in zip(ys, values):
            text = fmt.format(v)
            if base is not None:
                text += f"  ({v / values[base]:.2f}x)"
            ax.text(v, y, "  " + text, va="center", fontsize=8)
        ax.tick_params(axis="x", labelsize=8)
        ax.xaxis.set_major_locator(MaxNLocator(4))
        ax.xaxis.set_major_formatter(FuncFormatter(_short_number))
    left.set_yticks(ys)
    left.set_yticklabels(labels, fontsize=9)
    fig.suptitle(report["workload"], fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _short_number(value: float, _pos: int) -> str:
    for limit, suffix in ((1e6, "M"), (1e3, "k")):
        if abs(value) >= limit:
            return f"{value / limit:g}{suffix}"
    return f"{value:g}"


if __name__ == "__main__":
    sys.exit(main())
