"""KIP-794's slow-broker experiment, on one Tansu broker behind a VirtualCluster of 3 virtual
nodes, node 0 taking 20 ms per Produce request, one at a time. The reference table is the one in
KIP-794's test results:
https://cwiki.apache.org/confluence/display/KAFKA/KIP-794%3A+Strictly+Uniform+Sticky+Partitioner

Topic foo, 3 partitions (leaders: node p % 3). For each partitioner setting, cproducer-perf-test
sends N x 512-byte unkeyed records at a capped rate (default 2048/s = 1 MB/s, then 4096/s), each
run in its own process, with linger.ms=0 as in the KIP (Java 3.x's default; ``--linger-ms``); the
table shows its throughput and latencies, and each virtual node's share of the records (read back
with librdkafka). ``--runs R`` runs every setting R times, the settings taking turns, and shows
the medians. ``--clients cproducer,java`` runs Java's own ProducerPerformance too, from
kafka-clients 3.9 (the last with the legacy DefaultPartitioner; ``./dev.sh kafka3-libs`` fetches
it, or ``$CPRODUCER_KAFKA3_LIBS`` names its jars), in the same turns: each client's rows, side by
side.

After each table a verdict says whether the rows keep KIP-794's finding: the legacy sticky
partitioner (KIP-480: the partition moves on at a new batch, so a slow broker's batches fill up
and it gets more of the records) has the worst p99, the KIP-794 defaults a better p99 than the
legacy one, and adaptive partitioning sends node 0 less than uniform sticky does. ``--check``
exits 1 when a verdict fails. ``--plot DIR`` also writes the rows (``kip794.json``) and a chart of
the latencies and node 0's share (``kip794.png``, matplotlib) into DIR.

    python benchmarks/kip794_slow_broker.py [--num-records 122880] [--throughputs 2048,4096]
                                            [--runs 3] [--clients cproducer,java] [--check]
                                            [--plot docs/_static/perf]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
from typing import Any, Dict, List

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from cproducer.localbroker import LocalBroker  # noqa: E402
from tests.integration.readback import read_back  # noqa: E402
from tests.tools.virtual_cluster import VirtualCluster  # noqa: E402

_REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
LEGACY = "legacy DefaultPartitioner (KIP-480 sticky)"
UNIFORM = "partitioner.adaptive.partitioning.enable=false"
DEFAULTS = "new logic, all defaults (KIP-794)"
# Java's legacy partitioner is named by its class; cproducer takes the short name too
JAVA_LEGACY = "partitioner.class=org.apache.kafka.clients.producer.internals.DefaultPartitioner"
SETTINGS = [
    (LEGACY, [JAVA_LEGACY]),
    (UNIFORM, ["partitioner.adaptive.partitioning.enable=false"]),
    (DEFAULTS, []),
    ("partitioner.availability.timeout.ms=5", ["partitioner.availability.timeout.ms=5"]),
]
LINE = re.compile(
    r"records/sec \(([\d.]+) MB/sec\), ([\d.]+) ms avg latency, ([\d.]+) ms max latency, "
    r"(\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th, (\d+) ms 99.9th"
)
FIELDS = ("mb_per_s", "avg_ms", "p99_ms", "p999_ms", "node0_share")


def kafka3_libs() -> str:
    """The directory of Java 3.9's perf tool and its jars."""
    return os.environ.get("CPRODUCER_KAFKA3_LIBS") or os.path.join(
        _REPO, ".cache", "kafka-3", "libs"
    )


def perf_command(client: str, bootstrap: str) -> List[str]:
    """The command line of one client's perf tool, up to its --topic."""
    if client == "cproducer":
        return [sys.executable, "-m", "cproducer.perf", "--bootstrap-server", bootstrap]
    tool = "org.apache.kafka.tools.ProducerPerformance"
    return ["java", "-Xmx512m", "-cp", os.path.join(kafka3_libs(), "*"), tool]


def run_once(
    broker: Any, vc: Any, client: str, props: List[str], throughput: int, args: argparse.Namespace
) -> Dict[str, Any]:
    """One perf-tool run on a fresh topic: its figures, or {"error": ...}."""
    topic = f"foo-{time.time_ns()}"
    broker.create_topic(topic, 3)
    cmd = [
        *perf_command(client, vc.bootstrap_servers), "--topic", topic,
        "--num-records", str(args.num_records), "--record-size", "512",
        "--throughput", str(throughput),
        "--producer-props", f"bootstrap.servers={vc.bootstrap_servers}",
        f"linger.ms={args.linger_ms}", *props,
    ]  # fmt: skip
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
    m = LINE.search(out.stdout)
    if m is None:
        return {"error": f"{out.stdout[-300:]} {out.stderr[-300:]}"}
    records = read_back(vc.bootstrap_servers, topic, 3, args.num_records)
    on_node0 = sum(1 for r in records if r.partition == 0)  # partition 0 is node 0's
    mb, avg, _mx, _p50, _p95, p99, p999 = m.groups()
    return {
        "mb_per_s": float(mb),
        "avg_ms": float(avg),
        "p99_ms": int(p99),
        "p999_ms": int(p999),
        "node0_share": on_node0 / max(len(records), 1),
    }


