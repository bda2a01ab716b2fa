"""Apache Kafka brokers for the tests: KRaft mode on loopback ports, storage in a temporary
directory, from the jars ``./dev.sh kafka-libs`` copies out of Maven Central
(``tests/java/pom.xml``) into the git-ignored ``.cache/kafka/libs`` (``$CPRODUCER_KAFKA_LIBS``
names another directory).

- ``ApacheKafka()``: one combined node (broker and controller in one JVM), the suite's second
  broker beside Tansu. The same attributes as ``LocalBroker`` (``host``, ``port``,
  ``bootstrap_servers``, ``process``, ``create_topic``, ``log_tail``), so a test runs on either.
  ``listeners`` adds SASL/SSL listeners (``{"SASL_PLAINTEXT": None}``: on a free port) and
  ``properties`` any broker setting; ``features`` the feature levels the storage is formatted
  with (``{"transaction.version": 1}``: ``StorageTool format --feature
  transaction.version=1``; unnamed features get the release's defaults, as without it).
- ``ApacheKafkaCluster(3)``: three broker-only nodes (ids 1..3) and one controller-only node
  (id 100, the whole quorum; ``features`` as ``ApacheKafka``'s); ``kill(node_id)`` (SIGKILL)
  and ``start_node(node_id)`` again, on the same ports and data. Replication factor 3 and
  ``min.insync.replicas=2`` by default.

Each node writes its log (log4j2) to ``<dir>/server.log``; ``log_tail()`` returns its end, for a
failing test to print. Nodes run with small heaps (``-Xmx512m``) so that a cluster fits beside the
tests on a 2-core machine.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import weakref
from pathlib import Path
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple

from cproducer.errors import KafkaError, KafkaTimeoutError, TopicAlreadyExistsError, exception_for
from cproducer.localbroker import free_port, host_port, kill_process, request, stop_process
from cproducer.protocol import CreateTopicsRequest, MetadataRequest, NewTopic
from cproducer.protocol.primitives import Reader, Writer

LIBS_ENV = "CPRODUCER_KAFKA_LIBS"
_REPO = Path(__file__).resolve().parents[2]
# a fixed cluster id: every test cluster is its own (fresh storage), nothing to tell apart
CLUSTER_ID = "MkU3OEVBNTcwNTJENDM2Qk"
CONTROLLER_ID = 100
HEAP = ["-Xms128m", "-Xmx512m"]
# the broker's own launch script's collector settings (bin/kafka-run-class.sh)
JVM_FLAGS = [
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-XX:InitiatingHeapOccupancyPercent=35",
    "-XX:+ExplicitGCInvokesConcurrent",
    "-Djava.awt.headless=true",
]

_LOG4J2 = """\
status = error
appender.file.type = File
appender.file.name = FILE
appender.file.fileName = {log}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = FILE
logger.kafka.name = kafka
logger.kafka.level = INFO
logger.controller.name = org.apache.kafka.controller
logger.controller.level = INFO
"""

# settings every test node shares: quick group joins, internal topics small enough to be created
# in a moment, short waits where a test would otherwise sit idle
_COMMON = {
    "group.initial.rebalance.delay.ms": "0",
    "offsets.topic.num.partitions": "4",
    "transaction.state.log.num.partitions": "4",
    "auto.create.topics.enable": "true",
    # records with old CreateTime stamps (tests set them) stay: no deletion by age
    "log.retention.ms": "-1",
    "log.flush.interval.messages": str(2**62),
    "num.network.threads": "2",
    "num.io.threads": "4",
}


class ListOffsetsV1:
    """ListOffsets (key 2) v1 for the latest offsets of ``partitions`` of ``topic``; the answer
    is ``{partition: error code}`` (the producer has no codec for it, so it lives here)."""

    API_KEY = 2
    FIRST_FLEXIBLE_VERSION = 6

    def __init__(self, topic: str, partitions: Iterable[int]) -> None:
        self.topic, self.partitions = topic, list(partitions)

    def encode_body(self, version: int) -> List[Any]:
        w = Writer().int32(-1).array_length(1).string(self.topic)
        w.array_length(len(self.partitions))
        for p in self.partitions:
            w.int32(p).int64(-1)  # -1: the latest offset
        return [w.buf]

    def decode_response(self, version: int, data: memoryview) -> Dict[int, int]:
        r, errors = Reader(data), {}
        for _ in range(r.array_length()):
            r.string()
            for _ in range(r.array_length()):
                partition, errors[partition] = r.int32(), r.int16()
                r.int64(), r.int64()  # timestamp, offset
        return errors


def libs_dir() -> Path:
    """The directory of Apache Kafka's jars; a clear error when it was never fetched."""
    d = Path(os.environ.get(LIBS_ENV) or _REPO / ".cache" / "kafka" / "libs")
    if not any(d.glob("kafka_2.13-*.jar")):
        raise FileNotFoundError(
            f"no Apache Kafka jars in {d}: run `./dev.sh kafka-libs` (Maven, tests/java/pom.xml) "
            f"or set {LIBS_ENV} to a directory holding them"
        )
    return d


