"""Smoke test of the installed wheel: what a user who ran ``pip install cproducer`` gets, on a
machine without a compiler. Runs only inside ``./dev.sh wheel-test``, which copies it into the
scratch copy of ``tests/integration/`` (for the broker fixtures) and runs it there with the
integration tests, under this directory's conftest.py."""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from typing import Callable

import pytest

import cproducer
from cproducer import KafkaProducer, LocalBroker
from tests.integration.readback import read_back


def test_the_installed_wheel_is_a_repaired_manylinux_wheel() -> None:
    dist = importlib.metadata.distribution("cproducer")
    tags = [line.split(": ", 1)[1] for line in dist.read_text("WHEEL").splitlines() if ": " in line]
    assert any("manylinux" in t for t in tags if t.startswith("cp")), tags
    assert dist.version == cproducer.__version__


def test_every_extension_module_is_a_compiled_file_of_the_wheel() -> None:
    site = Path(cproducer.__file__).resolve().parent.parent
    files = {str(f) for f in importlib.metadata.files("cproducer") or []}
    # the wheel ships each extension's .pyx (for cimport): each must have its compiled module
    sources = sorted(f for f in files if f.endswith(".pyx"))
    assert len(sources) >= 8, sources
    for source in sources:
        name = source[: -len(".pyx")].replace("/", ".")
        module = importlib.import_module(name)
        path = Path(module.__file__ or "").resolve()
        assert path.suffix == ".so" and path.is_relative_to(site), (name, path)
        assert str(path.relative_to(site)) in files, f"{path} is not one of the wheel's files"
    assert not [f for f in files if f.endswith(".c")], "generated C sources shipped in the wheel"


def test_no_compiler_and_no_cython_were_needed() -> None:
    assert importlib.util.find_spec("Cython") is None
    for cc in (os.environ.get("CC", "cc"), "cc", "gcc"):
        try:
            done = subprocess.run([cc, "--version"], capture_output=True, timeout=30)
        except FileNotFoundError:
            continue
        assert done.returncode != 0, f"a working C compiler ({cc}) is on the PATH"


def test_console_script_prints_the_version() -> None:
    script = Path(sys.executable).parent / "cproducer-perf-test"
    out = subprocess.run([str(script), "--version"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"cproducer-perf-test {cproducer.__version__}"


def test_send_and_send_many_reach_the_broker(
    broker: LocalBroker, new_topic: Callable[..., str]
) -> None:
    topic = new_topic(partitions=3)
    with KafkaProducer(bootstrap_servers=broker.bootstrap_servers, compression_type="lz4") as p:
        futures = [p.send(topic, b"v%d" % i, key=b"k%d" % (i % 7)) for i in range(500)]
        result = p.send_many(topic, [b"m%d" % i for i in range(500)], keys=None).get(timeout=60)
        offsets = [f.get(timeout=60).offset for f in futures]
    assert result.delivered == 500 and not result.errors
    assert min(offsets) >= 0
    values = sorted(r.value for r in read_back(broker.bootstrap_servers, topic, 3, 1000))
    assert values == sorted([b"v%d" % i for i in range(500)] + [b"m%d" % i for i in range(500)])


@pytest.mark.parametrize("codec", ["gzip", "snappy", "zstd"])
def test_optional_codecs_work_from_the_wheel(
    broker: LocalBroker, new_topic: Callable[..., str], codec: str
) -> None:
    topic = new_topic(partitions=1)
    with KafkaProducer(bootstrap_servers=broker.bootstrap_servers, compression_type=codec) as p:
        p.send_many(topic, [b"x" * 100] * 200).get(timeout=60)
    assert len(read_back(broker.bootstrap_servers, topic, 1, 200)) == 200
