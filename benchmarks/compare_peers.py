"""Peer comparison: cproducer vs confluent-kafka, kafka-python and aiokafka, same run, same broker.

One fresh LocalBroker; each client runs in its own child process (so the CPU time and memory
measured are its own, all threads included); each gets its own topic. The workload: N x
``--value-size``-byte values (100 by default), 1,000 distinct keys, lz4, linger 5 ms, acks=all, 6
partitions, every record acknowledged (the count is checked). Before the clock each client
connects and sends a warm-up of the same kind (``--warmup`` records). Prints msg/s, client CPU
us per message, the process's RSS once the client was created and warmed up, its peak while
sending (the kernel's high-water mark, reset after the warm-up) and after the last flush, and
ratios to confluent-kafka. ``--buffer-memory`` is cproducer's ``buffer.memory`` and confluent's
``queue.buffering.max.kbytes`` (librdkafka's default is 1 GiB). ``--rounds R`` runs the clients
R times, alternating, and prints the medians. ``--transactions K``: every client (confluent,
send, send_many) commits a transaction every K records instead.

``send_many`` sends chunks of 10,000 records (at most 4 MiB of values); ``--send-many-input
arrow`` (the default) passes pyarrow binary arrays, ``numpy`` fixed-width ``S`` arrays, ``lists``
Python lists. ``confluent_columns`` is confluent-kafka fed from the same chunks (``to_pylist()`` /
``tolist()``, then one ``produce`` per record): what a confluent-kafka user holding that data does,
with the same library imported (pyarrow alone adds ~85 MB of RSS to either process).

    python benchmarks/compare_peers.py [--records 300000] [--clients confluent,send,send_many,...]
                                       [--value-size 100] [--buffer-memory 33554432]
                                       [--rounds 3] [--transactions 10000]
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

# this checkout's cproducer, not an installed one (the clients' child processes get this path too)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

DISTINCT_KEYS = 1000
PARTITIONS = 6
#: set in each child from the command line
TXN_RECORDS = 0  # records per transaction (0: no transactions)
VALUE_SIZE = 100
BUFFER_MEMORY = 33554432
SEND_MANY_INPUT = "arrow"
SEND_MANY_CHUNK_BYTES = 4 * 1048576


LABELS = {
    "confluent": "confluent-kafka produce + delivery callback",
    "send": "cproducer send + callback",
    "send_many": "cproducer send_many (10k per call)",
    "confluent_columns": "confluent-kafka produce from the send_many input",
    "kafka-python": "kafka-python send + callback",
    "aiokafka": "aiokafka send",
}


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


def _rss_kb(field: str = "VmRSS") -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def _reset_peak_rss() -> None:
    """The kernel's high-water mark (VmHWM) starts again from the current RSS."""
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")


def _timed(warmup: Callable[[], Any], run: Callable[[], int]) -> Dict[str, Any]:
    """Warm up (connect, first batches), then measure ``run``: wall, CPU and memory."""
    warmup()
    created = _start_measuring()
    cpu0, t0 = _cpu_s(), time.perf_counter()
    return _measured(run(), created, cpu0, t0)


def _start_measuring() -> int:
    """The RSS (kB) the measurement starts from; the peak is counted from here on."""
    created = _rss_kb()
    _reset_peak_rss()
    return created


def _measured(delivered: int, created: int, cpu0: float, t0: float) -> Dict[str, Any]:
    """What a run measured: ``delivered`` records since ``t0``/``cpu0``, RSS from ``created``."""
    wall, cpu = time.perf_counter() - t0, _cpu_s() - cpu0
    return {
        "delivered": delivered,
        "wall_s": wall,
        "cpu_s": cpu,
        "rss_created_mb": created / 1024,
        "rss_peak_mb": _rss_kb("VmHWM") / 1024,
        "rss_after_mb": _rss_kb() / 1024,
    }


def _cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _confluent(bootstrap: str) -> Any:
    from confluent_kafka import Producer

    return Producer(
        {
            "bootstrap.servers": bootstrap,
            "compression.type": "lz4",
            "linger.ms": 5,
            "acks": "all",
            "queue.buffering.max.messages": 1_000_000,
            "queue.buffering.max.kbytes": BUFFER_MEMORY // 1024,
            **_txn_config(),
        }
    )


