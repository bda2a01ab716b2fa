"""cproducer-perf-test: Kafka's ``kafka-producer-perf-test.sh`` for cproducer.

Same flags and output lines as the Java tool (``ProducerPerformance``), plus ``--bootstrap-server``,
``--api send|send_many`` and ``--partitions``. Without ``--bootstrap-server`` it starts an embedded
:class:`~cproducer.localbroker.LocalBroker` for the run and stops it at the end.

    python -m cproducer.perf --topic perf --num-records 1000000 --record-size 100 --throughput -1
"""

from __future__ import annotations

import argparse
import random
import sys
import threading
import time
from typing import Any, Dict, List, Optional, Sequence

import numpy as np


class Stats:
    """Java's ProducerPerformance.Stats: a window line every 5 s, the final line at the end."""

    def __init__(self, num_records: int, reporting_interval_ms: int = 5000) -> None:
        self.start = time.monotonic()
        self.window_start = self.start
        self.latencies = np.zeros(max(num_records, 1), dtype=np.int32)
        self.index = 0
        self.count = 0
        self.bytes = 0
        self.max_latency = 0
        self.total_latency = 0
        self.window_count = 0
        self.window_max_latency = 0
        self.window_total_latency = 0
        self.window_bytes = 0
        self.reporting_interval = reporting_interval_ms / 1000.0
        self.lock = threading.Lock()

    def record(self, latency_ms: int, nbytes: int, count: int = 1) -> None:
        with self.lock:
            self.count += count
            self.bytes += nbytes
            self.total_latency += latency_ms * count
            self.max_latency = max(self.max_latency, latency_ms)
            self.window_count += count
            self.window_bytes += nbytes
            self.window_total_latency += latency_ms * count
            self.window_max_latency = max(self.window_max_latency, latency_ms)
            end = min(self.index + count, len(self.latencies))
            self.latencies[self.index : end] = latency_ms
            self.index = end
            now = time.monotonic()
            if now - self.window_start >= self.reporting_interval:
                self.print_window(now)
                self.new_window(now)

    def print_window(self, now: float) -> None:
        elapsed = max(now - self.window_start, 1e-9)
        rate = self.window_count / elapsed
        mb = self.window_bytes / elapsed / 1024 / 1024
        avg = self.window_total_latency / max(self.window_count, 1)
        print(
            f"{self.window_count} records sent, {rate:.1f} records/sec ({mb:.2f} MB/sec), "
            f"{avg:.1f} ms avg latency, {float(self.window_max_latency):.1f} ms max latency.",
            flush=True,
        )

    def new_window(self, now: float) -> None:
        self.window_start = now
        self.window_count = 0
        self.window_max_latency = 0
        self.window_total_latency = 0
        self.window_bytes = 0

    def summary(self) -> Dict[str, float]:
        elapsed = max(time.monotonic() - self.start, 1e-9)
        lat = np.sort(self.latencies[: self.index]) if self.index else np.zeros(1, np.int32)

        def pct(p: float) -> int:
            return int(lat[min(int(p * len(lat)), len(lat) - 1)])

        return {
            "records": self.count,
            "records_per_sec": self.count / elapsed,
            "mb_per_sec": self.bytes / elapsed / 1024 / 1024,
            "avg_latency_ms": self.total_latency / max(self.count, 1),
            "max_latency_ms": float(self.max_latency),
            "p50": pct(0.5),
            "p95": pct(0.95),
            "p99": pct(0.99),
            "p999": pct(0.999),
            "elapsed_s": elapsed,
        }

    def print_total(self) -> Dict[str, float]:
        s = self.summary()
        print(
            f"{int(s['records'])} records sent, {s['records_per_sec']:f} records/sec "
            f"({s['mb_per_sec']:.2f} MB/sec), {s['avg_latency_ms']:.2f} ms avg latency, "
            f"{s['max_latency_ms']:.2f} ms max latency, {s['p50']} ms 50th, {s['p95']} ms 95th, "
            f"{s['p99']} ms 99th, {s['p999']} ms 99.9th.",
            flush=True,
        )
        return s


class ThroughputThrottler:
    """Java's ThroughputThrottler: sleep so that at most ``target`` records/s go out."""

    def __init__(self, target_per_sec: float, start: float) -> None:
        self.target = target_per_sec
        self.start = start

    def throttle(self, sent: int) -> None:
        if self.target <= 0:
            return
        ahead = sent / self.target - (time.monotonic() - self.start)
        if ahead > 0.001:
            time.sleep(ahead)


def _parse_props(items: Sequence[str]) -> Dict[str, str]:
    out: Dict[str, str] = {}
    for item in items:
        if "=" not in item:
            raise SystemExit(f"--producer-props: expected key=value, got {item!r}")
        k, v = item.split("=", 1)
        out[k.strip()] = v.strip()
    return out


