"""Soak: one producer sends for minutes, in every style, while its RSS, threads and fds are sampled.

A fresh local broker; one KafkaProducer for the whole run. Rounds of four phases, each of
``--phase-records`` records (100-byte values, 1,000 keys, lz4 by default):

- ``callback``: ``send`` with one shared completion callback;
- ``dropped``: ``send``, the future dropped at once;
- ``kept``: ``send``, the futures kept in a window of ``--keep`` and checked as they leave it;
- ``send_many``: Arrow arrays of 10,000 records per call, the BatchFutures kept to the flush.

Every round ends with ``flush()`` and a check that every record of the round was acknowledged.
A sampler thread reads the process's RSS, thread count and open file descriptors from /proc
every ``--sample-s`` seconds. After the warm-up (the first ``--warmup`` of the run) nothing may
grow: the verdict line says ``steady`` when the last third's peak RSS is within ``--tolerance-mb``
of the middle third's and the threads and fds after warm-up never exceed their count at its end,
``GROWING`` otherwise. The RSS over time is drawn to ``--png`` (matplotlib).

    python benchmarks/soak.py [--minutes 5] [--png soak.png] [--buffer-memory 33554432]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import sys
import textwrap
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Deque, List, Optional, Tuple

DISTINCT_KEYS = 1000
SEND_MANY_CHUNK = 10_000
PHASES = ("callback", "dropped", "kept", "send_many")


@dataclass
class Sample:
    t: float
    rss_mb: float
    threads: int
    fds: int


@dataclass
class Soak:
    samples: List[Sample] = field(default_factory=list)
    phases: List[Tuple[float, str]] = field(default_factory=list)  # (start time, name)
    records: int = 0
    failures: List[str] = field(default_factory=list)


def _proc_status() -> Tuple[float, int]:
    rss_kb, threads = 0, 0
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                rss_kb = int(line.split()[1])
            elif line.startswith("Threads:"):
                threads = int(line.split()[1])
    return rss_kb / 1024, threads


def _sampler(soak: Soak, t0: float, every_s: float, stop: threading.Event) -> None:
    while not stop.is_set():
        rss, threads = _proc_status()
        fds = len(os.listdir("/proc/self/fd"))
        soak.samples.append(Sample(time.monotonic() - t0, rss, threads, fds))
        stop.wait(every_s)


def run(args: argparse.Namespace) -> Soak:
    import pyarrow as pa

    from cproducer import KafkaProducer
    from cproducer.localbroker import LocalBroker

    keys = [f"key-{i:06d}".encode() for i in range(DISTINCT_KEYS)]
    value = b"v" * args.value_size
    arrow_keys = pa.array([keys[i % DISTINCT_KEYS] for i in range(SEND_MANY_CHUNK)], pa.binary())
    arrow_values = pa.array([value] * SEND_MANY_CHUNK, pa.binary())
    n = args.phase_records
    soak = Soak()
    acked = [0]

    def on_completion(md: Any, exc: Optional[BaseException]) -> None:
        if exc is None:
            acked[0] += 1

    def phase(p: Any, name: str, t0: float) -> int:
        """Send one phase's records; returns how many must be acknowledged at the flush."""
        soak.phases.append((time.monotonic() - t0, name))
        send = p.send
        if name == "callback":
            for i in range(n):
                send(args.topic, value, keys[i % DISTINCT_KEYS], callback=on_completion)
            return n
        if name == "dropped":
            for i in range(n):
                send(args.topic, value, keys[i % DISTINCT_KEYS])
            return 0
        if name == "kept":
            window: Deque[Any] = collections.deque()
            for i in range(n):
                window.append(send(args.topic, value, keys[i % DISTINCT_KEYS]))
                if len(window) > args.keep:
                    window.popleft().get(timeout=60)  # raises if the record failed
            p.flush()
            for fut in window:
                fut.get(timeout=60)
            return 0
        futures = []
        sent = 0
        while sent < n:
            m = min(SEND_MANY_CHUNK, n - sent)
            futures.append(p.send_many(args.topic, arrow_values[:m], keys=arrow_keys[:m]))
            sent += m
        p.flush()
        for fut in futures:
            result = fut.get(timeout=60)
            if result.errors:
                soak.failures.append(f"send_many: {len(result.errors)} records failed")
        return 0

    with LocalBroker() as broker:
        broker.create_topic(args.topic, args.partitions)
        stop = threading.Event()
        t0 = time.monotonic()
        sampler = threading.Thread(target=_sampler, args=(soak, t0, args.sample_s, stop))
        sampler.start()
        try:
            with KafkaProducer(
                bootstrap_servers=broker.bootstrap_servers,
                compression_type=args.compression,
                linger_ms=5,
                buffer_memory=args.buffer_memory,
            ) as p:
                deadline = t0 + args.minutes * 60
                round_no = 0
                while time.monotonic() < deadline and not soak.failures:
                    for name in PHASES:
                        acked[0] = 0
                        expected = phase(p, name, t0)
                        p.flush()
                        soak.records += n
                        if acked[0] != expected:
                            soak.failures.append(
                                f"round {round_no} {name}: {acked[0]} of {expected} acknowledged"
                            )
                    round_no += 1
                soak.phases.append((time.monotonic() - t0, "close"))
        finally:
            stop.set()
            sampler.join()
    return soak


