"""Records sent the moment a topic is created, on one Apache Kafka node: does each client keep
every partition in send order, deliver every record, and how long does it take?

Each round, per client in turn: a producer already connected (its defaults, idempotence on)
sends --records keyed records (--keys keys) to a topic of --partitions partitions created a
moment before (Metadata names the leaders; the leaders may not take writes yet, KAFKA-15591),
then flushes. librdkafka reads the topic back. Per client: rounds clean (every record
acknowledged, once in the topic, each partition in send order), and over all rounds the
records failed, lost, duplicated and reordered, the records of the first round that did not
come out in order (spelled out), and the median seconds from the first send to the end of the
flush. The scenario is tests/tools/new_topic_order.py, which
tests/integration/test_kafka_new_topic_order.py runs for fewer rounds.

    python benchmarks/new_topic_order.py [--rounds 20] [--clients cproducer,librdkafka,java]
        [--java-delivery-timeout-ms 120000]

Java's producer needs the jars of ``./dev.sh kafka-libs``; it may hold a partition's records
until delivery.timeout.ms, so a Java round can take that long.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from typing import Any, Dict, List

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from tests.tools.apache_kafka import ApacheKafka  # noqa: E402
from tests.tools.new_topic_order import (  # noqa: E402
    CLIENTS,
    Verdict,
    read_and_judge,
    send_to_new_topic,
)


def main(argv: Any = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--records", type=int, default=20000)
    ap.add_argument("--partitions", type=int, default=6)
    ap.add_argument("--keys", type=int, default=1000)
    ap.add_argument("--clients", default="cproducer,librdkafka")
    ap.add_argument("--java-delivery-timeout-ms", type=int, default=120000)
    args = ap.parse_args(argv)
    clients = args.clients.split(",")
    for c in clients:
        if c not in CLIENTS:
            ap.error(f"--clients: {c!r} is not one of {', '.join(CLIENTS)}")
    results: Dict[str, List[Verdict]] = {c: [] for c in clients}
    seconds: Dict[str, List[float]] = {c: [] for c in clients}
    first_error: Dict[str, str] = {}
    with ApacheKafka() as kafka:
        for r in range(args.rounds):
            for client in clients:  # the clients take turns
                config = (
                    {"delivery.timeout.ms": args.java_delivery_timeout_ms}
                    if client == "java"
                    else {}
                )
                rnd = send_to_new_topic(
                    client, kafka, args.records, args.partitions, args.keys, config
                )
                v = read_and_judge(kafka, rnd, args.partitions)
                results[client].append(v)
                seconds[client].append(rnd.seconds)
                errors = [o[2] for o in rnd.outcomes.values() if o[2] is not None]
                if errors and client not in first_error:
                    first_error[client] = errors[0] or ""
                print(
                    f"round {r + 1:>2} {client:<11} {'clean' if v.clean else 'NOT CLEAN'}"
                    f"  failed {v.failed} lost {v.lost} dup {v.duplicated}"
                    f" reordered {v.reordered}  {rnd.seconds:.2f} s"
                    + (f"  ({v.first_out_of_order})" if v.first_out_of_order else ""),
                    flush=True,
                )
    print()
    print(f"{'client':<12}{'clean':>8}{'failed':>8}{'lost':>6}{'dup':>5}{'reord':>7}{'med s':>8}")
    for client in clients:
        vs = results[client]
        print(
            f"{client:<12}{sum(v.clean for v in vs):>5}/{len(vs):<2}"
            f"{sum(v.failed for v in vs):>8}{sum(v.lost for v in vs):>6}"
            f"{sum(v.duplicated for v in vs):>5}{sum(v.reordered for v in vs):>7}"
            f"{statistics.median(seconds[client]):>8.2f}"
        )
    for client, err in first_error.items():
        print(f"{client}: first error: {err}")
    return 0 if all(v.clean for vs in results.values() for v in vs) else 1


if __name__ == "__main__":
    sys.exit(main())