def _confluent_runner(p: Any, topic: str) -> Callable[[int, Callable[[int], Any]], int]:
    """confluent-kafka's produce loop: ``run(count, record)`` produces ``record(i)`` = (key,
    value) for i < count, polls every 1,000, retries on BufferError, flushes; records delivered."""
    if TXN_RECORDS:
        p.init_transactions()
    delivered = [0]

    def on_delivery(err: Any, msg: Any) -> None:
        if err is None:
            delivered[0] += 1

    def run(count: int, record: Callable[[int], Any]) -> int:
        delivered[0] = 0
        for i in range(count):
            _txn_step(p, i)
            key, value = record(i)
            while True:
                try:
                    p.produce(topic, value, key, on_delivery=on_delivery)
                    break
                except BufferError:
                    p.poll(0.01)
            if i % 1000 == 0:
                p.poll(0)
        _txn_end(p)
        p.flush(60)
        return delivered[0]

    return run


def run_confluent(bootstrap: str, topic: str, n: int, warm: int) -> Dict[str, Any]:
    keys, value = _workload(n)
    run = _confluent_runner(_confluent(bootstrap), topic)

    def record(i: int) -> Any:
        return keys[i % DISTINCT_KEYS], value

    return _timed(lambda: run(warm, record) and None, lambda: run(n, record))


def run_confluent_columns(bootstrap: str, topic: str, n: int, warm: int) -> Dict[str, Any]:
    """confluent-kafka fed from send_many's input: each chunk's columns turned into Python lists
    (pyarrow's ``to_pylist``, numpy's ``tolist``) as its user would, then produced one by one."""
    chunk, all_keys, values = _columns(n)
    run = _confluent_runner(_confluent(bootstrap), topic)
    rows: List[Any] = []

    def record(i: int) -> Any:
        if i % chunk == 0:  # each chunk converted when its first record is produced
            ks, vs = all_keys, values
            if SEND_MANY_INPUT == "arrow":
                ks, vs = ks.to_pylist(), vs.to_pylist()
            elif SEND_MANY_INPUT == "numpy":
                ks, vs = ks.tolist(), vs.tolist()
            rows[:] = [ks, vs]
        return rows[0][i % chunk], rows[1][i % chunk]

    return _timed(lambda: run(warm, record) and None, lambda: run(n, record))


