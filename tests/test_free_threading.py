"""Free-threaded Python (PEP 703): every extension module says whether it runs without the GIL.

A module marked ``freethreading_compatible=True`` keeps its shared state under the native mutexes
(or has none); one marked False makes a free-threaded interpreter turn the GIL back on when it is
imported. The decision must be written down for every module, so a new module cannot inherit one
by accident, and the build must use a Cython that knows the directive.
"""

from __future__ import annotations

import re
from pathlib import Path

from setuptools.config.pyprojecttoml import read_configuration

ROOT = Path(__file__).resolve().parents[1]
PYX = sorted((ROOT / "cproducer").rglob("*.pyx"))
DIRECTIVE = re.compile(r"^# cython:.*\bfreethreading_compatible\s*=\s*(True|False)\b", re.MULTILINE)

#: the modules that run without the GIL, each for the reason its header states
WITHOUT_GIL = {
    "cproducer/utils/crc32c.pyx",  # stateless
    "cproducer/utils/murmur2.pyx",  # stateless
    "cproducer/producer/internals/buffer_pool.pyx",  # its native mutex
    "cproducer/record/record_batch_builder.pyx",  # the partition deque's native mutex
    "cproducer/record/record_batch_reader.pyx",  # stateless, reads a builder held by its caller
    "cproducer/record/lz4_frame.pyx",  # one shared lz4 state in GIL builds, one per call without
    "cproducer/utils/fast_lock.pyx",  # the native mutex itself
    "cproducer/compat/confluent/partitioners.pyx",  # stateless (its table is built at import)
    "cproducer/protocol/reader.pyx",  # no shared state: a Reader is used by one thread
    "cproducer/protocol/writer.pyx",  # no shared state: a Writer is filled by one thread
}


def _header(path: Path) -> str:
    lines = path.read_text(encoding="utf-8").splitlines()
    head = []
    for line in lines:
        if not line.startswith("#"):
            break
        head.append(line)
    return "\n".join(head)


def test_every_extension_module_declares_its_gil_use() -> None:
    assert len(PYX) >= 8
    undeclared = [str(p.relative_to(ROOT)) for p in PYX if not DIRECTIVE.search(_header(p))]
    assert not undeclared, f"add '# cython: freethreading_compatible=True|False' to {undeclared}"


def test_only_the_mutex_guarded_or_stateless_modules_run_without_the_gil() -> None:
    declared = {
        str(p.relative_to(ROOT).as_posix())
        for p in PYX
        if (m := DIRECTIVE.search(_header(p))) and m.group(1) == "True"
    }
    assert declared == WITHOUT_GIL


def test_build_requires_a_cython_that_knows_the_directive() -> None:
    requires = read_configuration(ROOT / "pyproject.toml", expand=False)["build-system"]["requires"]
    cython = [r for r in requires if r.lower().startswith("cython")]
    assert cython == ["Cython>=3.1"]  # freethreading_compatible came with Cython 3.1
