"""``./dev.sh perf``: cproducer's perf test (``python -m cproducer.perf``) on a broker of choice.

``--broker tansu`` (the default) runs the perf test as it is: with no ``--bootstrap-server`` it
starts its embedded Tansu. ``--broker kafka`` first starts Apache Kafka in KRaft mode (one node,
``tests/tools/apache_kafka.py``, the jars of ``./dev.sh kafka-libs``; the log settings of
``compare_peers.py --broker kafka``), runs the perf test against it (the perf test creates its
topic, ``--partitions``), then stops it. Every other flag goes to the perf test unchanged.

    python benchmarks/perf_broker.py --broker kafka --num-records 1000000 --record-size 100
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from typing import List, Optional

_HERE = os.path.dirname(os.path.abspath(__file__))
# this checkout's cproducer and its tests/tools (not part of the installed package)
sys.path[:0] = [os.path.join(_HERE, "..")]


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], allow_abbrev=False, add_help=False
    )
    ap.add_argument("--broker", choices=("tansu", "kafka"), default="tansu")
    args, perf_args = ap.parse_known_args(argv)
    perf = [sys.executable, "-m", "cproducer.perf", *perf_args]
    if args.broker == "tansu":
        return subprocess.call(perf)
    if any(a == "--bootstrap-server" or a.startswith("--bootstrap-server=") for a in perf_args):
        ap.error("--broker kafka starts its own broker: no --bootstrap-server")
    from compare_peers import broker_for

    with broker_for("kafka") as broker:
        print(f"Apache Kafka (KRaft, one node) at {broker.bootstrap_servers}.", flush=True)
        return subprocess.call([*perf, "--bootstrap-server", broker.bootstrap_servers])


if __name__ == "__main__":
    sys.exit(main())
