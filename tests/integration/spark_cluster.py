"""A Spark standalone cluster on loopback: one master and N workers, each a JVM of its own.

Started from pyspark's own ``bin/spark-class`` (``org.apache.spark.deploy.master.Master`` and
``org.apache.spark.deploy.worker.Worker``), as a production cluster is, so an application's
executors are separate JVMs (``CoarseGrainedExecutorBackend``, children of their worker) with
their own Python workers. ``executors()`` finds them among the children of the worker processes
this object started; ``kill_executor(pid)`` ends one of them.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from typing import Callable, Dict, List, Optional

from cproducer.localbroker import free_port


def spark_home() -> str:
    import pyspark

    return os.path.dirname(pyspark.__file__)


def cluster_env(work_dir: str) -> Dict[str, str]:
    """The environment of the cluster's processes and of a driver talking to it."""
    env = dict(os.environ)
    env.update(
        SPARK_HOME=spark_home(),
        SPARK_LOCAL_IP="127.0.0.1",
        SPARK_LOCAL_DIRS=os.path.join(work_dir, "local"),
        SPARK_LOG_DIR=os.path.join(work_dir, "logs"),
        PYSPARK_PYTHON=sys.executable,
        PYSPARK_DRIVER_PYTHON=sys.executable,
        SPARK_DAEMON_MEMORY="256m",  # the master's and workers' own heaps
        # the executors' Python workers import the package under test from this checkout
        PYTHONPATH=os.pathsep.join(p for p in (os.getcwd(), env.get("PYTHONPATH")) if p),
    )
    return env


def _children(pid: int) -> List[int]:
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                stat = fh.read()
        except OSError:
            continue
        # the command may contain spaces and parentheses: the ppid follows the last ')'
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            out.append(int(entry))
    return out


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return ""


class StandaloneCluster:
    def __init__(self, workers: int = 2, cores: int = 1, memory: str = "1g") -> None:
        self.work_dir = tempfile.mkdtemp(prefix="spark-standalone-")
        self.env = cluster_env(self.work_dir)
        self.port = free_port()
        self.web_port = free_port()
        self.url = f"spark://127.0.0.1:{self.port}"
        self.n_workers = workers
        self.cores = cores
        self.memory = memory
        self.master: Optional[subprocess.Popen] = None
        self.workers: List[subprocess.Popen] = []

    def _spark_class(
        self, *args: str, log: str, env: Optional[Dict[str, str]] = None
    ) -> subprocess.Popen:
        out = open(os.path.join(self.work_dir, log), "ab")
        try:
            return subprocess.Popen(
                [os.path.join(spark_home(), "bin", "spark-class"), *args],
                env=env or self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        finally:
            out.close()

    def start(self, timeout_s: float = 90.0) -> StandaloneCluster:
        """Start the master and the workers; returns once the master answers (the workers
        register meanwhile: ``wait_for_workers``)."""
        self.master = self._spark_class(
            "org.apache.spark.deploy.master.Master",
            "--host", "127.0.0.1", "--port", str(self.port),
            "--webui-port", str(self.web_port),
            log="master.log",
        )  # fmt: skip
        for i in range(self.n_workers):
            # each worker on a loopback address of its own: Spark sees hosts as many as the
            # workers (it never runs a speculative copy of a task on its first attempt's host)
            host = f"127.0.0.{i + 1}"
            self.workers.append(
                self._spark_class(
                    "org.apache.spark.deploy.worker.Worker",
                    "--host",
                    host,
                    "--cores",
                    str(self.cores),
                    "--memory",
                    self.memory,
                    "--webui-port",
                    str(free_port()),
                    "--work-dir",
                    os.path.join(self.work_dir, f"worker-{i}"),
                    self.url,
                    log=f"worker-{i}.log",
                    env={**self.env, "SPARK_LOCAL_IP": host},
                )  # fmt: skip
            )
        self._wait(lambda: bool(self.master_state()), timeout_s, "the master did not answer")
        return self

    def wait_for_workers(self, timeout_s: float = 120.0) -> None:
        self._wait(
            lambda: len(self.alive_workers()) == self.n_workers,
            timeout_s,
            f"{self.n_workers} workers did not register",
        )

    def _wait(self, condition: Callable[[], bool], timeout_s: float, what: str) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for proc in [self.master, *self.workers]:
                if proc is not None and proc.poll() is not None:
                    tail = self.log_tail()
                    self.stop()
                    raise RuntimeError(f"a Spark daemon exited:\n{tail}")
            if condition():
                return
            time.sleep(0.2)
        tail = self.log_tail()
        self.stop()
        raise TimeoutError(f"{what} within {timeout_s} s:\n{tail}")

    def master_state(self) -> Dict:
        try:
            with urllib.request.urlopen(
                f"http://127.0.0.1:{self.web_port}/json/", timeout=2
            ) as resp:
                return json.load(resp)
        except (OSError, ValueError):  # (not JSON: another process's page on a reused port)
            return {}

    def alive_workers(self) -> List[Dict]:
        return [w for w in self.master_state().get("workers", []) if w.get("state") == "ALIVE"]

    def executors(self) -> Dict[int, List[int]]:
        """worker pid -> pids of its executor JVMs."""
        return {
            w.pid: [c for c in _children(w.pid) if "CoarseGrainedExecutorBackend" in _cmdline(c)]
            for w in self.workers
        }

    def kill_executor(self, pid: int) -> None:
        """SIGKILL an executor JVM of this cluster (refuses any other process)."""
        if not any(pid in pids for pids in self.executors().values()):
            raise LookupError(f"process {pid} is no executor of this cluster's workers")
        os.kill(pid, signal.SIGKILL)

    def log_tail(self, lines: int = 30) -> str:
        out = []
        for name in sorted(os.listdir(self.work_dir)):
            if name.endswith(".log"):
                with open(os.path.join(self.work_dir, name), "rb") as fh:
                    tail = fh.read().splitlines()[-lines:]
                out.append(f"--- {name}\n" + b"\n".join(tail).decode("utf-8", "replace"))
        return "\n".join(out)

    def stop(self) -> None:
        for proc in [*self.workers, self.master]:
            if proc is not None and proc.poll() is None:
                proc.terminate()
        for proc in [*self.workers, self.master]:
            if proc is None:
                continue
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self.workers = []
        self.master = None
        shutil.rmtree(self.work_dir, ignore_errors=True)

    def __enter__(self) -> StandaloneCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
