"""Every cluster fault of the tests (tests/tools/cluster_faults.py and its fault modules) with
cproducer, librdkafka and Java's producer side by side, on a 3-broker Apache Kafka cluster (KRaft,
replication factor 3, min.insync.replicas=2).

Each client sends numbered records (a ``seq`` header) at the fault's rate with its idempotent
defaults (librdkafka asked for ``enable.idempotence=true``, its default being off); the fault
breaks the cluster and puts it back; the topic is read back by librdkafka and by Java's
KafkaConsumer. One row per fault and client: records sent, acknowledged, failed, lost
(acknowledged but not in the topic, or never completed), duplicated, reordered, and the stall
(the fault to the first acknowledgement of a record sent after it), the median over ``--runs``
(the clients alternate within each run). Faults that need other broker settings, or relays in
front of the brokers (tests/tools/kafka_front.py), get a cluster of their own.

    python benchmarks/cluster_faults.py [--faults leader-killed,...] [--clients cproducer,java]
                                        [--runs 1] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from typing import Any, Dict, List, Tuple

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from tests.tools.apache_kafka import ApacheKafkaCluster  # noqa: E402
from tests.tools.cluster_faults import FaultRun, load_all, run_fault  # noqa: E402
from tests.tools.kafka_front import RelayedCluster  # noqa: E402

CLIENTS = ["cproducer", "librdkafka", "java"]


def _row(fault: str, client: str, runs: List[FaultRun]) -> Dict[str, Any]:
    def worst(field: str) -> int:
        return max(max(getattr(r.verdict, field), getattr(r.java_verdict, field)) for r in runs)

    stalls = [r.stall_s for r in runs if r.stall_s is not None]
    return {
        "fault": fault,
        "client": client,
        "runs": len(runs),
        "sent": int(statistics.median(r.verdict.sent for r in runs)),
        "acked": int(statistics.median(r.verdict.acked for r in runs)),
        "failed": int(statistics.median(r.verdict.failed for r in runs)),
        "lost": max(worst("lost"), worst("unfinished")),
        "duplicated": worst("duplicated"),
        "reordered": worst("reordered"),
        "failed_but_written": worst("failed_but_written"),
        "stall_s": statistics.median(stalls) if stalls else None,
        "stalls_s": stalls,
        "measured": [
            {k: v for k, v in r.measured.items() if isinstance(v, (int, float, str, type(None)))}
            for r in runs
        ],
    }


def _print(rows: List[Dict[str, Any]]) -> None:
    print(
        f"\n{'fault':<28}{'client':<12}{'sent':>8}{'acked':>8}{'failed':>8}{'lost':>6}{'dup':>5}"
        f"{'reord':>7}{'stall s':>9}"
    )
    for r in rows:
        stall = "-" if r["stall_s"] is None else f"{r['stall_s']:.2f}"
        print(
            f"{r['fault']:<28}{r['client']:<12}{r['sent']:>8}{r['acked']:>8}{r['failed']:>8}"
            f"{r['lost']:>6}{r['duplicated']:>5}{r['reordered']:>7}{stall:>9}"
        )


def main(argv: List[str] | None = None) -> int:
    faults = load_all()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--faults", default=",".join(faults), help=f"of: {', '.join(faults)}")
    ap.add_argument("--clients", default=",".join(CLIENTS))
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--json", help="write the rows here")
    args = ap.parse_args(argv)
    names = [f for f in args.faults.split(",") if f]
    clients = [c for c in args.clients.split(",") if c]
    unknown = [f for f in names if f not in faults]
    if unknown:
        ap.error(f"unknown faults {unknown}; known: {sorted(faults)}")
    # faults grouped by the cluster they need (relayed or not, broker settings): one per group
    groups: Dict[Tuple[bool, Tuple[Tuple[str, str], ...]], List[str]] = {}
    for name in names:
        f = faults[name]
        groups.setdefault((f.relayed, tuple(sorted(f.cluster_properties.items()))), []).append(name)
    results: Dict[Tuple[str, str], List[FaultRun]] = {}
    for (relayed, props), group in groups.items():
        kind = RelayedCluster if relayed else ApacheKafkaCluster
        with kind(3, properties=dict(props)) as cluster:
            for name in group:
                print(f"== {name}: {faults[name].description}", flush=True)
                for i in range(args.runs):
                    # alternate the clients' order from run to run
                    order = clients if i % 2 == 0 else clients[::-1]
                    for client in [
                        c for c in order if c in getattr(faults[name].runner, "clients", order)
                    ]:
                        run = run_fault(cluster, name, client)
                        results.setdefault((name, client), []).append(run)
                        extra = {
                            k: (round(v, 2) if isinstance(v, float) else v)
                            for k, v in run.measured.items()
                            if isinstance(v, (int, float, str))
                        }
                        clean = run.verdict.clean and run.java_verdict.clean
                        print(
                            f"   {client:<11} run {i + 1}: {run.verdict.sent} sent, "
                            f"{run.verdict.failed} failed, clean={clean} {extra} "
                            f"({run.seconds:.0f} s)",
                            flush=True,
                        )
    rows = [_row(n, c, results[(n, c)]) for n in names for c in clients if (n, c) in results]
    _print(rows)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0 if all(r["lost"] == r["duplicated"] == r["reordered"] == 0 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
