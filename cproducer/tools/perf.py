"""cproducer-perf-test: Kafka's ``kafka-producer-perf-test.sh`` for cproducer.

Same flags and output lines as the Java tool (``ProducerPerformance``), plus ``--bootstrap-server``,
``--api send|send_many`` and ``--partitions``. Without ``--bootstrap-server`` it starts an embedded
:class:`~cproducer.tools.localbroker.LocalBroker` for the run and stops it at the end. Bad input or
a broker that cannot be reached is one line on stderr and exit status 1, as the Java tool's.

    python -m cproducer.perf --topic perf --num-records 1000000 --record-size 100 --throughput -1
"""

from __future__ import annotations

import argparse
import random
import sys
import threading
import time
import uuid
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from cproducer import __version__
from cproducer.errors import BrokerResponseError, KafkaError

#: Java's ProducerPerformance: a transactional id made up when none is given, and the age at which
#: a transaction is committed when only the id is
DEFAULT_TRANSACTION_ID_PREFIX = "performance-producer-"
DEFAULT_TRANSACTION_DURATION_MS = 3000


class Stats:
    """Java's ProducerPerformance.Stats: a window line every 5 s, the final line at the end.

    A completion callback only appends the record's latency (a list append: the callbacks run in
    the producer's I/O thread, and a slow one would slow the producer down); a reporter thread
    prints the window lines from the list, and the percentiles come from it at the end.
    """

    def __init__(self, avg_record_size: float, reporting_interval_ms: int = 5000) -> None:
        self.start = time.monotonic()
        self.avg_record_size = avg_record_size
        self.latencies: List[int] = []
        self.record = self.latencies.append  # the per-record hot path
        self.errors = 0
        self.first_error: Optional[BaseException] = None
        self._lock = threading.Lock()
        self.interval = reporting_interval_ms / 1000.0
        self._stop = threading.Event()
        self._reporter = threading.Thread(target=self._report, name="perf-stats", daemon=True)
        self._reporter.start()

    def failed(self, exc: BaseException) -> None:
        with self._lock:
            self.errors += 1
            if self.first_error is None:
                self.first_error = exc

    def record_many(self, latency_ms: int, count: int) -> None:
        self.latencies.extend([latency_ms] * count)

    def _report(self) -> None:
        last_index, last_time = 0, self.start
        while not self._stop.wait(self.interval):
            now, index = time.monotonic(), len(self.latencies)
            window = self.latencies[last_index:index]
            elapsed = max(now - last_time, 1e-9)
            if window:
                n = len(window)
                print(
                    f"{n} records sent, {n / elapsed:.1f} records/sec "
                    f"({n * self.avg_record_size / elapsed / 1024 / 1024:.2f} MB/sec), "
                    f"{sum(window) / n:.1f} ms avg latency, {float(max(window)):.1f} ms max "
                    "latency.",
                    flush=True,
                )
            last_index, last_time = index, now

    def summary(self) -> Dict[str, float]:
        self._stop.set()
        elapsed = max(time.monotonic() - self.start, 1e-9)
        lat = np.asarray(self.latencies, dtype=np.int64)
        count = len(lat)
        srt = np.sort(lat) if count else np.zeros(1, np.int64)

        def pct(p: float) -> int:
            return int(srt[min(int(p * len(srt)), len(srt) - 1)])

        return {
            "records": count,
            "records_per_sec": count / elapsed,
            "mb_per_sec": count * self.avg_record_size / elapsed / 1024 / 1024,
            "avg_latency_ms": float(lat.mean()) if count else 0.0,
            "max_latency_ms": float(lat.max()) if count else 0.0,
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
        if self.errors:
            first = self.first_error
            # a broker error's str already names its class and code
            named = (
                first
                if isinstance(first, BrokerResponseError)
                else f"{type(first).__name__}: {first}"
            )
            print(f"{self.errors} records failed; the first: {named}", flush=True)
        s["errors"] = self.errors
        return s


class ThroughputThrottler:
    """Java's ThroughputThrottler (as ProducerPerformance uses it): after each record, if the rate
    so far is over the target, the sleep owed (1 / target per record) accumulates, and is slept
    once it reaches 2 ms.

    Records therefore leave in bursts of about 2 ms worth, as Java's tool sends them. The bursts
    matter beyond the rate: with linger.ms=0 a burst lands in one batch of the sticky partition,
    and the legacy partitioner moves on at each new batch, so a pacing that sleeps after every
    record or two gives a slow broker's partitions a larger share than Java's tool does.
    """

    MIN_SLEEP_S = 0.002

    def __init__(self, target_per_sec: float, start: float) -> None:
        self.target = target_per_sec
        self.start = start
        self.sleep_time = 1.0 / target_per_sec if target_per_sec > 0 else float("inf")
        self.deficit = 0.0

    def should_throttle(self, amount_so_far: int, send_start: float) -> bool:
        """Whether the rate up to the record sent at ``send_start`` is over the target."""
        elapsed = send_start - self.start
        return self.target > 0 and elapsed > 0 and amount_so_far / elapsed > self.target

    def throttle(self, records: int = 1) -> None:
        self.deficit += records * self.sleep_time
        if self.deficit >= self.MIN_SLEEP_S:
            time.sleep(self.deficit)
            self.deficit = 0.0


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
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
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
    p.add_argument(
        "--transactional-id",
        help="run in transactions with this id (over transactional.id in the properties)",
    )
    p.add_argument(
        "--transaction-duration-ms",
        type=int,
        help="commit each transaction once it is this old (default 3000 when transactions are on; "
        "given alone, the id is performance-producer-<uuid>)",
    )
    return p


class Transactions:
    """Java's ProducerPerformance transactions: begin before a record when none is open, commit
    after a record once the transaction is ``duration_ms`` old, commit the last one at the end."""

    def __init__(self, producer: Any, duration_ms: Optional[int]) -> None:
        self.producer = producer
        self.duration_s = None if duration_ms is None else duration_ms / 1000.0
        self.started: Optional[float] = None
        if self.duration_s is not None:
            producer.init_transactions()

    def before(self) -> None:
        if self.duration_s is not None and self.started is None:
            self.producer.begin_transaction()
            self.started = time.monotonic()

    def after(self) -> None:
        if self.started is None or self.duration_s is None:
            return
        if time.monotonic() - self.started >= self.duration_s:
            self.producer.commit_transaction()
            self.started = None

    def end(self) -> None:
        if self.started is not None:
            self.producer.commit_transaction()
            self.started = None


def _transactions_setting(args: argparse.Namespace, props: Dict[str, Any]) -> Optional[int]:
    """Java's rule: transactions are on when --transaction-duration-ms, --transactional-id or a
    transactional.id in the properties is given; returns the duration (None: off)."""
    duration = args.transaction_duration_ms
    if duration is None and args.transactional_id is None and "transactional.id" not in props:
        return None
    props["transactional.id"] = (
        args.transactional_id
        or props.get("transactional.id")
        or f"{DEFAULT_TRANSACTION_ID_PREFIX}{uuid.uuid4()}"
    )
    return DEFAULT_TRANSACTION_DURATION_MS if duration is None else duration


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
    from cproducer.tools.localbroker import LocalBroker

    props: Dict[str, Any] = {}
    if args.producer_config:
        props.update(_read_properties(args.producer_config))
    props.update(_parse_props(args.producer_props))
    duration_ms = _transactions_setting(args, props)
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
            try:
                _ensure_topic(bootstrap, args.topic, args.partitions)
            except OSError as exc:
                raise OSError(
                    exc.errno, f"cannot reach {bootstrap}: {exc.strerror or exc}"
                ) from exc
        payloads = _payloads(args)
        producer = KafkaProducer(props)
        try:
            txn = Transactions(producer, duration_ms)
            stats = Stats(sum(len(p) for p in payloads) / len(payloads))
            if args.api == "send":
                _run_send(producer, args, payloads, stats, txn)
            else:
                _run_send_many(producer, args, payloads, stats, txn)
            txn.end()
            producer.flush()
            summary = stats.print_total()
            if args.print_metrics:
                _print_metrics(producer.metrics(), producer.client_id)
        finally:
            producer.close()
        return summary
    finally:
        if broker is not None:
            broker.stop()


def _print_metrics(groups: Dict[str, Dict[str, float]], client_id: str) -> None:
    """Java's ``--print-metrics`` table: ``group:name:{tags}`` padded, then the value with three
    decimals. metrics() names a node's or a topic's group ``<group>.<node or topic>``: that
    part goes back into the tags, where Java keeps it."""
    rows = []
    for group, metrics in groups.items():
        base, _, tag = group.partition(".")
        if base == "kafka-metrics-count":
            tags = "{}"
        elif tag:
            key = "node-id" if base.endswith("node-metrics") else "topic"
            tags = f"{{client-id={client_id}, {key}={tag}}}"
        else:
            tags = f"{{client-id={client_id}}}"
        for name, value in metrics.items():
            rows.append((f"{base}:{name}:{tags}", value))
    width = max((len(label) for label, _ in rows), default=0)
    for label, value in sorted(rows):
        print(f"{label:<{width}} : {value:.3f}")


def _ensure_topic(bootstrap: str, topic: str, partitions: int) -> None:
    from cproducer.tools.localbroker import create_topic

    create_topic(bootstrap, topic, partitions)


def _run_send(
    producer: Any,
    args: argparse.Namespace,
    payloads: List[bytes],
    stats: Stats,
    txn: Optional[Transactions] = None,
) -> None:
    txn = txn or Transactions(producer, None)
    topic = args.topic
    n = args.num_records
    throttler = ThroughputThrottler(args.throughput, time.monotonic())
    npay = len(payloads)
    send = producer.send
    record = stats.record
    failed = stats.failed
    wall = time.time
    throttled = throttler.target > 0

    # One callback for every record: a closure per record (Java's PerfCallback) would keep ~300k
    # function objects alive for the cyclic GC to walk again and again (it took 70% of this
    # thread). The latency runs from the record's timestamp, which send() takes from the same
    # wall clock (CreateTime topics; with LogAppendTime it would start at the broker's append).
    def on_completion(md: Any, exc: Any) -> None:
        if exc is None:
            record(int(wall() * 1000) - md.timestamp)
        else:
            failed(exc)

    # as ProducerPerformance: the rate is judged by the records before this one (i) and the time
    # this one's send() began
    now = time.monotonic
    if txn.duration_s is not None:
        for i in range(n):
            send_start = now()
            txn.before()
            send(topic, payloads[i % npay], callback=on_completion)
            txn.after()
            if throttled and throttler.should_throttle(i, send_start):
                throttler.throttle()
        return
    if throttled:
        for i in range(n):
            send_start = now()
            send(topic, payloads[i % npay], callback=on_completion)
            if throttler.should_throttle(i, send_start):
                throttler.throttle()
        return
    for i in range(n):
        send(topic, payloads[i % npay], callback=on_completion)


def _run_send_many(
    producer: Any,
    args: argparse.Namespace,
    payloads: List[bytes],
    stats: Stats,
    txn: Optional[Transactions] = None,
) -> None:
    txn = txn or Transactions(producer, None)
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
        txn.before()
        fut = producer.send_many(topic, values)

        def on_done(result: Any, start: float = start, m: int = m) -> None:
            stats.record_many(int((time.monotonic() - start) * 1000), m - len(result.errors))
            for exc in result.errors.values():
                stats.failed(exc)

        fut.add_callback(on_done)
        txn.after()
        if throttler.should_throttle(sent, start):
            throttler.throttle(m)
        sent += m


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.transaction_duration_ms is not None and args.transaction_duration_ms <= 0:
        parser.error("--transaction-duration-ms should be greater than zero")
    try:
        run(args)
    except (KafkaError, OSError, ValueError) as exc:
        # what the user must fix (a property, an address, a broker): one line, not a traceback
        print(f"{parser.prog}: error: {_one_line(exc)}", file=sys.stderr, flush=True)
        return 1
    except KeyboardInterrupt:
        return 130
    return 0


def _one_line(exc: BaseException) -> str:
    if isinstance(exc, BrokerResponseError):
        return str(exc)  # already names its class and code
    if isinstance(exc, OSError) and exc.strerror:
        where = f" ({exc.filename})" if exc.filename else ""
        return f"{exc.strerror}{where}"
    return f"{type(exc).__name__}: {exc}"


if __name__ == "__main__":
    sys.exit(main())