def verdict(soak: Soak, warmup: float, tolerance_mb: float) -> Tuple[bool, str]:
    end = soak.phases[-1][0] if soak.phases else 0.0
    after = [s for s in soak.samples if warmup * end <= s.t <= end]
    if len(after) < 6:
        return False, "verdict: TOO SHORT (fewer than 6 samples after warm-up)"
    third = len(after) // 3
    middle, last = after[third : 2 * third], after[2 * third :]
    mid_peak = max(s.rss_mb for s in middle)
    last_peak = max(s.rss_mb for s in last)
    first = after[0]
    grew_threads = max(s.threads for s in after) > first.threads
    grew_fds = max(s.fds for s in after) > first.fds
    steady = last_peak - mid_peak <= tolerance_mb and not grew_threads and not grew_fds
    steady = steady and not soak.failures
    rate = soak.records / end if end else 0.0
    text = (
        f"verdict: {'steady' if steady else 'GROWING'}: {soak.records:,} records in {end:.0f} s "
        f"({rate:,.0f}/s); RSS after warm-up {min(s.rss_mb for s in after):.1f}-"
        f"{max(s.rss_mb for s in after):.1f} MB (peak {mid_peak:.1f} MB in the middle third, "
        f"{last_peak:.1f} MB in the last); threads {first.threads}-"
        f"{max(s.threads for s in after)}, fds {first.fds}-{max(s.fds for s in after)}"
    )
    if soak.failures:
        text += f"; FAILED: {soak.failures[0]}"
    return steady, text


def draw(soak: Soak, path: str, title: str, warmup: float) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t = [s.t for s in soak.samples]
    fig, (ax, ax2) = plt.subplots(
        2, 1, figsize=(11, 6.5), sharex=True, gridspec_kw={"height_ratios": [3, 1]}
    )
    ax.plot(t, [s.rss_mb for s in soak.samples], color="tab:blue", linewidth=1)
    colors = {"callback": "#eef", "dropped": "#efe", "kept": "#fee", "send_many": "#ffd"}
    for (start, name), (stop, _next) in zip(soak.phases, soak.phases[1:]):
        ax.axvspan(start, stop, color=colors.get(name, "#fff"), linewidth=0)
    end = soak.phases[-1][0] if soak.phases else 0.0
    ax.axvline(warmup * end, color="grey", linestyle="--", linewidth=1)
    ax.set_ylabel("RSS (MB)")
    ax.set_ylim(bottom=0)
    ax.set_title(title, fontsize=9)
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in colors.values()]
    ax.legend(handles, list(colors), loc="lower right", fontsize=8, ncol=4)
    ax2.plot(t, [s.threads for s in soak.samples], label="threads")
    ax2.plot(t, [s.fds for s in soak.samples], label="open fds")
    ax2.set_xlabel("seconds")
    ax2.set_ylim(bottom=0)
    ax2.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=5.0)
    ap.add_argument("--phase-records", type=int, default=500_000)
    ap.add_argument("--keep", type=int, default=100_000, help="futures kept in the 'kept' phase")
    ap.add_argument("--value-size", type=int, default=100)
    ap.add_argument("--partitions", type=int, default=6)
    ap.add_argument("--compression", default="lz4")
    ap.add_argument("--buffer-memory", type=int, default=33554432)
    ap.add_argument("--sample-s", type=float, default=0.25)
    ap.add_argument("--warmup", type=float, default=0.2, help="the share of the run left out")
    ap.add_argument("--tolerance-mb", type=float, default=4.0)
    ap.add_argument("--png", default="soak.png")
    ap.add_argument("--json", help="also write the samples here")
    ap.add_argument("--topic", default=f"soak-{os.getpid()}")
    args = ap.parse_args(argv)
    soak = run(args)
    ok, text = verdict(soak, args.warmup, args.tolerance_mb)
    title = (
        f"cproducer soak: {args.value_size} B records, {args.compression}, buffer.memory "
        f"{args.buffer_memory / 2**20:.0f} MiB\n" + "\n".join(textwrap.wrap(text, 130))
    )
    draw(soak, args.png, title, args.warmup)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"samples": [s.__dict__ for s in soak.samples], "phases": soak.phases}, fh)
    print(f"RSS over time: {args.png}")
    print(text)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