def median_row(
    client: str, name: str, throughput: int, runs: List[Dict[str, Any]]
) -> Dict[str, Any]:
    """The setting's row: the median of each figure over its runs (and the runs themselves)."""
    row: Dict[str, Any] = {
        "client": client,
        "throughput": throughput,
        "setting": name,
        "runs": len(runs),
    }
    for field in FIELDS:
        row[field] = statistics.median(r[field] for r in runs)
    row["p99_ms_each"] = [r["p99_ms"] for r in runs]
    row["node0_share_each"] = [round(r["node0_share"], 4) for r in runs]
    return row


def verdict(rows: List[Dict[str, Any]]) -> List[str]:
    """What in one throughput's rows departs from KIP-794's finding (empty: none does)."""
    by = {r["setting"]: r for r in rows}
    if not all(name in by for name in (LEGACY, UNIFORM, DEFAULTS)):
        return ["a run failed: not every setting has a row"]
    legacy, uniform, defaults = by[LEGACY], by[UNIFORM], by[DEFAULTS]
    problems = []
    worse = [r["setting"] for r in rows if r is not legacy and r["p99_ms"] >= legacy["p99_ms"]]
    if worse:
        problems.append(f"legacy p99 {legacy['p99_ms']:g} ms is not the worst ({', '.join(worse)})")
    if defaults["p99_ms"] >= legacy["p99_ms"]:
        problems.append(
            f"KIP-794 defaults p99 {defaults['p99_ms']:g} ms is not below legacy's "
            f"{legacy['p99_ms']:g} ms"
        )
    if defaults["node0_share"] >= uniform["node0_share"]:
        problems.append(
            f"node 0 share with adaptive partitioning {defaults['node0_share']:.1%} is not below "
            f"uniform sticky's {uniform['node0_share']:.1%}"
        )
    return problems