def _read_properties(path: str) -> Dict[str, str]:
    out: Dict[str, str] = {}
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            line = line.strip()
            if not line or line.startswith(("#", "!")):
                continue
            sep = min((i for i in (line.find("="), line.find(":")) if i >= 0), default=-1)
            if sep < 0:
                raise SystemExit(f"--producer.config: cannot parse line {line!r}")
            out[line[:sep].strip()] = line[sep + 1 :].strip()
    return out


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="cproducer-perf-test",
        description="Producer performance test (the flags of kafka-producer-perf-test.sh).",
    )
    p.add_argument("--topic", default="perf-test", help="topic to produce to")
    p.add_argument("--num-records", type=int, default=1_000_000)
    size = p.add_mutually_exclusive_group()
    size.add_argument("--record-size", type=int, help="bytes per record (random A-Z payload)")
    size.add_argument("--payload-file", help="file of payloads, split by --payload-delimiter")
    p.add_argument("--payload-delimiter", default="\\n")
    p.add_argument("--throughput", type=float, default=-1, help="records/s cap; -1 = unthrottled")
    p.add_argument("--producer-props", nargs="*", default=[], metavar="KEY=VALUE")
    p.add_argument("--producer.config", dest="producer_config", help="properties file")
    p.add_argument("--print-metrics", action="store_true")
    p.add_argument("--bootstrap-server", help="default: start an embedded local broker")
    p.add_argument("--api", choices=("send", "send_many"), default="send")
    p.add_argument("--partitions", type=int, default=6, help="partitions if the topic is new")
    p.add_argument(
        "--chunk-size",
        type=int,
        default=10_000,
        help="records per send_many call (--api send_many)",
    )
    return p


def _payloads(args: argparse.Namespace) -> List[bytes]:
    if args.payload_file:
        delim = args.payload_delimiter.encode().decode("unicode_escape").encode()
        with open(args.payload_file, "rb") as fh:
            items = [x for x in fh.read().split(delim) if x]
        if not items:
            raise SystemExit(f"--payload-file {args.payload_file}: no payloads")
        return items
    size = args.record_size if args.record_size is not None else 100
    rnd = random.Random(0)
    return [bytes(rnd.randrange(65, 91) for _ in range(size))]


def run(args: argparse.Namespace) -> Dict[str, float]:
    from cproducer import KafkaProducer
    from cproducer.localbroker import LocalBroker

    props: Dict[str, Any] = {}
    if args.producer_config:
        props.update(_read_properties(args.producer_config))
    props.update(_parse_props(args.producer_props))
    broker: Optional[LocalBroker] = None
    bootstrap = args.bootstrap_server or props.get("bootstrap.servers")
    if not bootstrap:
        broker = LocalBroker()
        broker.start()
        bootstrap = broker.bootstrap_servers
        print(f"No --bootstrap-server given: started an embedded local broker at {bootstrap}.")
    props["bootstrap.servers"] = bootstrap
    try:
        if broker is not None:
            broker.create_topic(args.topic, args.partitions)
        else:
            _ensure_topic(bootstrap, args.topic, args.partitions)
        payloads = _payloads(args)
        producer = KafkaProducer(props)
        try:
            stats = Stats(args.num_records)
            if args.api == "send":
                _run_send(producer, args, payloads, stats)
            else:
                _run_send_many(producer, args, payloads, stats)
            producer.flush()
            summary = stats.print_total()
            if args.print_metrics:
                for name, value in sorted(producer.metrics().items()):
                    print(f"{name:<60} : {value}")
        finally:
            producer.close()
        return summary
    finally:
        if broker is not None:
            broker.stop()


def _ensure_topic(bootstrap: str, topic: str, partitions: int) -> None:
    from cproducer.localbroker import create_topic

    create_topic(bootstrap, topic, partitions)


def _run_send(producer: Any, args: argparse.Namespace, payloads: List[bytes], stats: Stats) -> None:
    topic = args.topic
    n = args.num_records
    monotonic = time.monotonic
    throttler = ThroughputThrottler(args.throughput, monotonic())
    npay = len(payloads)
    send = producer.send
    record = stats.record
    for i in range(n):
        value = payloads[i % npay]
        start = monotonic()
        size = len(value)

        def on_completion(md: Any, exc: Any, start: float = start, size: int = size) -> None:
            record(int((monotonic() - start) * 1000), size)

        send(topic, value, callback=on_completion)
        if args.throughput > 0:
            throttler.throttle(i + 1)


def _run_send_many(
    producer: Any, args: argparse.Namespace, payloads: List[bytes], stats: Stats
) -> None:
    topic = args.topic
    n = args.num_records
    chunk = max(1, args.chunk_size)
    throttler = ThroughputThrottler(args.throughput, time.monotonic())
    values_all = [payloads[i % len(payloads)] for i in range(min(n, chunk))]
    sent = 0
    while sent < n:
        m = min(chunk, n - sent)
        values = values_all[:m]
        start = time.monotonic()
        nbytes = sum(len(v) for v in values)
        fut = producer.send_many(topic, values)

        def on_done(result: Any, start: float = start, m: int = m, nbytes: int = nbytes) -> None:
            stats.record(int((time.monotonic() - start) * 1000), nbytes, m)

        fut.add_callback(on_done)
        sent += m
        if args.throughput > 0:
            throttler.throttle(sent)


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    run(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
