"""Every ```python block of the README and the docs' pages runs as a script against a local broker.

A block is a self-contained script: its imports, its data and its producer. Each one runs in a
child process (as a reader would run it) with ``localhost:9092`` replaced by the address of the
module's Tansu broker, on which the topics the snippets use exist beforehand. A block that needs
what a test cannot give (a managed cluster's credentials, a SASL or TLS broker, a consumer group)
carries ``<!-- snippet: not run (why) -->`` on the line before its fence; those are counted, and
their number has to stay small."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Iterator, List, NamedTuple, Optional

import pytest

from cproducer.localbroker import LocalBroker

ROOT = Path(__file__).resolve().parents[2]
PAGES = [
    ROOT / "README.md",
    ROOT / "docs" / "getting-started.md",
    ROOT / "docs" / "troubleshooting.md",
    ROOT / "docs" / "logging.md",
    *sorted((ROOT / "docs" / "guides").glob("*.md")),
    *sorted((ROOT / "docs" / "migration").glob("*.md")),
]
# the topics the snippets write to, created before any of them runs
TOPICS = {"events": 6, "orders": 3, "order-lines": 3, "in": 3, "out": 3, "users": 3}
MAX_NOT_RUN = 10  # 9 today: managed clusters, SASL, TLS
SNIPPET_TIMEOUT = 180  # seconds; the Spark ones start a local JVM

_FENCE = re.compile(r"^(`{3,})python\s*$")
_MARK = re.compile(r"^<!--\s*snippet:\s*not run\s*\((.+)\)\s*-->\s*$")


class Snippet(NamedTuple):
    page: Path
    line: int  # of the opening fence, 1-based
    code: str
    not_run: Optional[str]  # the reason, for a marked block

    @property
    def id(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def extract(page: Path) -> Iterator[Snippet]:
    lines = page.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        start, fence = i, m.group(1)
        j = i + 1
        while j < len(lines) and lines[j].rstrip() != fence:
            j += 1
        prev = next((ln for ln in reversed(lines[:start]) if ln.strip()), "")
        mark = _MARK.match(prev.strip())
        yield Snippet(
            page, start + 1, "\n".join(lines[start + 1 : j]) + "\n", mark.group(1) if mark else None
        )
        i = j + 1


SNIPPETS: List[Snippet] = [s for page in PAGES if page.exists() for s in extract(page)]


def test_snippets_found() -> None:
    assert len(SNIPPETS) >= 20, [s.id for s in SNIPPETS]
    for page in PAGES:
        assert page.exists(), page


def test_few_not_run() -> None:
    not_run = [f"{s.id}: {s.not_run}" for s in SNIPPETS if s.not_run]
    assert len(not_run) <= MAX_NOT_RUN, "\n".join(not_run)


@pytest.fixture(scope="module")
def doc_broker() -> Iterator[LocalBroker]:
    with LocalBroker() as broker:
        for name, partitions in TOPICS.items():
            broker.create_topic(name, partitions)
        yield broker


@pytest.mark.tansu
@pytest.mark.parametrize("snippet", [s for s in SNIPPETS if not s.not_run], ids=lambda s: s.id)
def test_snippet_runs(snippet: Snippet, doc_broker: LocalBroker, tmp_path: Path) -> None:
    code = snippet.code.replace("localhost:9092", doc_broker.bootstrap_servers)
    script = tmp_path / "snippet.py"
    script.write_text(code, encoding="utf-8")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    env.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    proc = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=SNIPPET_TIMEOUT,
    )
    assert proc.returncode == 0, (
        f"{snippet.id} failed (exit {proc.returncode})\n--- code\n{code}"
        f"--- stdout\n{proc.stdout[-3000:]}\n--- stderr\n{proc.stderr[-6000:]}"
    )