def classpath() -> str:
    return str(libs_dir() / "*")


def kafka_version() -> str:
    jar = next(libs_dir().glob("kafka_2.13-*.jar"))
    return jar.stem[len("kafka_2.13-") :]


def java() -> str:
    home = os.environ.get("JAVA_HOME")
    exe = os.path.join(home, "bin", "java") if home else shutil.which("java")
    if not exe:
        raise FileNotFoundError("no java on PATH (Apache Kafka 4.x needs Java 17)")
    return exe


JAVA_SOURCES = _REPO / "tests" / "java"


def compiled(source: str, sources: Path = JAVA_SOURCES) -> str:
    """The classpath that runs ``<sources>/<source>.java`` (``tests/java`` by default; compiled
    once per source text, into the cache beside the jars) with Kafka's jars."""
    import hashlib

    src = Path(sources) / f"{source}.java"
    out = libs_dir().parent / "classes" / hashlib.sha256(src.read_bytes()).hexdigest()[:16]
    if not (out / f"{source}.class").exists():
        javac = shutil.which("javac", path=os.path.dirname(java())) or shutil.which("javac")
        if not javac:
            raise FileNotFoundError("no javac (a JDK 17) to compile the Java test programs")
        tmp = Path(tempfile.mkdtemp(dir=libs_dir().parent))
        subprocess.run([javac, "-cp", classpath(), "-d", str(tmp), str(src)], check=True)
        out.parent.mkdir(parents=True, exist_ok=True)
        try:
            tmp.rename(out)
        except OSError:  # another test process compiled it first
            shutil.rmtree(tmp, ignore_errors=True)
    return f"{out}{os.pathsep}{classpath()}"


