"""Cluster soak: one producer sends for ten minutes while the brokers of a 3-broker Apache Kafka
cluster are killed and started again in turn; nothing may be lost or duplicated, and the
producer's process may not grow.

An ``ApacheKafkaCluster(3)`` (KRaft, replication factor 3, ``min.insync.replicas=2``), one topic of
``--partitions`` partitions, one producer for the whole run with its idempotent defaults
(``tests/tools/seq_load.py``: record n carries ``seq=n`` and goes to partition n % partitions, at
``--rate`` records/s). Every ``--interval-s`` a broker is killed (SIGKILL), rotating 1, 2, 3; once
every partition has taken a record sent after the kill (the stall: the kill to the last
partition's first acknowledgement) it is started again on its data.

With ``--client cproducer`` (the default) and ``librdkafka`` the producer runs in this process,
which samples its RSS (``/proc/self/status`` VmRSS), threads (``/proc/self/task``) and open
descriptors (``/proc/self/fd``) every ``--sample-s`` seconds; ``java`` runs Java's KafkaProducer
in a JVM (``tests/java/SeqProducer.java``), reported for the records and the stalls only. The
outcomes of the records are kept in arrays allocated and touched before the run, so the
bookkeeping does not grow the process either.

At the end the topic is read back by librdkafka and by Java's KafkaConsumer: records sent,
acknowledged, failed, lost, duplicated, reordered. The process is judged as
``benchmarks/soak.py`` judges its single-broker soak (after the warm-up, the last third's peak RSS
within ``--tolerance-mb`` of the middle third's), except that threads and descriptors may rise up
to ``--allowance`` above their count at the end of the warm-up: a connection to a killed broker
closes and the one to its restart opens, a moment apart.

    python benchmarks/cluster_soak.py [--minutes 10] [--interval-s 60] [--client cproducer]
                                      [--rate 1000] [--json soak.json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
import uuid
from typing import Any, Dict, Iterable, Iterator, List, Optional, Tuple

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from benchmarks.soak import Sample, Soak, _sampler, verdict  # noqa: E402
from tests.integration.readback import read_back, read_back_java  # noqa: E402
from tests.tools.apache_kafka import ApacheKafkaCluster  # noqa: E402
from tests.tools.cluster_faults import client_config  # noqa: E402
from tests.tools.seq_load import CLIENTS, Ack, LoadResult, Verdict  # noqa: E402


class SentTimes:
    """``LoadResult.sent_at`` over a preallocated array: seq -> when send() took it (NaN: not
    sent). The loads set and delete items and the verdict reads them as a dict; sequence numbers
    beyond the array (a run longer than planned) go to a dict."""

    def __init__(self, capacity: int) -> None:
        self.at = np.full(capacity, np.nan)  # full(): every page touched now, not during the run
        self.extra: Dict[int, float] = {}
        self.count = 0

    def __setitem__(self, seq: int, t: float) -> None:
        if seq < len(self.at):
            if np.isnan(self.at[seq]):
                self.count += 1
            self.at[seq] = t
        else:
            self.count += seq not in self.extra
            self.extra[seq] = t

    def __delitem__(self, seq: int) -> None:
        if seq < len(self.at):
            if not np.isnan(self.at[seq]):
                self.count -= 1
            self.at[seq] = np.nan
        elif self.extra.pop(seq, None) is not None:
            self.count -= 1

    def __len__(self) -> int:
        return self.count

    def items(self) -> Iterator[Tuple[int, float]]:
        for seq in np.flatnonzero(~np.isnan(self.at)):
            yield int(seq), float(self.at[seq])
        yield from list(self.extra.items())


class CompactResult(LoadResult):
    """A ``LoadResult`` whose outcomes live in preallocated arrays while the load runs: the first
    acknowledgement of each record (time, partition, offset), errors and repeated completions
    aside. ``as_load_result()`` makes the ordinary one for the verdict, after the run."""

    def __init__(self, client: str, capacity: int) -> None:
        super().__init__(client)
        self.sent_at = SentTimes(capacity)  # type: ignore[assignment]
        self.ack_at = np.full(capacity, np.nan)
        self.ack_partition = np.full(capacity, -1, dtype=np.int32)
        self.ack_offset = np.full(capacity, -1, dtype=np.int64)
        self.completions = np.zeros(capacity, dtype=np.int8)
        self.errors_by_seq: Dict[int, str] = {}
        self.more: Dict[int, List[Ack]] = {}  # beyond capacity, and repeated completions

    def ack(self, seq: int, ack: Ack) -> None:
        with self.lock:
            if not self.acks:  # Load.start() waits for the first outcome here; one entry only
                self.acks[seq] = [ack]
            if seq >= len(self.ack_at) or self.completions[seq]:
                self.more.setdefault(seq, []).append(ack)
                if seq < len(self.ack_at):
                    self.completions[seq] = min(self.completions[seq] + 1, 100)
                return
            self.completions[seq] = 1
            self.ack_at[seq] = ack.at
            if ack.error is None:
                self.ack_partition[seq], self.ack_offset[seq] = ack.partition, ack.offset
            else:
                self.errors_by_seq[seq] = ack.error

    def first_acks_after(self, t: float, partitions: Iterable[int]) -> Dict[int, float]:
        """Per partition: when the first record sent after ``t`` was acknowledged (if one was)."""
        sent = self.sent_at.at  # type: ignore[attr-defined]
        with self.lock:
            ok = (sent > t) & (self.ack_partition >= 0)
            parts, at = self.ack_partition[ok], self.ack_at[ok]
        out = {}
        for p in partitions:
            mine = at[parts == p]
            if len(mine):
                out[p] = float(mine.min())
        return out

    def as_load_result(self) -> LoadResult:
        r = LoadResult(self.client)
        r.sent_at = dict(self.sent_at.items())
        for seq in np.flatnonzero(self.completions > 0):
            s = int(seq)
            error = self.errors_by_seq.get(s)
            r.acks[s] = [
                Ack(float(self.ack_at[s]), -1, -1, error)
                if error is not None
                else Ack(
                    float(self.ack_at[s]), int(self.ack_partition[s]), int(self.ack_offset[s]), None
                )
            ]
        for s, acks in self.more.items():
            r.acks.setdefault(s, []).extend(acks)
        r.refused = list(self.refused)
        return r


class Kill:
    def __init__(self, node: int, at: float, led: List[int]) -> None:
        self.node, self.at, self.led = node, at, led
        self.first_s: Optional[float] = None  # the kill to the first acknowledgement after it
        self.stall_s: Optional[float] = None  # ... to the last partition's first one
        self.led_stall_s: Optional[float] = None  # ... of the partitions it led
        self.restart_s: Optional[float] = None  # start_node() until every broker lists it


def kill_and_restart(
    cluster: ApacheKafkaCluster, result: CompactResult, topic: str, partitions: int, node: int,
    t0: float, timeout: float = 120.0,
) -> Kill:  # fmt: skip
    led = [p for p in range(partitions) if cluster.leader_of(topic, p) == node]
    kill = Kill(node, time.monotonic(), led)
    cluster.kill(node)
    deadline = kill.at + timeout
    firsts: Dict[int, float] = {}
    while time.monotonic() < deadline:
        firsts = result.first_acks_after(kill.at, range(partitions))
        if len(firsts) == partitions:
            break
        time.sleep(0.1)
    if firsts:
        kill.first_s = min(firsts.values()) - kill.at
    if len(firsts) == partitions:
        kill.stall_s = max(firsts.values()) - kill.at
        if led:
            kill.led_stall_s = max(firsts[p] for p in led) - kill.at
    started = time.monotonic()
    cluster.start_node(node, timeout=120)
    kill.restart_s = time.monotonic() - started
    print(
        f"  {started - t0:6.0f} s  broker {node} killed (led {led}): first ack after "
        f"{_s(kill.first_s)}, every partition after {_s(kill.stall_s)}; restarted in "
        f"{kill.restart_s:.1f} s",
        flush=True,
    )
    return kill


def _s(v: Optional[float]) -> str:
    return "-" if v is None else f"{v:.2f} s"


def judge(
    soak: Soak, warmup: float, tolerance_mb: float, allowance: int
) -> Tuple[bool, str, Dict[str, Any]]:
    """RSS as ``benchmarks/soak.py``'s ``verdict`` judges it; threads and fds never above their
    count at the end of the warm-up plus ``allowance``."""
    end = soak.phases[-1][0]
    after = [s for s in soak.samples if warmup * end <= s.t <= end]
    if len(after) < 6:
        return False, "verdict: TOO SHORT (fewer than 6 samples after warm-up)", {}
    base = after[0]
    # soak.verdict's own check is strict (no count above the warm-up's); give it the samples
    # with the counts within the allowance set to the warm-up's, so that it judges RSS (and the
    # failures) only, and judge the counts here
    capped = Soak(
        samples=[
            Sample(
                s.t,
                s.rss_mb,
                base.threads if s.threads <= base.threads + allowance else s.threads,
                base.fds if s.fds <= base.fds + allowance else s.fds,
            )
            for s in soak.samples
        ],
        phases=soak.phases,
        records=soak.records,
        failures=soak.failures,
    )
    ok, text = verdict(capped, warmup, tolerance_mb)
    figures: Dict[str, Any] = {
        "rss_start_mb": soak.samples[0].rss_mb,
        "rss_warm_mb": base.rss_mb,
        "rss_end_mb": after[-1].rss_mb,
        "rss_peak_mb": max(s.rss_mb for s in after),
        "threads": (base.threads, min(s.threads for s in after), max(s.threads for s in after)),
        "fds": (base.fds, min(s.fds for s in after), max(s.fds for s in after)),
    }
    text = text.split("; threads ")[0]
    text += (
        f"; RSS at start {figures['rss_start_mb']:.1f} MB, at the end of warm-up "
        f"{base.rss_mb:.1f} MB, at the end {after[-1].rss_mb:.1f} MB; threads "
        f"{base.threads} at the end of warm-up, {figures['threads'][1]}-{figures['threads'][2]} "
        f"after; fds {base.fds}, {figures['fds'][1]}-{figures['fds'][2]} after (allowance "
        f"+{allowance})"
    )
    if not ok:
        text = text.replace("verdict: steady", "verdict: GROWING", 1)
    return ok, text, figures


def run(args: argparse.Namespace) -> int:
    in_process = args.client != "java"
    capacity = int(args.rate * (args.minutes * 60 + 300) * 1.1) + 1000
    topic = f"cluster-soak-{uuid.uuid4().hex[:8]}"
    soak = Soak()
    kills: List[Kill] = []
    with ApacheKafkaCluster(3) as cluster:
        cluster.create_topic(topic, args.partitions)
        config = client_config(args.client, {})
        load = CLIENTS[args.client](
            cluster.bootstrap_servers, topic, args.partitions, args.rate, config
        )
        result = CompactResult(args.client, capacity)
        load.result = result
        print(
            f"{args.client}: {args.rate:g} records/s to {args.partitions} partitions for "
            f"{args.minutes:g} min, a broker killed every {args.interval_s:g} s; settings "
            f"{config or '(defaults)'}",
            flush=True,
        )
        stop = threading.Event()
        t0 = time.monotonic()
        sampler = threading.Thread(target=_sampler, args=(soak, t0, args.sample_s, stop))
        sampler.start()
        try:
            load.start()
            soak.phases.append((time.monotonic() - t0, "send"))
            deadline = t0 + args.minutes * 60
            victim = 0
            while True:
                next_kill = t0 + args.interval_s * (len(kills) + 1)
                if next_kill >= deadline - 10:
                    break
                time.sleep(max(0.0, next_kill - time.monotonic()))
                node = (victim % 3) + 1
                victim += 1
                kills.append(kill_and_restart(cluster, result, topic, args.partitions, node, t0))
            time.sleep(max(0.0, deadline - time.monotonic()))
            soak.phases.append((time.monotonic() - t0, "close"))
        finally:
            try:
                load.stop(300)
            finally:
                stop.set()
                sampler.join()
        full = result.as_load_result()
        sent = len(full.sent_at)
        soak.records = sent
        print(f"read back: {sent} records ...", flush=True)
        by_rdkafka = read_back(cluster.bootstrap_servers, topic, args.partitions, sent, 600, 2.0)
        v_rd = full.verdict(by_rdkafka, args.partitions)
        del by_rdkafka
        by_java = read_back_java(cluster.bootstrap_servers, topic, args.partitions, sent, 600)
        v_java = full.verdict(by_java, args.partitions)
        del by_java
    return report(args, soak, kills, full, v_rd, v_java, in_process)


def report(
    args: argparse.Namespace,
    soak: Soak,
    kills: List[Kill],
    full: LoadResult,
    v_rd: Verdict,
    v_java: Verdict,
    in_process: bool,
) -> int:
    print(f"\n{'reader':<12}{'sent':>9}{'acked':>9}{'failed':>8}{'unfin':>7}{'lost':>6}{'dup':>5}"
          f"{'reord':>7}{'wrong off':>11}")  # fmt: skip
    for reader, v in (("librdkafka", v_rd), ("Java", v_java)):
        print(
            f"{reader:<12}{v.sent:>9}{v.acked:>9}{v.failed:>8}{v.unfinished:>7}{v.lost:>6}"
            f"{v.duplicated:>5}{v.reordered:>7}{v.wrong_offsets:>11}"
        )
    stalls = [k.stall_s for k in kills if k.stall_s is not None]
    print(f"\n{'kill':>4}{'broker':>8}{'led':>14}{'first ack s':>13}{'all parts s':>13}"
          f"{'its parts s':>13}{'restart s':>11}")  # fmt: skip
    for i, k in enumerate(kills, 1):
        print(
            f"{i:>4}{k.node:>8}{str(k.led):>14}{_s(k.first_s):>13}{_s(k.stall_s):>13}"
            f"{_s(k.led_stall_s):>13}{_s(k.restart_s):>11}"
        )
    if stalls:
        print(
            f"stall (kill to every partition acknowledging again): min {min(stalls):.2f} s, "
            f"median {sorted(stalls)[len(stalls) // 2]:.2f} s, max {max(stalls):.2f} s"
        )
    clean = v_rd.clean and v_java.clean and not v_rd.failed and not full.refused
    clean = clean and len(stalls) == len(kills)
    ok = clean
    figures: Dict[str, Any] = {}
    if in_process:
        steady, text, figures = judge(soak, args.warmup, args.tolerance_mb, args.allowance)
        ok = ok and steady
        print(text)
    print(f"records: {'clean' if clean else 'NOT CLEAN'}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(
                {
                    "client": args.client,
                    "verdicts": {"librdkafka": v_rd._asdict(), "java": v_java._asdict()},
                    "kills": [k.__dict__ for k in kills],
                    "figures": figures,
                    "samples": [s.__dict__ for s in soak.samples],
                },
                fh,
            )
    return 0 if ok else 1


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--interval-s", type=float, default=60.0)
    ap.add_argument("--client", choices=sorted(CLIENTS), default="cproducer")
    ap.add_argument("--rate", type=float, default=1000.0, help="records/s")
    ap.add_argument("--partitions", type=int, default=6)
    ap.add_argument("--sample-s", type=float, default=2.0)
    ap.add_argument("--warmup", type=float, default=0.2, help="the share of the run left out")
    ap.add_argument("--tolerance-mb", type=float, default=4.0)
    ap.add_argument("--allowance", type=int, default=3, help="threads/fds above the warm-up's")
    ap.add_argument("--json", help="also write the figures and samples here")
    return run(ap.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
