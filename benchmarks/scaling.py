"""Scaling curves: cproducer, confluent-kafka and Java's producer along one axis of the workload.

One axis per run (``--axis``), every point of it measured for every client in alternating rounds
(``--rounds R``, the order of the clients rotating from round to round; medians printed), each
client run in its own process as in ``compare_peers.py`` (whose producers, measurements, brokers
and Java launcher this script imports): connect and warm up, then the clock.

- ``partitions``: one topic of 6, 100, 1,000 and 10,000 partitions, keyed records (max(1,000,
  4 x partitions) distinct keys, so that every partition gets some) and unkeyed ones;
- ``topics``: 1, 10, 100 and 1,000 topics of 10 partitions, record i to topic i % T (key
  (i // T) % 1,000);
- ``size``: values of 10 B to 1 MB (no compression: the bytes go over the socket), msg/s and
  MB/s, and the loopback copy rate measured in the same run (a socket pair on 127.0.0.1 pushing
  1 MB buffers) as the physical limit;
- ``threads``: 1, 2, 4 and 8 threads calling ``send()`` (``produce()``, Java's ``send()``,
  ``send_many``) on one producer, each a contiguous share of the records;
- ``producers``: 1, 8 and 64 producers in one process, each connected by one acknowledged
  record; the memory and threads each adds, and the CPU the process takes over ``--idle``
  seconds of doing nothing;
- ``latency``: each client's max msg/s first (6 partitions, keyed), then fixed-rate runs at 10%,
  50% and 90% of it (``--rate-seconds`` each), the same producer, the same process.

Otherwise the workload is compare_peers.py's: 100-byte values, lz4, linger 5 ms, acks=all,
batch.size 16,384 (librdkafka's own batch size), buffer.memory 32 MiB. Every ``--sample``-th
record (16) is timed, from just before the send to its callback (librdkafka's callbacks run from
``poll()``: every 1,024 records at full speed, every 16 at a fixed rate, and while it waits);
``send_many`` times its calls (chunks of at most 10,000 records) to their future's callback.
A point's run stops sending after ``--max-seconds`` (the records acknowledged are counted) so that
a slow client at a hard point does not hold up the axis.

    python benchmarks/scaling.py --axis partitions|topics|size|threads|producers|latency
                                 [--rounds 3] [--records N] [--broker tansu|kafka]
                                 [--clients confluent,send,send_many,java] [--json OUT]
                                 [--plot DIR]
"""

from __future__ import annotations

import argparse
import itertools
import json
import multiprocessing as mp
import os
import platform
import shlex
import socket
import subprocess
import sys
import threading
import time
from typing import Any, Callable, Dict, List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
# this checkout's cproducer and tests.tools (the child processes get this path too)
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)

import compare_peers as cp  # noqa: E402

JAVA = cp.JAVA
CLIENTS = ("confluent", "send", "send_many", JAVA)
LABELS = {
    "confluent": "confluent-kafka",
    "send": "cproducer send",
    "send_many": "cproducer send_many",
    JAVA: "Java KafkaProducer",
}
COLORS = {"confluent": "#8c8c8c", "send": "#2a7ab9", "send_many": "#18a558", JAVA: "#d2691e"}
OURS = ("send", "send_many")
PEERS = ("confluent", JAVA)
SEND_MANY_CHUNK = 10_000
SEND_MANY_CHUNK_BYTES = 4 * 1048576
LATENCY_FRACTIONS = (0.1, 0.5, 0.9)
MB = 1e6


def _point(x: int, variant: str = "", **spec: Any) -> Dict[str, Any]:
    base = {"x": x, "variant": variant, "topics": 1, "partitions": 6, "keys": 1000, "size": 100}
    base.update(threads=1, producers=0, mode="throughput", compression="lz4")
    base.update(spec)
    return base


def axis_points(axis: str) -> List[Dict[str, Any]]:
    if axis == "partitions":
        return [
            _point(p, v, partitions=p, keys=max(1000, 4 * p) if v == "keyed" else 0)
            for v in ("keyed", "unkeyed")
            for p in (6, 100, 1000, 10_000)
        ]
    if axis == "topics":
        return [_point(t, topics=t, partitions=10) for t in (1, 10, 100, 1000)]
    if axis == "size":
        sizes = (10, 100, 1000, 10_000, 100_000, 1_000_000)
        return [_point(s, size=s, compression="none") for s in sizes]
    if axis == "threads":
        return [_point(t, threads=t) for t in (1, 2, 4, 8)]
    if axis == "producers":
        return [_point(n, producers=n, mode="producers") for n in (1, 8, 64)]
    if axis == "latency":
        return [_point(6, mode="latency")]
    raise ValueError(axis)


AXIS_X = {
    "partitions": "partitions of the topic",
    "topics": "topics (10 partitions each)",
    "size": "value size (bytes)",
    "threads": "threads sending on one producer",
    "producers": "producers in one process",
    "latency": "fixed rate, % of the client's max msg/s",
}