def start_java(
    main: str, args: Iterable[str]
) -> Tuple[subprocess.Popen[str], List[str], threading.Thread]:
    """Runs the test program ``tests/java/<main>.java`` with Kafka's jars, stdin and stdout piped
    as text. Its stderr is read into the returned list on the returned (daemon) thread, so the
    pipe never fills; join the thread before reading the list."""
    proc = subprocess.Popen(
        [java(), "-Xmx256m", "-cp", compiled(main), main, *args],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    stderr: List[str] = []
    drain = threading.Thread(target=lambda: stderr.extend(proc.stderr or ()), daemon=True)
    drain.start()
    return proc, stderr, drain


def _run_java(main: str, *args: str, log4j: Optional[Path] = None, timeout: float = 60) -> str:
    """A Kafka command-line class run to completion; its output, or an error carrying it."""
    props = [f"-Dlog4j2.configurationFile={log4j}"] if log4j else []
    proc = subprocess.run(
        [java(), "-Xmx256m", "-XX:TieredStopAtLevel=1", *props, "-cp", classpath(), main, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{main} {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}"
                           f"{proc.stderr}")  # fmt: skip
    return proc.stdout


class KafkaNode:
    """One Kafka JVM: its ports, its properties file, its data and its log under ``dir``."""

    def __init__(
        self,
        node_id: int,
        roles: str,
        dir: Path,
        listeners: Mapping[str, int],
        properties: Mapping[str, str],
        features: Optional[Mapping[str, int]] = None,
    ) -> None:
        self.node_id = node_id
        self.features = dict(features or {})
        self.roles = roles
        self.dir = dir
        self.listeners = dict(listeners)  # listener name -> port
        self.properties = dict(properties)
        self.log_file = dir / "server.log"
        self.config_file = dir / "server.properties"
        self.process: Optional[subprocess.Popen] = None
        self.paused = False  # SIGSTOPped: running, but no answer
        dir.mkdir(parents=True, exist_ok=True)
        (dir / "log4j2.properties").write_text(_LOG4J2.format(log=self.log_file))
        props = {"node.id": str(node_id), "process.roles": roles, "log.dirs": str(dir / "data")}
        props.update(self.properties)
        self.config_file.write_text("".join(f"{k}={v}\n" for k, v in sorted(props.items())))

    def format(self) -> subprocess.Popen:
        """Formats the storage (in the background: the nodes of a cluster format together)."""
        return subprocess.Popen(
            [java(), "-Xmx256m", "-XX:TieredStopAtLevel=1",
             f"-Dlog4j2.configurationFile={self.dir / 'log4j2.properties'}", "-cp", classpath(),
             "kafka.tools.StorageTool", "format", "-t", CLUSTER_ID, "-c", str(self.config_file),
             "--ignore-formatted",
             *(a for k, v in sorted(self.features.items()) for a in ("--feature", f"{k}={v}"))],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip

    def start(self) -> None:
        if self.running:
            return
        out = open(self.dir / "stdout.log", "ab")
        try:
            self.process = subprocess.Popen(
                [java(), *HEAP, *JVM_FLAGS,
                 f"-Dlog4j2.configurationFile={self.dir / 'log4j2.properties'}",
                 "-cp", classpath(), "kafka.Kafka", str(self.config_file)],
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True,  # Ctrl-C reaches the tests, which stop the nodes in order
            )  # fmt: skip
        finally:
            out.close()
        weakref.finalize(self, kill_process, self.process)

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def kill(self) -> None:
        """SIGKILL, as a crash: nothing flushed, connections dropped."""
        proc, self.process = self.process, None
        kill_process(proc)

    def stop(self, timeout: float = 20.0) -> None:
        """SIGTERM, a controlled shutdown (leadership moved away first in a cluster)."""
        proc, self.process = self.process, None
        stop_process(proc, timeout)

    def pause(self) -> None:
        """SIGSTOP: the node stops answering, its connections stay open."""
        assert self.process is not None
        self.process.send_signal(signal.SIGSTOP)
        self.paused = True

    def resume(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGCONT)
        self.paused = False

    def move_listener(
        self, name: str = "PLAINTEXT", host: str = "127.0.0.1", port: Optional[int] = None
    ) -> int:
        """Gives a stopped node another port on ``host`` for listener ``name`` (a free one by
        default): ``listeners``, the properties and ``server.properties`` say it from the next
        start on. The old port stays bound (not listening: a connection is refused) while the
        node lives, so that no other process takes an address clients still know. Returns the
        new port."""
        assert not self.running, "move a listener of a stopped node"
        old = self.listeners[name]
        holder = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
        try:
            holder.bind((host, old))
        except OSError:  # taken meanwhile: nothing to hold
            holder.close()
        else:
            weakref.finalize(self, holder.close)
        self.listeners[name] = port or free_port(host)
        controller = self.properties.get("listeners", "").partition("CONTROLLER://")[2]
        controller = controller.split(",")[0]
        self.properties.update(
            _listener_props(
                host,
                self.listeners,
                int(controller.rsplit(":", 1)[1]) if controller else None,
            )
        )
        props = {
            "node.id": str(self.node_id),
            "process.roles": self.roles,
            "log.dirs": str(self.dir / "data"),
            **self.properties,
        }
        self.config_file.write_text("".join(f"{k}={v}\n" for k, v in sorted(props.items())))
        return self.listeners[name]

    def log_tail(self, lines: int = 40) -> str:
        texts = []
        for f in (self.dir / "stdout.log", self.log_file):
            try:
                texts.extend(f.read_text(errors="replace").splitlines()[-lines:])
            except OSError:
                pass
        return "\n".join(texts)


def _listener_props(
    host: str, listeners: Mapping[str, int], controller_port: Optional[int]
) -> Dict[str, str]:
    """listeners / advertised.listeners / the security protocol map for one node. A listener is
    named after its security protocol (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL)."""
    names = list(listeners)
    listen = [f"{n}://{host_port(host, p)}" for n, p in listeners.items()]
    proto = {n: n for n in names}
    proto["CONTROLLER"] = "PLAINTEXT"  # every node names the controllers' protocol
    if controller_port is not None:
        listen.append(f"CONTROLLER://{host_port(host, controller_port)}")
    return {
        "listeners": ",".join(listen),
        "advertised.listeners": ",".join(
            f"{n}://{host_port(host, p)}" for n, p in listeners.items()
        ),
        "listener.security.protocol.map": ",".join(f"{k}:{v}" for k, v in proto.items()),
        "inter.broker.listener.name": "PLAINTEXT",
        "controller.listener.names": "CONTROLLER",
    }


class _Brokers:
    """What a single node and a cluster share: readiness, topics, logs, the tidy-up."""

    host = "127.0.0.1"
    nodes: Dict[int, KafkaNode]
    root: Path
    _own_root: bool
    replication_factor: int = 1

    @property
    def brokers(self) -> List[KafkaNode]:
        return [n for n in self.nodes.values() if "broker" in n.roles]

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(host_port(self.host, n.listeners["PLAINTEXT"]) for n in self.brokers)

    def listener(self, name: str) -> str:
        """The bootstrap list of another listener (``SASL_SSL`` ...)."""
        return ",".join(host_port(self.host, n.listeners[name]) for n in self.brokers)

    def _format_and_start(self, timeout: float) -> None:
        formats = [(n, n.format()) for n in self.nodes.values()]
        for node, proc in formats:
            out, _ = proc.communicate(timeout=120)
            if proc.returncode != 0:
                raise RuntimeError(f"formatting node {node.node_id} failed:\n{out}")
        for n in self.nodes.values():
            n.start()
        self.wait_ready(timeout)

    def _live_brokers(self, node: KafkaNode) -> Optional[List[int]]:
        port = node.listeners["PLAINTEXT"]
        md = request(self.host, port, MetadataRequest([], allow_auto_topic_creation=False), 7, 2.0)
        return sorted(b.id for b in md.brokers)

    def wait_ready(self, timeout: float = 60.0, nodes: Optional[Iterable[int]] = None) -> None:
        """Until every running broker answers Metadata listing all the running brokers."""
        deadline = time.monotonic() + timeout
        last: Any = None
        while True:
            want = sorted(n.node_id for n in self.brokers if n.running)
            pending = [
                n for n in self.brokers if n.running and (nodes is None or n.node_id in nodes)
            ]
            for n in self.nodes.values():
                if n.process is not None and n.process.poll() is not None:
                    raise KafkaError(
                        f"Apache Kafka node {n.node_id} exited with {n.process.returncode}:\n"
                        f"{n.log_tail()}"
                    )
            try:
                if all(self._live_brokers(n) == want for n in pending):
                    return
            except (OSError, KafkaError) as exc:
                last = exc
            if time.monotonic() > deadline:
                raise KafkaTimeoutError(
                    f"Apache Kafka not ready in {timeout} s ({last}):\n{self.log_tail()}"
                )
            time.sleep(0.1)

    def create_topic(
        self,
        name: str,
        partitions: int,
        replication_factor: Optional[int] = None,
        configs: Optional[Mapping[str, str]] = None,
        timeout: float = 30.0,
        writable: bool = True,
    ) -> None:
        """CreateTopics, then wait until every running broker's Metadata shows every partition
        with a leader (a producer may ask any of them first) and, with ``writable``, until each
        leader takes requests for its partitions. The broker's Metadata names a new partition's
        leader a moment before the leader's replica manager has taken the leadership
        (KAFKA-15591): meanwhile Produce is answered NOT_LEADER_OR_FOLLOWER. ``writable=False``
        leaves a test in that moment."""
        rf = self.replication_factor if replication_factor is None else replication_factor
        node = self.answering_broker()
        port = node.listeners["PLAINTEXT"]
        topic = NewTopic(name, partitions, rf, dict(configs or {}))
        resp = request(self.host, port, CreateTopicsRequest([topic], timeout_ms=30000), 4, timeout)
        for t in resp.topics:
            err = exception_for(t.error_code, t.error_message)
            if err is not None and not isinstance(err, TopicAlreadyExistsError):
                raise err
        deadline = time.monotonic() + timeout
        while not all(self._has_leaders(n, name, partitions) for n in self.brokers if n.running):
            if time.monotonic() > deadline:
                raise KafkaTimeoutError(f"topic {name!r} without leaders after {timeout} s")
            time.sleep(0.05)
        while writable and not self._led(name, partitions):
            if time.monotonic() > deadline:
                raise KafkaTimeoutError(f"topic {name!r}: leaders not taking writes in {timeout} s")
            time.sleep(0.02)

    def _led(self, topic: str, partitions: int) -> bool:
        """Every partition's leader answers ListOffsets for it (the question only a leader
        answers) without an error."""
        by_leader: Dict[int, List[int]] = {}
        for p in range(partitions):
            by_leader.setdefault(self.leader_of(topic, p), []).append(p)
        for leader, parts in by_leader.items():
            port = self.nodes[leader].listeners["PLAINTEXT"]
            if any(request(self.host, port, ListOffsetsV1(topic, parts), 1).values()):
                return False
        return True

    def _has_leaders(self, node: KafkaNode, name: str, partitions: int) -> bool:
        port = node.listeners["PLAINTEXT"]
        md = request(self.host, port, MetadataRequest([name], allow_auto_topic_creation=False), 7)
        return any(
            t.name == name
            and t.error_code == 0
            and len(t.partitions) == partitions
            and all(p.leader_id >= 0 for p in t.partitions)
            for t in md.topics
        )

    def answering_broker(self) -> KafkaNode:
        """A broker to ask: running and not paused (a paused one would only time out)."""
        return next(n for n in self.brokers if n.running and not n.paused)

    def leader_of(self, topic: str, partition: int) -> int:
        node = self.answering_broker()
        md = request(self.host, node.listeners["PLAINTEXT"], MetadataRequest([topic], False), 7)
        for t in md.topics:
            for p in t.partitions:
                if p.partition == partition:
                    return int(p.leader_id)
        raise KeyError(f"{topic}-{partition}")

    def partition_states(self, topic: str) -> Dict[int, Tuple[int, List[int], List[int]]]:
        """``{partition: (leader, replicas, in-sync replicas)}`` of ``topic`` as a running broker's
        Metadata has them (leader -1: none)."""
        node = self.answering_broker()
        md = request(self.host, node.listeners["PLAINTEXT"], MetadataRequest([topic], False), 7)
        return {
            int(p.partition): (int(p.leader_id), sorted(p.replica_ids), sorted(p.isr_ids))
            for t in md.topics
            if t.name == topic
            for p in t.partitions
        }

    def wait_isr_full(self, timeout: float = 60.0) -> None:
        """Until every running broker's Metadata (a paused one's aside) shows each partition of
        every topic (the internal ones too) with a leader and all of its replicas in sync: a
        cluster made whole again after a fault."""
        deadline = time.monotonic() + timeout
        last: Any = None
        while True:
            try:
                behind = []
                for n in self.brokers:
                    if not n.running or n.paused:
                        continue
                    md = request(
                        self.host, n.listeners["PLAINTEXT"], MetadataRequest(None, False), 7
                    )
                    behind += [
                        f"{t.name}-{p.partition} (node {n.node_id}: leader {p.leader_id}, "
                        f"isr {sorted(p.isr_ids)} of {sorted(p.replica_ids)})"
                        for t in md.topics
                        for p in t.partitions
                        if p.leader_id < 0 or sorted(p.isr_ids) != sorted(p.replica_ids)
                    ]
                if not behind:
                    return
                last = f"{len(behind)} partitions behind, e.g. {behind[:3]}"
            except (OSError, KafkaError) as exc:
                last = exc
            if time.monotonic() > deadline:
                raise KafkaTimeoutError(f"ISR not full in {timeout} s ({last}):\n{self.log_tail()}")
            time.sleep(0.2)

    def run_tool(self, main: str, *args: str, timeout: float = 60) -> str:
        """One of Kafka's command-line classes (``org.apache.kafka.tools.ConfigCommand`` ...)
        against this cluster's first broker."""
        return _run_java(main, *args, log4j=self.root / "tools-log4j2.properties", timeout=timeout)

    def log_tail(self, lines: int = 40) -> str:
        return "\n".join(
            f"--- node {n.node_id} ({n.dir / 'server.log'}) ---\n{n.log_tail(lines)}"
            for n in self.nodes.values()
        )

    def stop(self) -> None:
        """Brokers first (each a controlled shutdown), then the controllers."""
        for n in sorted(self.nodes.values(), key=lambda n: "controller" in n.roles):
            n.stop()

    def close(self) -> None:
        self.stop()
        if self._own_root:
            shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> Any:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def start(self, timeout: float = 90.0) -> Any:
        raise NotImplementedError

    def _prepare_root(self, root: Optional[Path]) -> None:
        self._own_root = root is None
        self.root = Path(root or tempfile.mkdtemp(prefix="apache-kafka-"))
        (self.root / "tools-log4j2.properties").write_text(
            "status = error\nrootLogger.level = WARN\n"
        )


class ApacheKafka(_Brokers):
    """One combined KRaft node (broker and controller in one JVM), node id 1."""

    def __init__(
        self,
        listeners: Optional[Mapping[str, Optional[int]]] = None,
        properties: Optional[Mapping[str, str]] = None,
        root: Optional[Path] = None,
        features: Optional[Mapping[str, int]] = None,
    ) -> None:
        self._prepare_root(root)
        ports = {
            "PLAINTEXT": free_port(),
            **{k: v or free_port() for k, v in (listeners or {}).items()},
        }
        controller = free_port()
        props = {
            **_COMMON,
            **_listener_props(self.host, ports, controller),
            "controller.quorum.voters": f"1@{host_port(self.host, controller)}",
            "offsets.topic.replication.factor": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            **(properties or {}),
        }
        self.node = KafkaNode(1, "broker,controller", self.root / "node-1", ports, props, features)
        self.nodes = {1: self.node}

    @property
    def port(self) -> int:
        return self.node.listeners["PLAINTEXT"]

    @property
    def process(self) -> Optional[subprocess.Popen]:
        return self.node.process

    @property
    def log_file(self) -> Path:
        return self.node.log_file

    def start(self, timeout: float = 90.0) -> ApacheKafka:
        if not self.node.running:
            self._format_and_start(timeout)
        return self

    def kill(self) -> None:
        self.node.kill()

    def restart(self, timeout: float = 90.0) -> None:
        """Stops (controlled) and starts again on the same ports; topics and records are kept."""
        self.node.stop()
        self.node.start()
        self.wait_ready(timeout)


class ApacheKafkaCluster(_Brokers):
    """``brokers`` broker-only nodes (ids 1..n) and one controller-only node (id 100)."""

    def __init__(
        self,
        brokers: int = 3,
        properties: Optional[Mapping[str, str]] = None,
        root: Optional[Path] = None,
        features: Optional[Mapping[str, int]] = None,
    ) -> None:
        self._prepare_root(root)
        self.replication_factor = min(3, brokers)
        controller_port = free_port()
        voters = f"{CONTROLLER_ID}@{host_port(self.host, controller_port)}"
        shared = {
            **_COMMON,
            "controller.quorum.voters": voters,
            "controller.listener.names": "CONTROLLER",
            "default.replication.factor": str(self.replication_factor),
            "min.insync.replicas": str(min(2, brokers)),
            "offsets.topic.replication.factor": str(self.replication_factor),
            "transaction.state.log.replication.factor": str(self.replication_factor),
            "transaction.state.log.min.isr": str(min(2, brokers)),
            **(properties or {}),
        }
        self.nodes = {
            CONTROLLER_ID: KafkaNode(
                CONTROLLER_ID,
                "controller",
                self.root / f"node-{CONTROLLER_ID}",
                {},
                {
                    **shared,
                    "listeners": f"CONTROLLER://{host_port(self.host, controller_port)}",
                    "listener.security.protocol.map": "CONTROLLER:PLAINTEXT",
                },
                features,
            )
        }
        for i in range(1, brokers + 1):
            ports = {"PLAINTEXT": free_port()}
            props = {**shared, **_listener_props(self.host, ports, None)}
            self.nodes[i] = KafkaNode(i, "broker", self.root / f"node-{i}", ports, props, features)

    def start(self, timeout: float = 120.0) -> ApacheKafkaCluster:
        if not any(n.running for n in self.nodes.values()):
            self._format_and_start(timeout)
        return self

    def kill(self, node_id: int) -> None:
        """SIGKILL broker ``node_id``: its partitions' leadership moves once the controller
        notices (``broker.session.timeout.ms``)."""
        self.nodes[node_id].kill()

    def stop_brokers(self, order: Optional[Iterable[int]] = None) -> None:
        """Stops the running brokers one after the other (``order``: their ids; by id otherwise),
        each a controlled shutdown; the controller keeps running."""
        ids = list(order) if order is not None else [n.node_id for n in self.brokers]
        for node_id in ids:
            self.nodes[node_id].stop()

    def start_brokers(self, timeout: float = 90.0) -> None:
        """Starts every stopped broker (together), on its ports and data, and waits until each
        lists all of them."""
        for n in self.brokers:
            n.start()
        self.wait_ready(timeout)

    def move_broker(self, node_id: int) -> int:
        """Broker ``node_id`` (stopped) listens on a new PLAINTEXT port from its next start on;
        ``bootstrap_servers`` names it from now. Returns the port."""
        return self.nodes[node_id].move_listener("PLAINTEXT", self.host)

    def start_node(self, node_id: int, timeout: float = 120.0) -> None:
        """Starts a stopped or killed node again, on its ports and data, and waits until every
        broker lists it (after a kill the node first recovers its logs: a loaded machine makes
        that last)."""
        self.nodes[node_id].start()
        self.wait_ready(timeout)
