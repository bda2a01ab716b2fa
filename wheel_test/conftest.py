"""The installed-wheel test run (``./dev.sh wheel-test``).

It runs from a scratch directory that holds a copy of ``tests/`` and of this directory's files,
with the interpreter of a fresh virtualenv where only the repaired wheel (and the test extra's
dependencies) were installed. Every test of the run must exercise that installed package: if
``cproducer`` were imported from anywhere else (a source tree on ``sys.path``), the run stops here.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import cproducer

INSTALLED = Path(cproducer.__file__).resolve().parent
PREFIX = Path(sys.prefix).resolve()

if PREFIX == Path(sys.base_prefix).resolve() or PREFIX not in INSTALLED.parents:
    raise pytest.UsageError(
        f"cproducer was imported from {INSTALLED}, not from the virtualenv {PREFIX}: "
        "this run must test the installed wheel"
    )


def pytest_report_header(config: pytest.Config) -> str:
    return f"cproducer {cproducer.__version__} installed at {INSTALLED}"
