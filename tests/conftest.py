"""Checks for the whole run: nothing a test starts outlives it.

A producer a test leaves open keeps its network thread, its sockets and its buffers; a broker or
a JVM a test leaves running holds ports and memory for the rest of the run and, in CI, kept the
job from ending. So each test module must have closed the producers it created by the time its
module fixtures are torn down, and the run must have stopped every process it started by the time
its session fixtures are. Either failure names what was left: the producer's client.id, the
process's pid and command line."""

from __future__ import annotations

import os
import threading
import time
from typing import Any, Callable, Dict, Iterator, List, Set

import pytest

#: Under pytest-xdist (``./dev.sh test`` runs ``--dist loadfile``) each test module is a unit of
#: work that runs whole on one worker, its module fixtures set up once. The modules that start a
#: 3-broker cluster or a Spark standalone cluster (several JVMs each, timing-sensitive faults)
#: go in two lanes instead: at most two such clusters run at once on a 2-core machine, beside the
#: light modules on the other worker. The lanes are balanced by their modules' run times, and
#: run first so that they start on two different workers. (xdist's own ``loadgroup`` cannot do
#: this here: it marks test ids through an attribute pytest 9 no longer reads.)
HEAVY_LANES = {
    "tests/integration/test_kafka_outage.py": "heavy-1",
    "tests/integration/test_kafka_new_topic_cluster.py": "heavy-1",
    "tests/integration/test_kafka_network.py": "heavy-1",
    "tests/integration/test_kafka_moves.py": "heavy-1",
    "tests/integration/test_kafka_txn_failover.py": "heavy-2",
    "tests/integration/test_kafka_cluster.py": "heavy-2",
    "tests/integration/test_spark_cluster.py": "heavy-2",
    "tests/integration/test_kafka_adaptive.py": "heavy-2",
}


def _module_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def pytest_collection_modifyitems(config: pytest.Config, items: List[pytest.Item]) -> None:
    for item in items:
        module = _module_of(item.nodeid)
        if item.get_closest_marker("cluster") is not None and module not in HEAVY_LANES:
            raise pytest.UsageError(f"{module} starts a cluster: give it a lane in HEAVY_LANES")
    # the lanes first (a stable sort keeps each lane's and each module's order)
    order = {"heavy-1": 0, "heavy-2": 1}
    items.sort(key=lambda item: order.get(HEAVY_LANES.get(_module_of(item.nodeid), ""), 2))


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadfile``, with each lane of HEAVY_LANES one unit of work."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class LaneScheduling(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            module = _module_of(nodeid)
            return HEAVY_LANES.get(module, module)

    return LaneScheduling(config, log)


#: the name of every producer's network thread (``Sender``), ahead of its client.id
_PRODUCER_THREAD = "kafka-producer-network-thread"
#: a producer closed from another thread (a callback, a facade's close()) may take this long to
#: see its thread end
_GRACE_S = 5.0


def _producer_threads() -> Set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name.startswith(_PRODUCER_THREAD)}


def _descendants() -> Dict[int, str]:
    """This process's live descendants (not zombies), by pid, with their command lines."""
    parent: Dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read().decode(errors="replace")
        except OSError:
            continue  # ended while we looked
        # "pid (comm) state ppid ...": comm may hold spaces and parentheses
        state, ppid = stat[stat.rindex(")") + 2 :].split()[:2]
        if state != "Z":
            parent[int(entry)] = int(ppid)
    mine: Set[int] = {os.getpid()}
    grew = True
    while grew:
        grew = False
        for pid, ppid in parent.items():
            if ppid in mine and pid not in mine:
                mine.add(pid)
                grew = True
    mine.discard(os.getpid())
    out: Dict[int, str] = {}
    for pid in sorted(mine):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                out[pid] = f.read().replace(b"\0", b" ").decode(errors="replace").strip()[:200]
        except OSError:
            continue
    return out


def _wait_until_gone(check: Callable[[], List[str]]) -> List[str]:
    deadline = time.monotonic() + _GRACE_S
    left = check()
    while left and time.monotonic() < deadline:
        time.sleep(0.1)
        left = check()
    return left


@pytest.fixture(scope="module", autouse=True)
def _module_closes_its_producers(request: pytest.FixtureRequest) -> Iterator[None]:
    before = _producer_threads()
    yield
    left = _wait_until_gone(
        lambda: sorted(t.name for t in _producer_threads() - before if t.is_alive())
    )
    if left:
        pytest.fail(
            f"{request.module.__name__} left {len(left)} producer(s) open "
            f"(network threads still running): {', '.join(left)}",
            pytrace=False,
        )


@pytest.fixture(scope="session", autouse=True)
def _run_stops_its_processes() -> Iterator[None]:
    before = set(_descendants())
    yield
    left = _wait_until_gone(
        lambda: [f"pid {pid}: {cmd}" for pid, cmd in _descendants().items() if pid not in before]
    )
    if left:
        pytest.fail(
            "the test run left processes running (brokers, JVMs, fronts):\n  " + "\n  ".join(left),
            pytrace=False,
        )


@pytest.fixture
def close_facade_producers(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Closes every ``cproducer.compat.confluent.Producer`` the test built and left open: a
    confluent-kafka ``Producer`` ends with its last reference, the facade's on ``close()``, so
    tests written for both (and left as a user would write them) use this fixture."""
    from cproducer.compat.confluent import producer as confluent_facade

    made: List[Any] = []
    init = confluent_facade.Producer.__init__

    def tracked(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        made.append(self)

    monkeypatch.setattr(confluent_facade.Producer, "__init__", tracked)
    yield
    for p in made:
        p.close(0)