def _columns(n: int) -> Any:
    """send_many's input: (chunk, keys, values), one chunk's worth in SEND_MANY_INPUT's kind.
    With transactions one chunk per transaction; else chunks of 10,000 records, or of 4 MiB of
    values for large records (the input arrays are the caller's memory, not the producer's:
    10,000 x 10 kB would be 100 MB of them)."""
    keys, value = _workload(n)
    chunk = TXN_RECORDS or max(1, min(10_000, SEND_MANY_CHUNK_BYTES // VALUE_SIZE))
    all_keys: Any = [keys[i % DISTINCT_KEYS] for i in range(chunk)]
    values: Any = [value] * chunk
    if SEND_MANY_INPUT == "arrow":
        import pyarrow as pa

        all_keys, values = pa.array(all_keys, pa.binary()), pa.array(values, pa.binary())
    elif SEND_MANY_INPUT == "numpy":
        import numpy as np

        all_keys, values = np.array(all_keys), np.array(values)
    return chunk, all_keys, values


def _cproducer(bootstrap: str) -> Any:
    from cproducer import KafkaProducer

    return KafkaProducer(
        _txn_config(),
        bootstrap_servers=bootstrap,
        compression_type="lz4",
        linger_ms=5,
        acks="all",
        buffer_memory=BUFFER_MEMORY,
    )


def run_cproducer_send(bootstrap: str, topic: str, n: int, warm: int) -> Dict[str, Any]:
    keys, value = _workload(n)
    delivered = [0]

    def on_completion(md: Any, exc: Any) -> None:
        if exc is None:
            delivered[0] += 1

    with _cproducer(bootstrap) as p:
        if TXN_RECORDS:
            p.init_transactions()
        send = p.send

        def produce(count: int) -> int:
            delivered[0] = 0
            if not TXN_RECORDS:
                for i in range(count):
                    send(topic, value, keys[i % DISTINCT_KEYS], callback=on_completion)
            else:
                for i in range(count):
                    _txn_step(p, i)
                    send(topic, value, keys[i % DISTINCT_KEYS], callback=on_completion)
                _txn_end(p)
            p.flush()
            return delivered[0]

        return _timed(lambda: produce(warm) and None, lambda: produce(n))


def run_cproducer_send_many(bootstrap: str, topic: str, n: int, warm: int) -> Dict[str, Any]:
    chunk, all_keys, values = _columns(n)
    with _cproducer(bootstrap) as p:
        if TXN_RECORDS:
            p.init_transactions()

        def produce(count: int) -> int:
            futures = []
            sent = 0
            while sent < count:
                m = min(chunk, count - sent)
                _txn_step(p, sent)
                futures.append(p.send_many(topic, values[:m], keys=all_keys[:m]))
                sent += m
            _txn_end(p)
            p.flush()
            return sum(f.get(60).delivered for f in futures)

        return _timed(lambda: produce(warm) and None, lambda: produce(n))


def run_kafka_python(bootstrap: str, topic: str, n: int, warm: int) -> Dict[str, Any]:
    from kafka import KafkaProducer

    keys, value = _workload(n)
    delivered = [0]

    def ok(_md: Any) -> None:
        delivered[0] += 1

    # kafka-python 3 has no buffer pool (its buffer_memory option is gone): given only where
    # the installed kafka-python still takes it
    memory = (
        {"buffer_memory": BUFFER_MEMORY} if "buffer_memory" in KafkaProducer.DEFAULT_CONFIG else {}
    )
    p = KafkaProducer(
        bootstrap_servers=bootstrap, compression_type="lz4", linger_ms=5, acks="all", **memory
    )

    def produce(count: int) -> int:
        delivered[0] = 0
        for i in range(count):
            p.send(topic, value, key=keys[i % DISTINCT_KEYS]).add_callback(ok)
        p.flush(60)
        return delivered[0]

    try:
        return _timed(lambda: produce(warm) and None, lambda: produce(n))
    finally:
        p.close()


def run_aiokafka(bootstrap: str, topic: str, n: int, warm: int) -> Dict[str, Any]:
    import asyncio

    from aiokafka import AIOKafkaProducer

    keys, value = _workload(n)

    async def produce(p: Any, count: int) -> int:
        futs = []
        for i in range(count):
            futs.append(await p.send(topic, value, key=keys[i % DISTINCT_KEYS]))
        done = await asyncio.gather(*futs, return_exceptions=True)
        return sum(1 for d in done if not isinstance(d, BaseException))

    async def main() -> Dict[str, Any]:
        p = AIOKafkaProducer(
            bootstrap_servers=bootstrap, compression_type="lz4", linger_ms=5, acks="all"
        )
        await p.start()
        try:
            await produce(p, warm)
            created = _start_measuring()
            cpu0, t0 = _cpu_s(), time.perf_counter()
            return _measured(await produce(p, n), created, cpu0, t0)
        finally:
            await p.stop()

    return asyncio.run(main())


CLIENTS: Dict[str, Callable[[str, str, int, int], Dict[str, Any]]] = {
    "confluent": run_confluent,
    "send": run_cproducer_send,
    "send_many": run_cproducer_send_many,
    "confluent_columns": run_confluent_columns,
    "kafka-python": run_kafka_python,
    "aiokafka": run_aiokafka,
}


IMPORTS = {
    "confluent": "confluent_kafka",
    "send": "cproducer.producer.kafka_producer",
    "send_many": "cproducer.producer.kafka_producer",
    "confluent_columns": "confluent_kafka",
    "kafka-python": "kafka",
    "aiokafka": "aiokafka",
}


def _child(name: str, bootstrap: str, topic: str, n: int, opts: Dict[str, Any], out: Any) -> None:
    global TXN_RECORDS, VALUE_SIZE, BUFFER_MEMORY, SEND_MANY_INPUT
    TXN_RECORDS = opts["transactions"]
    VALUE_SIZE = opts["value_size"]
    BUFFER_MEMORY = opts["buffer_memory"]
    SEND_MANY_INPUT = opts["send_many_input"]
    try:
        if TXN_RECORDS and name not in ("confluent", "confluent_columns", "send", "send_many"):
            raise NotImplementedError("not measured with --transactions")
        import importlib

        importlib.import_module(IMPORTS[name])  # import time is not the client's throughput
        if name in ("send_many", "confluent_columns") and SEND_MANY_INPUT == "arrow":
            importlib.import_module("pyarrow")
        res = CLIENTS[name](bootstrap, topic, n, opts["warmup"])
        out.put({"client": name, **res})
    except Exception as exc:  # reported, not raised: the other clients still run
        out.put({"client": name, "error": f"{type(exc).__name__}: {exc}"})


def _median(values: List[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def main(argv: List[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=300_000)
    ap.add_argument("--clients", default=",".join(CLIENTS))
    ap.add_argument("--json", help="also write the results here")
    ap.add_argument("--plot", metavar="DIR", help="write peers.json and peers.png into DIR")
    ap.add_argument("--transactions", type=int, default=0, metavar="K", help="commit every K")
    ap.add_argument("--value-size", type=int, default=100)
    ap.add_argument("--buffer-memory", type=int, default=33554432)
    ap.add_argument("--warmup", type=int, default=20_000, help="records sent before the clock")
    ap.add_argument("--rounds", type=int, default=1, help="alternating runs; medians printed")
    ap.add_argument("--send-many-input", choices=("arrow", "numpy", "lists"), default="arrow")
    args = ap.parse_args(argv)
    from cproducer.localbroker import LocalBroker

    opts = {
        "transactions": args.transactions,
        "value_size": args.value_size,
        "buffer_memory": args.buffer_memory,
        "send_many_input": args.send_many_input,
        "warmup": args.warmup,
    }
    names = [c for c in args.clients.split(",") if c]
    runs: List[Dict[str, Any]] = []
    ctx = mp.get_context("spawn")
    with LocalBroker() as broker:
        for round_no in range(args.rounds):
            for name in names:
                topic = f"peers-{name}-{round_no}-{os.getpid()}"
                broker.create_topic(topic, PARTITIONS)
                q = ctx.Queue()
                proc = ctx.Process(
                    target=_child,
                    args=(name, broker.bootstrap_servers, topic, args.records, opts, q),
                )
                proc.start()
                res = q.get(timeout=900)
                proc.join()
                if "error" not in res and res["delivered"] != args.records:
                    res["error"] = f"delivered {res['delivered']} of {args.records}"
                res["round"] = round_no
                runs.append(res)
                print(json.dumps(res), file=sys.stderr, flush=True)
    results = []
    for name in names:
        mine = [r for r in runs if r["client"] == name]
        ok = [r for r in mine if "error" not in r]
        if len(ok) < len(mine):
            results.append(next(r for r in mine if "error" in r))
            continue
        keys = ("wall_s", "cpu_s", "rss_created_mb", "rss_peak_mb", "rss_after_mb")
        results.append({"client": name, **{k: _median([r[k] for r in ok]) for k in keys}})
    base = next((r for r in results if r["client"] == "confluent" and "error" not in r), None)
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    )
    print(
        f"workload: {args.records} x {args.value_size} B, {DISTINCT_KEYS} keys, lz4, linger 5 ms, "
        f"acks=all, {PARTITIONS} partitions, buffer.memory {args.buffer_memory:,} B"
        + (f", a transaction every {args.transactions} records" if args.transactions else "")
        + (f"; medians of {args.rounds} alternating rounds" if args.rounds > 1 else "")
    )
    print(
        f"{'client':<19}{'msg/s':>12}{'CPU us/msg':>12}{'x msg/s':>9}{'x CPU':>7}"
        f"{'RSS MB: created':>17}{'peak':>7}{'growth':>8}{'after':>7}{'x peak':>8}"
    )
    for r in results:
        if "error" in r:
            print(f"{r['client']:<19} ERROR {r['error']}")
            continue
        rate = args.records / r["wall_s"]
        cpu_us = r["cpu_s"] / args.records * 1e6
        ratios = peak_ratio = ""
        if base:
            base_rate = args.records / base["wall_s"]
            base_cpu = base["cpu_s"] / args.records * 1e6
            ratios = f"{rate / base_rate:>9.2f}{cpu_us / base_cpu:>7.2f}"
            peak_ratio = f"{r['rss_peak_mb'] / base['rss_peak_mb']:>8.2f}"
        growth = r["rss_peak_mb"] - r["rss_created_mb"]
        print(
            f"{r['client']:<19}{rate:>12,.0f}{cpu_us:>12.2f}{ratios}{r['rss_created_mb']:>17.1f}"
            f"{r['rss_peak_mb']:>7.1f}{growth:>8.1f}{r['rss_after_mb']:>7.1f}{peak_ratio}"
        )
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"runs": runs, "medians": results}, fh, indent=2)
    if args.plot:
        stem = f"peers_txn{args.transactions}" if args.transactions else "peers"
        machine = (
            f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
        )
        report = {
            "records": args.records,
            "workload": f"{args.records} x {args.value_size} B, {DISTINCT_KEYS} keys, lz4, "
            f"linger 5 ms, acks=all, {PARTITIONS} partitions; {machine}",
            "labels": {r["client"]: LABELS.get(r["client"], r["client"]) for r in results},
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
