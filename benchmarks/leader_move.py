"""A partition's leader moves while records stream to it (KIP-951): how many Metadata requests
the producer makes and how long the partition stalls, with Produce up to v9 (no leader hints)
and up to v11 (NOT_LEADER_OR_FOLLOWER carries the new leader and its endpoint).

One Tansu behind a VirtualCluster of 3 virtual nodes (tests/tools/virtual_cluster.py; partition
p led by node p % 3). Each run: a producer sends --rate records/s, keyed by nothing, to the 3
partitions in turn; after --before-s seconds partition 1 moves from node 1 to node 2; the run
goes on for --after-s seconds. Reported per run, from the move on:
- "metadata": Metadata requests the proxy saw;
- "not leader": NOT_LEADER_OR_FOLLOWER answers;
- "recovery ms": from the first NOT_LEADER_OR_FOLLOWER answer for partition 1 (when the proxy
  wrote it to the client) to the first Produce request for it that its new leader took;
- "p1 max ms": the longest send-to-acknowledgement time of a partition-1 record sent after the
  move.
--stale-metadata: the brokers' Metadata keeps naming the old leader (a lagging metadata cache).
librdkafka (confluent-kafka), which implements KIP-951, is measured the same way for reference.

    python benchmarks/leader_move.py [--runs 3] [--rate 5000] [--stale-metadata] [--versions 11]

(With --stale-metadata and Produce v9 no client recovers: its records time out after
delivery.timeout.ms, 2 minutes by default; tests/integration/test_leader_hints.py shows that.)
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time
from typing import Any, Dict, List, Optional

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from confluent_kafka import Producer as ConfluentProducer  # noqa: E402

from cproducer import KafkaProducer  # noqa: E402
from cproducer.localbroker import LocalBroker  # noqa: E402
from tests.tools.virtual_cluster import VirtualCluster  # noqa: E402

MOVED = 1


def one_run(
    kind: str,
    broker: LocalBroker,
    topic: str,
    produce_version: int,
    rate: int,
    before_s: float,
    after_s: float,
    stale: bool,
) -> Dict[str, float]:
    latencies: List[float] = []  # partition-1 records sent after the move
    failures = [0]
    lock = threading.Lock()
    moved_at = [float("inf")]

    def done(sent: float, partition: int, ok: bool) -> None:
        now = time.monotonic()
        with lock:
            if not ok:
                failures[0] += 1
            elif partition == MOVED and sent >= moved_at[0]:
                latencies.append((now - sent) * 1000)

    with VirtualCluster(broker.bootstrap_servers, 3, max_produce_version=produce_version) as vc:
        producer: Any
        if kind == "cproducer":
            producer = KafkaProducer(bootstrap_servers=vc.bootstrap_servers)
        else:
            producer = ConfluentProducer({"bootstrap.servers": vc.bootstrap_servers})
        start = time.monotonic()
        i = 0
        metadata_at_move: Optional[int] = None
        not_leader_at_move = 0
        while True:
            now = time.monotonic()
            if now - start >= before_s + after_s:
                break
            if metadata_at_move is None and now - start >= before_s:
                metadata_at_move = sum(vc.metadata_requests.values())
                not_leader_at_move = vc.not_leader_answers
                if stale:
                    vc.freeze_metadata()
                moved_at[0] = time.monotonic()
                vc.move_leader(MOVED, 2)
            due = int((now - start) * rate)
            while i < due:
                partition = i % 3
                sent = time.monotonic()
                if kind == "cproducer":

                    def cb(md: Any, exc: Any, sent: float = sent, p: int = partition) -> None:
                        done(sent, p, exc is None)

                    producer.send(topic, b"x" * 100, partition=partition, callback=cb)
                else:

                    def ck(err: Any, msg: Any, sent: float = sent, p: int = partition) -> None:
                        done(sent, p, err is None)

                    producer.produce(topic, b"x" * 100, partition=partition, callback=ck)
                i += 1
            if kind != "cproducer":
                producer.poll(0)
            time.sleep(0.001)
        producer.flush(30)
        if kind == "cproducer":
            producer.close()
        recovery = vc.first_accepted.get(MOVED, float("nan")) - vc.first_not_leader.get(
            MOVED, float("nan")
        )
        return {
            "metadata": sum(vc.metadata_requests.values()) - (metadata_at_move or 0),
            "not leader": vc.not_leader_answers - not_leader_at_move,
            "recovery ms": recovery * 1000,
            "p1 max ms": max(latencies) if latencies else float("nan"),
            "failed": failures[0],
        }


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--rate", type=int, default=5000, help="records/s")
    ap.add_argument("--before-s", type=float, default=1.5)
    ap.add_argument("--after-s", type=float, default=2.0)
    ap.add_argument("--stale-metadata", action="store_true")
    ap.add_argument("--clients", default="cproducer,librdkafka")
    ap.add_argument("--versions", default="9,11", help="Produce versions the brokers offer")
    args = ap.parse_args(argv)
    columns = ["metadata", "not leader", "recovery ms", "p1 max ms", "failed"]
    print(
        f"{args.rate} records/s of 100 B to 3 partitions; partition 1 moves node 1 -> 2 after "
        f"{args.before_s:g} s; {args.runs} runs each, median (min-max)"
        + ("; Metadata keeps naming the old leader" if args.stale_metadata else "")
    )
    print(f"{'client':<11}{'Produce':>8}" + "".join(f"{c:>22}" for c in columns))
    with LocalBroker() as broker:
        for kind in args.clients.split(","):
            for version in [int(v) for v in args.versions.split(",")]:
                rows: List[Dict[str, float]] = []
                for run in range(args.runs):
                    topic = f"move-{kind}-{version}-{run}-{time.time_ns()}"
                    broker.create_topic(topic, 3)
                    rows.append(
                        one_run(
                            kind,
                            broker,
                            topic,
                            version,
                            args.rate,
                            args.before_s,
                            args.after_s,
                            args.stale_metadata,
                        )
                    )
                cells = []
                for c in columns:
                    values = [r[c] for r in rows]
                    cells.append(
                        f"{statistics.median(values):.0f} ({min(values):.0f}-{max(values):.0f})"
                    )
                print(f"{kind:<11}{'v' + str(version):>8}" + "".join(f"{c:>22}" for c in cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