def main(argv: List[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--num-records", type=int, default=122880)
    ap.add_argument("--throughputs", default="2048,4096")
    ap.add_argument("--slow-ms", type=float, default=20.0)
    ap.add_argument(
        "--linger-ms", type=int, default=0, help="linger.ms of every run (KIP-794's runs: 0)"
    )
    ap.add_argument("--runs", type=int, default=1, help="runs per setting; the table: medians")
    ap.add_argument(
        "--clients", default="cproducer", help="cproducer, java (Java's ProducerPerformance 3.9)"
    )
    ap.add_argument("--check", action="store_true", help="exit 1 when a verdict fails")
    ap.add_argument("--plot", metavar="DIR", help="write kip794.json and kip794.png into DIR")
    args = ap.parse_args(argv)
    clients = args.clients.split(",")
    unknown = set(clients) - {"cproducer", "java"}
    if unknown:
        ap.error(f"--clients: unknown {', '.join(sorted(unknown))}; use cproducer, java")
    # before any broker starts or any run is made
    if "java" in clients and not os.path.isfile(
        os.path.join(kafka3_libs(), "kafka-tools-3.9.1.jar")
    ):
        ap.error(f"--clients java: no kafka-tools 3.9.1 jar in {kafka3_libs()}; run "
                 "`./dev.sh kafka3-libs` first")  # fmt: skip
    rows: List[Dict[str, Any]] = []
    failed = False
    load_before = round(os.getloadavg()[0], 2)
    with LocalBroker() as broker, VirtualCluster(broker.bootstrap_servers, 3) as vc:
        vc.set_produce_service_ms(0, args.slow_ms)
        print(
            f"{args.num_records} x 512 B unkeyed, 3 virtual nodes, node 0: {args.slow_ms:g} ms "
            f"per Produce request, one at a time; linger.ms={args.linger_ms}, Java's defaults "
            f"otherwise; median of {args.runs} run(s) per setting"
        )
        for throughput in [int(t) for t in args.throughputs.split(",")]:
            print(f"\n--throughput {throughput} ({throughput * 512 / 2**20:.2f} MB/s offered)")
            runs: Dict[tuple, List[Dict[str, Any]]] = {
                (client, name): [] for client in clients for name, _ in SETTINGS
            }
            for _ in range(args.runs):  # settings and clients take turns: noise hits them alike
                for name, props in SETTINGS:
                    for client in clients:
                        result = run_once(broker, vc, client, props, throughput, args)
                        if "error" in result:
                            print(f"{client} {name}: failed: {result['error']}")
                        else:
                            runs[client, name].append(result)
            for client in clients:
                print(
                    f"{client:<10}{'setting':<48}{'MB/s':>7}{'avg ms':>9}{'p99 ms':>8}"
                    f"{'p99.9':>8}{'node 0 share':>14}"
                )
                table = []
                for name, _ in SETTINGS:
                    if not runs[client, name]:
                        continue
                    row = median_row(client, name, throughput, runs[client, name])
                    table.append(row)
                    print(
                        f"{client:<10}{name:<48}{row['mb_per_s']:>7.2f}{row['avg_ms']:>9.1f}"
                        f"{row['p99_ms']:>8g}{row['p999_ms']:>8g}{row['node0_share']:>13.1%}"
                    )
                rows.extend(table)
                problems = verdict(table)
                if problems:
                    failed = True
                    print(f"verdict ({client}): KIP-794's ordering does NOT hold: "
                          + "; ".join(problems))  # fmt: skip
                else:
                    print(
                        f"verdict ({client}): KIP-794's ordering holds (legacy p99 the worst, "
                        "the KIP-794 defaults below it, node 0's share lower with adaptive "
                        "partitioning)"
                    )
    load_after = round(os.getloadavg()[0], 2)
    print(f"\nload average (1 min) before / after the runs: {load_before} / {load_after}")
    if args.plot:
        report = {
            "workload": f"{args.num_records} x 512 B unkeyed, 3 virtual nodes, node 0: "
            f"{args.slow_ms:g} ms per Produce request, linger.ms={args.linger_ms}, "
            f"median of {args.runs}",
            "rows": rows,
            "command": "python benchmarks/kip794_slow_broker.py " + " ".join(argv or sys.argv[1:]),
            "load_average": [load_before, load_after],
        }
        os.makedirs(args.plot, exist_ok=True)
        with open(os.path.join(args.plot, "kip794.json"), "w") as fh:
            json.dump(report, fh, indent=2)
            fh.write("\n")
        plot(report, os.path.join(args.plot, "kip794.png"))
    return 1 if failed and args.check else 0


def plot(report: Dict[str, Any], path: str) -> None:
    """One panel per offered rate: average and p99 latency of each setting (bars, log scale), and
    the share of the records that went to the slow node 0 (printed on the bars)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rates = sorted({r["throughput"] for r in report["rows"]})
    clients = sorted({r.get("client", "cproducer") for r in report["rows"]})
    order = [name for name, _ in SETTINGS]
    # one client: its rates' panels side by side; more clients: one row per rate
    side = len(clients) == 1
    fig, axes = plt.subplots(
        1 if side else len(rates),
        len(rates) if side else 1,
        figsize=(6 * len(rates), 3.8) if side else (6 * len(clients), 3.8 * len(rates)),
        squeeze=False,
    )
    for ax, rate in zip(axes.flat, rates):
        # each setting's clients side by side
        rows = sorted(
            (r for r in report["rows"] if r["throughput"] == rate),
            key=lambda r: (order.index(r["setting"]), r.get("client", "cproducer")),
        )
        xs = range(len(rows))
        ax.bar([x - 0.2 for x in xs], [r["avg_ms"] for r in rows], 0.4, label="avg ms")
        ax.bar([x + 0.2 for x in xs], [r["p99_ms"] for r in rows], 0.4, label="p99 ms")
        for x, r in zip(xs, rows):
            ax.text(x, r["p99_ms"], f"{r['node0_share']:.0%}\n{r['mb_per_s']:.2f} MB/s",
                    ha="center", va="bottom", fontsize=7)  # fmt: skip
        ax.set_yscale("log")
        ax.set_ylim(top=max(r["p99_ms"] for r in rows) * 6)
        ax.set_xticks(list(xs))
        ax.set_xticklabels(
            [
                _short(r["setting"]) + (f"\n{r.get('client', '')}" if len(clients) > 1 else "")
                for r in rows
            ],
            fontsize=7,
        )
        ax.set_title(f"--throughput {rate} ({rate * 512 / 2**20:.0f} MB/s offered)", fontsize=9)
        ax.set_ylabel("latency ms (log)", fontsize=8)
        ax.legend(fontsize=7, loc="upper right")
    fig.suptitle(report["workload"] + "; over the bars: node 0's share, MB/s", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _short(setting: str) -> str:
    return {
        "legacy DefaultPartitioner (KIP-480 sticky)": "legacy\nsticky",
        "partitioner.adaptive.partitioning.enable=false": "uniform\n(adaptive off)",
        "new logic, all defaults (KIP-794)": "KIP-794\ndefaults",
        "partitioner.availability.timeout.ms=5": "availability\ntimeout 5 ms",
    }.get(setting, setting)


if __name__ == "__main__":
    sys.exit(main())