def default_records(point: Dict[str, Any]) -> int:
    """300,000 records (0.1 to 1 s per client at 6 partitions of 100-byte records on a 2-core
    machine, seconds at many partitions); 300 MB of values for large records."""
    return max(100, min(300_000, 300_000_000 // point["size"]))


def topic_names(prefix: str, count: int) -> List[str]:
    return [prefix] if count == 1 else [f"{prefix}-{j}" for j in range(count)]


def _keys(count: int) -> List[bytes]:
    return [f"key-{i:06d}".encode() for i in range(count)]


def _percentiles(lat: List[float]) -> Dict[str, Any]:
    """p50/p99/p99.9 in ms (the sample at floor(q x n) of the sorted samples, as the Java peer)."""
    ordered = sorted(lat)
    out: Dict[str, Any] = {"lat_samples": len(ordered)}
    for name, q in (("lat_p50_ms", 0.5), ("lat_p99_ms", 0.99), ("lat_p999_ms", 0.999)):
        out[name] = ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1e3 if ordered else None
    return out


def _threads_now() -> int:
    return len(os.listdir("/proc/self/task"))


# -------------------------------------------------------------------- the Python clients' loops


class Sender:
    """One client's send loop over a point's records: record i to ``topics[i % T]`` with key
    ``keys[(i // T) % K]`` (no key when the point is unkeyed), every ``sample``-th timed; from
    ``threads`` threads, at full speed or at a fixed rate. ``measure`` gives the figures."""

    def __init__(self, client: str, producer: Any, spec: Dict[str, Any]) -> None:
        self.client, self.p, self.spec = client, producer, spec
        self.topics = topic_names(spec["topic"], spec["topics"])
        self.keys: List[Optional[bytes]] = list(_keys(spec["keys"])) if spec["keys"] else [None]
        self.value = b"v" * spec["size"]
        self.sample = spec["sample"]
        self.lat: List[float] = []
        self.ok = itertools.count()
        if client == "send_many":
            self._columns()

    def _columns(self) -> None:
        """send_many's input: pyarrow arrays, the keys repeated so that any slice of a chunk's
        length exists."""
        import pyarrow as pa

        t = len(self.topics)
        self.chunk = max(1, min(SEND_MANY_CHUNK, SEND_MANY_CHUNK_BYTES // len(self.value)))
        self.per_call = max(1, self.chunk // t)
        self.values = pa.array([self.value] * self.per_call, pa.binary())
        if self.keys[0] is None:
            self.key_col = None
        else:
            k = len(self.keys)
            self.key_col = pa.array(
                [self.keys[i % k] for i in range(k + self.per_call)], pa.binary()
            )

    def measure(self, count: int, rate: float, seconds: float) -> Dict[str, Any]:
        """``count`` records (``rate`` a second in all, 0: at full speed), stopping after
        ``seconds``; flushed; then wall, CPU, RSS, the records acknowledged, the latencies."""
        self.lat = []
        self.ok = itertools.count()
        self.sent = [0] * self.spec["threads"]
        self.futures: List[Any] = []
        self.batches: List[int] = []  # send_many: the records each call delivered
        n = self.spec["threads"]
        bounds = [count * t // n for t in range(n + 1)]
        cpu0, t0 = cp._cpu_s(), time.perf_counter()
        deadline = t0 + seconds
        loop = getattr(self, "_" + self.client)
        if n == 1:
            loop(0, bounds[0], bounds[1], rate, t0, deadline)
        else:
            workers = [
                threading.Thread(
                    target=loop, args=(t, bounds[t], bounds[t + 1], rate / n, t0, deadline)
                )
                for t in range(n)
            ]
            for w in workers:
                w.start()
            for w in workers:
                w.join()
        self._flush()
        wall, cpu = time.perf_counter() - t0, cp._cpu_s() - cpu0
        delivered = next(self.ok) + sum(self.batches)
        return {
            "sent": sum(self.sent),
            "delivered": delivered,
            "wall_s": wall,
            "cpu_s": cpu,
            "rss_peak_mb": cp._rss_kb("VmHWM") / 1024,
            "rss_after_mb": cp._rss_kb() / 1024,
            **_percentiles(self.lat),
        }

    def _flush(self) -> None:
        if self.client == "confluent":
            self.p.flush(120)
        elif self.client == "send_many":
            self.p.flush()
            for f in self.futures:
                f.get(120)
        else:
            self.p.flush()

    @staticmethod
    def _wait(due: float) -> None:
        time.sleep(min(0.0005, max(0.0, due - time.perf_counter())))

    def _send(self, me: int, lo: int, hi: int, rate: float, t0: float, deadline: float) -> None:
        send, value, topics, keys, sample = (
            self.p.send,
            self.value,
            self.topics,
            self.keys,
            self.sample,
        )
        T, K = len(topics), len(keys)
        ok, lat, clock = self.ok, self.lat, time.perf_counter

        def counted(md: Any, exc: Any) -> None:
            if exc is None:
                next(ok)

        def timed(t: float) -> Callable[[Any, Any], None]:
            def cb(md: Any, exc: Any) -> None:
                if exc is None:
                    next(ok)
                    lat.append(clock() - t)

            return cb

        i = lo
        while i < hi:
            t = clock()
            if t > deadline:
                break
            if rate and t < t0 + (i - lo) / rate:
                self._wait(t0 + (i - lo) / rate)
                continue
            end = min(hi, i + sample)
            if T == 1:
                topic = topics[0]
                send(topic, value, keys[i % K], callback=timed(t))
                for j in range(i + 1, end):
                    send(topic, value, keys[j % K], callback=counted)
            else:
                send(topics[i % T], value, keys[(i // T) % K], callback=timed(t))
                for j in range(i + 1, end):
                    send(topics[j % T], value, keys[(j // T) % K], callback=counted)
            i = end
        self.sent[me] = i - lo

    def _confluent(
        self, me: int, lo: int, hi: int, rate: float, t0: float, deadline: float
    ) -> None:
        produce, poll, value, topics, keys, sample = (
            self.p.produce,
            self.p.poll,
            self.value,
            self.topics,
            self.keys,
            self.sample,
        )
        T, K = len(topics), len(keys)
        ok, lat, clock = self.ok, self.lat, time.perf_counter

        def counted(err: Any, msg: Any) -> None:
            if err is None:
                next(ok)

        def timed(t: float) -> Callable[[Any, Any], None]:
            def cb(err: Any, msg: Any) -> None:
                if err is None:
                    next(ok)
                    lat.append(clock() - t)

            return cb

        def one(topic: str, key: Any, cb: Any) -> None:  # only when the queue is full
            while True:
                try:
                    produce(topic, value, key, on_delivery=cb)
                    return
                except BufferError:
                    poll(0.01)

        poll_every = 1 if rate else 1024 // sample
        blocks = 0
        i = lo
        while i < hi:
            t = clock()
            if t > deadline:
                break
            if rate and t < t0 + (i - lo) / rate:
                poll(min(0.0005, max(0.0, t0 + (i - lo) / rate - t)))
                continue
            end = min(hi, i + sample)
            try:
                produce(topics[i % T], value, keys[(i // T) % K], on_delivery=timed(t))
            except BufferError:
                one(topics[i % T], keys[(i // T) % K], timed(t))
            for j in range(i + 1, end):
                try:
                    produce(topics[j % T], value, keys[(j // T) % K], on_delivery=counted)
                except BufferError:
                    one(topics[j % T], keys[(j // T) % K], counted)
            i = end
            blocks += 1
            if blocks % poll_every == 0:
                poll(0)
        self.sent[me] = i - lo

    def _send_many(
        self, me: int, lo: int, hi: int, rate: float, t0: float, deadline: float
    ) -> None:
        """Calls of ``per_call`` records, topic after topic (with T topics a chunk's records are
        spread over them as record i % T); the keys rotate through the key column."""
        topics, values, key_col, m = self.topics, self.values, self.key_col, self.per_call
        K = len(self.keys)
        batches, lat, clock = self.batches, self.lat, time.perf_counter
        futures: List[Any] = []
        call = 0
        i = lo
        while i < hi:
            t = clock()
            if t > deadline:
                break
            if rate and t < t0 + (i - lo) / rate:
                self._wait(t0 + (i - lo) / rate)
                continue
            n = min(m, hi - i)
            off = (call * m) % K
            keys = None if key_col is None else key_col[off : off + n]
            f = self.p.send_many(topics[call % len(topics)], values[:n], keys=keys)

            def done(result: Any, t: float = t) -> None:
                batches.append(result.delivered)
                lat.append(clock() - t)

            f.add_callback(done)
            futures.append(f)
            call += 1
            i += n
        self.sent[me] = i - lo
        self.futures.extend(futures)


def _producer(client: str, bootstrap: str, spec: Dict[str, Any]) -> Any:
    if client == "confluent":
        extra: Dict[str, Any] = {"compression.type": spec["compression"]}
        if spec["size"] > 500_000:  # librdkafka's default limit is 1,000,000 bytes a request
            extra["message.max.bytes"] = 2 * spec["size"]
        return cp._confluent(bootstrap, **extra)
    return cp._cproducer(bootstrap, compression_type=spec["compression"])


def _close(client: str, p: Any) -> None:
    if client == "confluent":
        p.flush(30)
    else:
        p.close()


def run_python(client: str, bootstrap: str, spec: Dict[str, Any]) -> Dict[str, Any]:
    """One client's run of a point in this (child) process."""
    if spec["mode"] == "producers":
        return _producers(client, bootstrap, spec)
    p = _producer(client, bootstrap, spec)
    try:
        s = Sender(client, p, spec)
        s.measure(spec["warmup"], 0, spec["max_seconds"])
        created = cp._start_measuring()
        res = s.measure(spec["records"], 0, spec["max_seconds"])
        res["rss_created_mb"] = created / 1024
        if spec["mode"] == "latency":
            rate = res["delivered"] / res["wall_s"]
            res["fixed"] = []
            for f in spec["fractions"]:
                count = max(1, int(rate * f * spec["rate_seconds"]))
                r = s.measure(count, rate * f, spec["max_seconds"] + spec["rate_seconds"])
                res["fixed"].append({"fraction": f, "target_rate": rate * f, **r})
        return res
    finally:
        _close(client, p)


def _producers(client: str, bootstrap: str, spec: Dict[str, Any]) -> Dict[str, Any]:
    """N producers, each connected by one record acknowledged; what they add, and idle CPU."""
    n, topic, value = spec["producers"], spec["topic"], b"v" * spec["size"]
    _close(client, _producer(client, bootstrap, spec))  # the first one's imports and caches
    rss0, threads0 = cp._rss_kb() / 1024, _threads_now()
    ps = []
    try:
        for i in range(n):
            p = _producer(client, bootstrap, spec)
            ps.append(p)
            if client == "confluent":
                p.produce(topic, value, b"key-%06d" % i)
                p.flush(30)
            else:
                p.send(topic, value, b"key-%06d" % i).get(30)
        rss1, threads1 = cp._rss_kb() / 1024, _threads_now()
        cpu0, t0 = cp._cpu_s(), time.perf_counter()
        time.sleep(spec["idle"])
        wall, cpu = time.perf_counter() - t0, cp._cpu_s() - cpu0
        return {
            "producers": n,
            "rss_before_mb": rss0,
            "rss_after_mb": rss1,
            "rss_peak_mb": cp._rss_kb("VmHWM") / 1024,
            "threads_before": threads0,
            "threads_after": threads1,
            "idle_wall_s": wall,
            "idle_cpu_s": cpu,
        }
    finally:
        for p in ps:
            _close(client, p)


def _child(client: str, bootstrap: str, spec: Dict[str, Any], out: Any) -> None:
    try:
        import importlib

        importlib.import_module(cp.IMPORTS[client])  # import time is not the client's
        if client == "send_many":
            importlib.import_module("pyarrow")
        out.put({"client": client, **run_python(client, bootstrap, spec)})
    except Exception as exc:  # reported, not raised: the other clients still run
        out.put({"client": client, "error": f"{type(exc).__name__}: {exc}"})


def run_java(
    command: List[str], bootstrap: str, spec: Dict[str, Any], broker: str
) -> Dict[str, Any]:
    args = {
        "mode": spec["mode"],
        "bootstrap": bootstrap,
        "topic": spec["topic"],
        "topics": spec["topics"],
        "records": spec["records"],
        "warmup": spec["warmup"],
        "value": spec["size"],
        "keys": spec["keys"],
        "threads": spec["threads"],
        "sample": spec["sample"],
        "seconds": spec["max_seconds"],
        "fractions": ",".join(map(str, spec["fractions"])),
        "rate_seconds": spec["rate_seconds"],
        "producers": spec["producers"],
        "idle": spec["idle"],
        "p.compression.type": spec["compression"],
        "p.buffer.memory": cp.BUFFER_MEMORY,
    }
    argv = [f"{k}={v}" for k, v in args.items()]
    argv += ["p." + prop for prop in cp.JAVA_BROKER_PROPS[broker]]
    return cp.run_jvm([*command, *argv])


# -------------------------------------------------------------------- the physical limit


def loopback_mb_s(seconds: float = 1.0, chunk: int = 1_000_000) -> float:
    """The rate a socket pair on 127.0.0.1 moves ``chunk``-byte buffers at (MB/s): one thread
    sends, one receives, for ``seconds``."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    client = socket.create_connection(server.getsockname())
    peer, _ = server.accept()
    server.close()
    received = [0]

    def drain() -> None:
        buf = bytearray(chunk)
        view = memoryview(buf)
        while True:
            got = peer.recv_into(view)
            if not got:
                return
            received[0] += got

    reader = threading.Thread(target=drain)
    reader.start()
    data = b"v" * chunk
    for _ in range(50):  # warm up the socket buffers
        client.sendall(data)
    start_bytes, t0 = received[0], time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        client.sendall(data)
    wall, moved = time.perf_counter() - t0, received[0] - start_bytes
    client.close()
    reader.join()
    peer.close()
    return moved / wall / MB


# -------------------------------------------------------------------- the run


def git_state() -> Dict[str, str]:
    root = os.path.join(HERE, "..")

    def git(*args: str) -> str:
        try:
            out = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True)
            return out.stdout.strip()
        except OSError:
            return ""

    return {
        "head": git("rev-parse", "--short", "HEAD"),
        "status": git("status", "--short", "cproducer"),
    }


def run_axis(args: argparse.Namespace) -> Dict[str, Any]:
    points = axis_points(args.axis)
    if args.points:
        points = [p for p in points if str(p["x"]) in args.points.split(",")]
    if args.variants:
        points = [p for p in points if p["variant"] in args.variants.split(",")]
    names = [c for c in args.clients.split(",") if c]
    if args.axis in ("producers", "latency"):
        names = [c for c in names if c != "send_many"]  # one record each; no fixed-rate chunks
    ctx = mp.get_context("spawn")
    java_cmd = (
        cp.java_command(shlex.split(args.java_opts), "JavaScalingPeer") if JAVA in names else []
    )
    runs: List[Dict[str, Any]] = []
    loads: List[float] = []
    loopback: List[float] = []
    started = time.time()
    with cp.broker_for(args.broker) as broker:
        for pno, point in enumerate(points):
            if args.broker == "tansu" and pno:
                broker.restart()  # in-memory storage: each point starts empty
            prefix = f"scal-{args.axis}-{pno}-{os.getpid()}"
            total_partitions = point["topics"] * point["partitions"]
            for name in topic_names(prefix, point["topics"]):
                broker.create_topic(name, point["partitions"])
            records = args.records or default_records(point)
            spec = {
                **point,
                "topic": prefix,
                "records": records,
                "warmup": max(min(args.warmup, records // 5), min(4 * total_partitions, 50_000)),
                "sample": args.sample,
                "max_seconds": args.max_seconds,
                "fractions": list(LATENCY_FRACTIONS),
                "rate_seconds": args.rate_seconds,
                "idle": args.idle,
            }
            for round_no in range(args.rounds):
                if point["size"] >= 1_000_000:
                    loopback.append(loopback_mb_s())
                order = names[round_no % len(names) :] + names[: round_no % len(names)]
                for name in order:
                    loads.append(os.getloadavg()[0])
                    if name == JAVA:
                        res = run_java(java_cmd, broker.bootstrap_servers, spec, args.broker)
                    else:
                        q = ctx.Queue()
                        proc = ctx.Process(
                            target=_child, args=(name, broker.bootstrap_servers, spec, q)
                        )
                        proc.start()
                        res = q.get(timeout=900)
                        proc.join()
                    if "error" not in res and point["mode"] != "producers":
                        if res["delivered"] < res["sent"]:
                            res["error"] = f"delivered {res['delivered']} of {res['sent']}"
                    res.update(round=round_no, x=point["x"], variant=point["variant"])
                    runs.append(res)
                    print(
                        json.dumps({k: v for k, v in res.items() if k != "fixed"}),
                        file=sys.stderr,
                        flush=True,
                    )
    loads.append(os.getloadavg()[0])
    return {
        "axis": args.axis,
        "command": "python benchmarks/scaling.py " + " ".join(sys.argv[1:]),
        "broker": cp.broker_version(args.broker),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}",
        "rounds": args.rounds,
        "clients": names,
        "points": points,
        "records": {str(p["x"]): args.records or default_records(p) for p in points},
        "load_average": {
            "min": round(min(loads), 2),
            "median": round(cp._median(loads), 2),
            "max": round(max(loads), 2),
        },
        "duration_s": time.time() - started,
        "loopback_mb_s": cp._median(loopback) if loopback else None,
        "runs": runs,
    }


METRICS = ("msg_s", "mb_s", "cpu_us", "rss_peak_mb", "lat_p50_ms", "lat_p99_ms", "lat_p999_ms")


def _figures(r: Dict[str, Any], size: int) -> Dict[str, Any]:
    out = {
        "msg_s": r["delivered"] / r["wall_s"],
        "mb_s": r["delivered"] * size / r["wall_s"] / MB,
        "cpu_us": r["cpu_s"] / max(1, r["delivered"]) * 1e6,
        "rss_peak_mb": r["rss_peak_mb"],
    }
    for k in ("lat_p50_ms", "lat_p99_ms", "lat_p999_ms"):
        out[k] = r.get(k)
    return out


def _med(values: List[Any]) -> Any:
    got = [v for v in values if v is not None]
    return cp._median(got) if got else None


def medians(report: Dict[str, Any]) -> List[Dict[str, Any]]:
    """One row per (point, client): the medians over the rounds, and the ratios of cproducer's
    to the peers' medians."""
    rows = []
    for point in report["points"]:
        for client in report["clients"]:
            mine = [
                r
                for r in report["runs"]
                if r["x"] == point["x"]
                and r["variant"] == point["variant"]
                and r["client"] == client
            ]
            ok = [r for r in mine if "error" not in r]
            row: Dict[str, Any] = {"x": point["x"], "variant": point["variant"], "client": client}
            if not ok:
                row["error"] = mine[0]["error"] if mine else "not run"
                rows.append(row)
                continue
            row["rounds_ok"] = len(ok)
            if point["mode"] == "producers":
                n = point["producers"]
                per = [
                    {
                        "rss_per_producer_mb": (r["rss_after_mb"] - r["rss_before_mb"]) / n,
                        "threads_per_producer": (r["threads_after"] - r["threads_before"]) / n,
                        "idle_cpu_pct": r["idle_cpu_s"] / r["idle_wall_s"] * 100,
                        "rss_after_mb": r["rss_after_mb"],
                        "threads_after": r["threads_after"],
                    }
                    for r in ok
                ]
                row.update({k: _med([p[k] for p in per]) for k in per[0]})
                row["idle_cpu_pct_per_producer"] = row["idle_cpu_pct"] / n
            else:
                figs = [_figures(r, point["size"]) for r in ok]
                row.update({k: _med([f[k] for f in figs]) for k in METRICS})
                if point["mode"] == "latency":
                    row["fixed"] = [
                        {
                            "fraction": f,
                            "target_rate": _med([r["fixed"][i]["target_rate"] for r in ok]),
                            **{
                                k: _med([_figures(r["fixed"][i], point["size"])[k] for r in ok])
                                for k in METRICS
                            },
                        }
                        for i, f in enumerate(LATENCY_FRACTIONS)
                    ]
            rows.append(row)
    for row in rows:
        if row["client"] in OURS and "error" not in row:
            for peer in PEERS:
                base = _row(rows, row["x"], row["variant"], peer)
                if base is None:
                    continue
                for k in (
                    "msg_s",
                    "cpu_us",
                    "rss_peak_mb",
                    "lat_p99_ms",
                    "rss_per_producer_mb",
                    "threads_per_producer",
                    "idle_cpu_pct",
                ):
                    if row.get(k) is not None and (base.get(k) or 0) > 0:
                        row[f"{k}/{peer}"] = row[k] / base[k]
    return rows


def _row(rows: List[Dict[str, Any]], x: int, variant: str, client: str) -> Optional[Dict[str, Any]]:
    return next(
        (
            r
            for r in rows
            if r["x"] == x
            and r["variant"] == variant
            and r["client"] == client
            and "error" not in r
        ),
        None,
    )


def defects(report: Dict[str, Any], rows: List[Dict[str, Any]]) -> List[str]:
    """The rule of issue 39: cproducer's CPU per record at the largest point over 1.5 x its value
    at the smallest; any point where cproducer falls behind Java or librdkafka (a lower msg/s, a
    higher CPU per record; a latency or a producer's memory, threads or idle CPU over 1.1 x the
    peer's)."""
    found = []
    axis = report["axis"]
    variants = sorted({p["variant"] for p in report["points"]})
    xs = sorted({p["x"] for p in report["points"]})
    for variant in variants:
        tag = f" ({variant})" if variant else ""
        for client in OURS:
            if axis in ("producers", "latency"):
                continue
            lo, hi = _row(rows, xs[0], variant, client), _row(rows, xs[-1], variant, client)
            if lo and hi and hi["cpu_us"] > 1.5 * lo["cpu_us"]:
                peers = []
                for peer in PEERS:
                    plo, phi = _row(rows, xs[0], variant, peer), _row(rows, xs[-1], variant, peer)
                    if plo and phi:
                        peers.append(f"{LABELS[peer]} {phi['cpu_us'] / plo['cpu_us']:.2f}x")
                found.append(
                    f"{axis}{tag}: {LABELS[client]} CPU per record {lo['cpu_us']:.2f} us at "
                    f"{xs[0]:,}, {hi['cpu_us']:.2f} us at {xs[-1]:,} "
                    f"({hi['cpu_us'] / lo['cpu_us']:.2f}x; " + ", ".join(peers) + ")"
                )
        for x in xs:
            for client in OURS:
                every = [r for r in rows if r["x"] == x and r["variant"] == variant]
                for r in every:
                    if r["client"] == client and "error" in r:
                        found.append(f"{axis}{tag} at {x:,}: {LABELS[client]} failed: {r['error']}")
                    elif r["client"] == client and r["rounds_ok"] < report["rounds"]:
                        found.append(
                            f"{axis}{tag} at {x:,}: {LABELS[client]} failed in "
                            f"{report['rounds'] - r['rounds_ok']} of {report['rounds']} rounds"
                        )
                row = _row(rows, x, variant, client)
                if row is None:
                    continue
                for peer in PEERS:
                    base = _row(rows, x, variant, peer)
                    if base is None:
                        continue
                    where = f"{axis}{tag} at {x:,}: {LABELS[client]} vs {LABELS[peer]}"
                    if axis == "producers":
                        for k, what in (
                            ("rss_per_producer_mb", "MB per producer"),
                            ("threads_per_producer", "threads per producer"),
                            ("idle_cpu_pct", "idle CPU %"),
                        ):
                            # the JVM's RSS can shrink as a producer is added (the collector
                            # gives memory back): no per-producer figure to compare with
                            if base[k] <= 0:
                                continue
                            if row[k] > base[k] * 1.1 and row[k] - base[k] > 0.05:
                                found.append(f"{where}: {what} {row[k]:.2f} vs {base[k]:.2f}")
                        continue
                    if row["msg_s"] < base["msg_s"]:
                        found.append(
                            f"{where}: {row['msg_s']:,.0f} vs {base['msg_s']:,.0f} msg/s "
                            f"({row['msg_s'] / base['msg_s']:.2f}x)"
                        )
                    if row["cpu_us"] > base["cpu_us"]:
                        found.append(
                            f"{where}: CPU per record {row['cpu_us']:.2f} vs "
                            f"{base['cpu_us']:.2f} us"
                        )
                    if axis == "latency":
                        for f, mine, theirs in zip(LATENCY_FRACTIONS, row["fixed"], base["fixed"]):
                            for k in ("lat_p50_ms", "lat_p99_ms", "lat_p999_ms"):
                                a, b = mine.get(k), theirs.get(k)
                                if a is not None and b is not None and a > 1.1 * b:
                                    found.append(
                                        f"{where} at {f:.0%} of max: {k[4:-3]} "
                                        f"{a:.2f} vs {b:.2f} ms"
                                    )
    return found


# -------------------------------------------------------------------- output


def _fmt(v: Any, spec: str = ",.0f") -> str:
    return "-" if v is None else format(v, spec)


def markdown(report: Dict[str, Any], rows: List[Dict[str, Any]]) -> str:
    axis = report["axis"]
    lines = []
    if axis == "producers":
        lines.append(
            "| producers | client | MB per producer | threads per producer | "
            "idle CPU % of a core | RSS MB, all | MB ÷ confluent | MB ÷ Java |"
        )
        lines.append("|--:|---|--:|--:|--:|--:|--:|--:|")
        for r in rows:
            if "error" in r:
                lines.append(f"| {r['x']:,} | {LABELS[r['client']]} | error: {r['error']} |")
                continue
            lines.append(
                f"| {r['x']:,} | {LABELS[r['client']]} | {r['rss_per_producer_mb']:.2f} | "
                f"{r['threads_per_producer']:.2f} | {r['idle_cpu_pct']:.2f} | "
                f"{r['rss_after_mb']:.0f} | {_fmt(r.get('rss_per_producer_mb/confluent'), '.2f')} "
                f"| {_fmt(r.get('rss_per_producer_mb/java'), '.2f')} |"
            )
        return "\n".join(lines)
    if axis == "latency":
        lines.append(
            "| client | max msg/s | load | msg/s | CPU µs/rec | p50 ms | p99 ms | "
            "p99.9 ms | p99 ÷ confluent | p99 ÷ Java |"
        )
        lines.append("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
        for r in rows:
            if "error" in r:
                lines.append(f"| {LABELS[r['client']]} | error: {r['error']} |")
                continue
            peers = {p: _row(rows, r["x"], r["variant"], p) for p in PEERS}
            for i, f in enumerate(r["fixed"]):
                ratios = []
                for p in PEERS:
                    base = peers[p]
                    mine, theirs = f["lat_p99_ms"], base["fixed"][i]["lat_p99_ms"] if base else None
                    ok = r["client"] in OURS and mine is not None and theirs
                    ratios.append(f"{mine / theirs:.2f}" if ok else "")
                lines.append(
                    f"| {LABELS[r['client']]} | {r['msg_s']:,.0f} | {f['fraction']:.0%} | "
                    f"{f['msg_s']:,.0f} | {f['cpu_us']:.2f} | {_fmt(f['lat_p50_ms'], '.2f')} | "
                    f"{_fmt(f['lat_p99_ms'], '.2f')} | {_fmt(f['lat_p999_ms'], '.2f')} | "
                    + " | ".join(ratios)
                    + " |"
                )
        return "\n".join(lines)
    first = "partitions" if axis == "partitions" else AXIS_X[axis].split(" (")[0]
    mb = axis == "size"
    lines.append(
        f"| {first} | client | msg/s | "
        + ("MB/s | " if mb else "")
        + "CPU µs/rec | peak RSS MB | p50 ms | p99 ms | msg/s ÷ confluent | ÷ Java "
        "| CPU ÷ confluent | ÷ Java |"
    )
    lines.append("|--:|---|--:|" + ("--:|" if mb else "") + "--:|--:|--:|--:|--:|--:|--:|--:|")
    for r in rows:
        x = f"{r['x']:,}" + (f" {r['variant']}" if r["variant"] else "")
        if r.get("rounds_ok", report["rounds"]) < report["rounds"]:
            x += f" ({r['rounds_ok']} of {report['rounds']} rounds)"
        if "error" in r:
            lines.append(f"| {x} | {LABELS[r['client']]} | error: {r['error']} |")
            continue
        lines.append(
            f"| {x} | {LABELS[r['client']]} | {r['msg_s']:,.0f} | "
            + (f"{r['mb_s']:,.1f} | " if mb else "")
            + f"{r['cpu_us']:.2f} | {r['rss_peak_mb']:.0f} | {_fmt(r['lat_p50_ms'], '.1f')} | "
            f"{_fmt(r['lat_p99_ms'], '.1f')} | "
            + " | ".join(
                _fmt(r.get(f"{k}/{p}"), ".2f") if r["client"] in OURS else ""
                for k in ("msg_s", "cpu_us")
                for p in PEERS
            )
            + " |"
        )
    return "\n".join(lines)


def plot(report: Dict[str, Any], rows: List[Dict[str, Any]], path: str) -> None:
    """One figure per axis, log-scaled x: a panel per figure, a line per client (dashed:
    unkeyed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    axis = report["axis"]
    if axis == "producers":
        panels = [
            ("rss_per_producer_mb", "RSS MB per producer (lower is better)"),
            ("threads_per_producer", "threads per producer"),
            ("idle_cpu_pct", "idle CPU, % of a core (lower is better)"),
        ]
    elif axis == "latency":
        panels = [
            ("lat_p50_ms", "p50 ms, send to ack"),
            ("lat_p99_ms", "p99 ms"),
            ("lat_p999_ms", "p99.9 ms"),
        ]
    else:
        panels = [
            ("msg_s", "messages per second (higher is better)"),
            (
                "mb_s" if axis == "size" else "rss_peak_mb",
                "MB/s (higher is better)" if axis == "size" else "peak RSS MB",
            ),
            ("cpu_us", "client CPU µs per record (lower is better)"),
            ("lat_p99_ms", "p99 ms, send to ack"),
        ]
    ncols = len(panels)
    fig, axes = plt.subplots(1, ncols, figsize=(4.0 * ncols, 3.6))
    for ax, (key, title) in zip(axes, panels):
        for client in report["clients"]:
            for variant in sorted({p["variant"] for p in report["points"]}):
                mine = [
                    r
                    for r in rows
                    if r["client"] == client and r["variant"] == variant and "error" not in r
                ]
                if axis == "latency":
                    if not mine:
                        continue
                    pts = [(f["fraction"] * 100, f[key]) for f in mine[0]["fixed"]]
                else:
                    pts = [(r["x"], r.get(key)) for r in mine]
                pts = [(x, y) for x, y in pts if y is not None]
                if not pts:
                    continue
                label = LABELS[client] + (f", {variant}" if variant else "")
                ax.plot(
                    *zip(*pts),
                    marker="o",
                    color=COLORS[client],
                    label=label,
                    linestyle="--" if variant == "unkeyed" else "-",
                )
        if key == "mb_s" and report.get("loopback_mb_s"):
            ax.axhline(report["loopback_mb_s"], color="black", linestyle=":", linewidth=1)
            ax.text(10, report["loopback_mb_s"], "loopback copy", fontsize=7, va="bottom")
        ax.set_xscale("log")
        # a tick at each point of the axis, labelled 6, 100, 1k, ...
        xs = (
            [f * 100 for f in LATENCY_FRACTIONS]
            if axis == "latency"
            else [p["x"] for p in report["points"]]
        )
        ax.set_xticks(sorted(set(xs)))
        ax.xaxis.set_minor_formatter(NullFormatter())
        if key in ("msg_s", "mb_s", "cpu_us", "lat_p50_ms", "lat_p99_ms", "lat_p999_ms"):
            ax.set_yscale("log")
            ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
            ax.yaxis.set_minor_formatter(NullFormatter())
        ax.set_title(title, fontsize=9)
        ax.set_xlabel(AXIS_X[axis], fontsize=8)
        ax.tick_params(labelsize=7)
        ax.yaxis.set_major_formatter(FuncFormatter(cp._short_number))
        ax.xaxis.set_major_formatter(FuncFormatter(cp._short_number))
        ax.grid(True, which="major", alpha=0.3)
    axes[0].legend(fontsize=7)
    load = report["load_average"]
    fig.suptitle(
        f"scaling: {axis}; {report['broker']}; {report['machine']}; medians of "
        f"{report['rounds']} rounds; load average {load['min']:.1f}-{load['max']:.1f}",
        fontsize=8,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--axis", choices=sorted(AXIS_X), help="required unless --report")
    ap.add_argument("--rounds", type=int, default=1, help="alternating rounds; medians printed")
    ap.add_argument(
        "--records",
        type=int,
        default=0,
        help="per point and client (default: 300,000, or 300 MB of values for large ones)",
    )
    ap.add_argument("--warmup", type=int, default=20_000, help="records sent before the clock")
    ap.add_argument("--clients", default=",".join(CLIENTS))
    ap.add_argument("--broker", choices=("tansu", "kafka"), default="tansu")
    ap.add_argument("--sample", type=int, default=16, help="every n-th record is timed")
    ap.add_argument("--max-seconds", type=float, default=10.0, help="a run stops sending then")
    ap.add_argument("--rate-seconds", type=float, default=3.0, help="each fixed-rate run")
    ap.add_argument("--idle", type=float, default=5.0, help="seconds idle (producers axis)")
    ap.add_argument("--points", help="only these x values of the axis (e.g. 6,100,1000)")
    ap.add_argument("--variants", help="partitions: keyed, unkeyed or both (the default)")
    ap.add_argument("--json", help="also write the report here")
    ap.add_argument("--plot", metavar="DIR", help="write scaling_<axis>.json and .png into DIR")
    ap.add_argument("--java-opts", default=cp.JAVA_OPTS, help="the JVM's options")
    ap.add_argument(
        "--report", metavar="JSON", help="no run: print (and --plot) a report written before"
    )
    args = ap.parse_args(argv)
    if not args.report and not args.axis:
        ap.error("--axis is required (or --report)")

    if args.report:
        with open(args.report) as fh:
            report = json.load(fh)
        args.axis = report["axis"]
        args.broker = "kafka" if report["broker"].startswith("Apache Kafka") else "tansu"
        git_before = report["git"]["before"]
    else:
        git_before = git_state()
        report = run_axis(args)
        report["git"] = {"before": git_before, "after": git_state()}
    rows = medians(report)
    report["medians"] = rows
    report["defects"] = defects(report, rows)
    load = report["load_average"]
    print(f"axis: {args.axis}; {report['broker']}; {report['machine']}")
    print(f"git: {git_before['head']} {git_before['status'] or '(clean)'}")
    print(
        f"load average (1 min) min / median / max: {load['min']:.2f} / {load['median']:.2f} / "
        f"{load['max']:.2f}"
    )
    if report["loopback_mb_s"]:
        print(f"loopback copy rate: {report['loopback_mb_s']:,.0f} MB/s")
    print(markdown(report, rows))
    print("defects:" if report["defects"] else "defects: none")
    for d in report["defects"]:
        print("  - " + d)
    suffix = "_kafka" if args.broker == "kafka" else ""
    if args.json and not args.report:
        with open(args.json, "w") as fh:
            json.dump(report, fh, indent=2)
    if args.plot:
        os.makedirs(args.plot, exist_ok=True)
        stem = os.path.join(args.plot, f"scaling_{args.axis}{suffix}")
        with open(stem + ".json", "w") as fh:
            json.dump(report, fh, indent=2)
            fh.write("\n")
        plot(report, rows, stem + ".png")
    return 0 if all("error" not in r for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
