"""What type checkers see of cproducer's public API: mypy (and pyright, when installed) run on
``tests/typing/usage.py``, whose ``reveal_type`` calls must reveal the types their
``# reveal: T`` comments name, and on ``tests/typing/mistakes.py``, whose every line marked
``# error: code`` must be reported (and nothing else). The ``ProducerSettings`` TypedDict the
constructor's keywords are typed with is generated from the settings table: the committed module
must be what ``tools/generate_settings.py`` makes, and hold every keyword the producer takes."""

from __future__ import annotations

import importlib.util
import json
import re
import runpy
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Tuple

import pytest

from cproducer.producer import config
from cproducer.producer.settings import SETTING_NAMES, ProducerSettings

ROOT = Path(__file__).resolve().parent.parent
USAGE = ROOT / "tests" / "typing" / "usage.py"
MISTAKES = ROOT / "tests" / "typing" / "mistakes.py"


def _marked(path: Path, tag: str) -> Dict[int, str]:
    """{line: what its ``# tag: ...`` comment says}."""
    out = {}
    for number, line in enumerate(path.read_text().splitlines(), 1):
        match = re.search(rf"# {tag}: (.+)$", line)
        if match:
            out[number] = match.group(1).strip()
    return out


def _normalized(revealed: str) -> str:
    """mypy's revealed type as written in the source: a NamedTuple's ``tuple[..., fallback=X]``
    as X, names without their modules, ``def (...) -> X`` (a class's constructor) as X."""
    while True:
        shorter = re.sub(r"tuple\[[^\[\]]*?, fallback=([\w.]+)\]", r"\1", revealed)
        if shorter == revealed:
            break
        revealed = shorter
    revealed = re.sub(r"\b(?:[A-Za-z_]\w*\.)+([A-Za-z_]\w*)", r"\1", revealed)
    match = re.fullmatch(r"type\[(\w+)\]", revealed)  # pyright's class
    if match:
        return match.group(1)
    if revealed.startswith("def ") and " -> " in revealed:
        return revealed.rsplit(" -> ", 1)[1]
    return revealed


# ------------------------------------------------------------------ mypy
@pytest.fixture(scope="module")
def mypy_output(tmp_path_factory: pytest.TempPathFactory) -> Dict[str, List[Tuple[int, str]]]:
    """{file name: [(line, message)]} of one mypy run on both files, with the repo's config."""
    if importlib.util.find_spec("mypy") is None:
        pytest.skip("mypy is not installed")
    cache = tmp_path_factory.mktemp("mypy-cache")
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml")]
        + ["--cache-dir", str(cache), "--show-error-codes", "--no-pretty", str(USAGE)]
        + [str(MISTAKES)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    out: Dict[str, List[Tuple[int, str]]] = {USAGE.name: [], MISTAKES.name: []}
    for line in proc.stdout.splitlines():
        match = re.match(r"(.+?):(\d+): (.*)$", line)
        if match:
            out.setdefault(Path(match.group(1)).name, []).append(
                (int(match.group(2)), match.group(3))
            )
    return out


def test_mypy_reveals_the_public_types(mypy_output: Dict[str, List[Tuple[int, str]]]) -> None:
    expected = _marked(USAGE, "reveal")
    revealed = {}
    for line, message in mypy_output[USAGE.name]:
        match = re.fullmatch(r'note: Revealed type is "(.*)"', message)
        if match:
            revealed[line] = _normalized(match.group(1))
    assert revealed == expected


def test_mypy_finds_nothing_wrong_in_the_typed_usage(
    mypy_output: Dict[str, List[Tuple[int, str]]],
) -> None:
    assert [m for m in mypy_output[USAGE.name] if m[1].startswith("error")] == []


def test_mypy_reports_each_mistake_at_its_line(
    mypy_output: Dict[str, List[Tuple[int, str]]],
) -> None:
    expected = _marked(MISTAKES, "error")
    reported: Dict[int, str] = {}
    for line, message in mypy_output[MISTAKES.name]:
        match = re.match(r"error: .*\[([\w-]+)\]$", message)
        if match:
            assert line not in reported, (line, message)
            reported[line] = match.group(1)
    assert reported == expected
    assert len(expected) >= 5


def test_the_misspelt_keyword_gets_a_suggestion(
    mypy_output: Dict[str, List[Tuple[int, str]]],
) -> None:
    messages = [m for _line, m in mypy_output[MISTAKES.name]]
    assert any('"lingr_ms"' in m and 'did you mean "linger_ms"' in m for m in messages), messages


# ------------------------------------------------------------------ pyright
def _pyright() -> str:
    found = shutil.which("pyright", path=str(Path(sys.executable).parent)) or shutil.which(
        "pyright"
    )
    if found is None:
        pytest.skip("pyright is not installed (pip install pyright)")
    return found


@pytest.fixture(scope="module")
def pyright_output() -> Dict[str, List[Tuple[int, str, str]]]:
    """{file name: [(line, severity, message)]} of one pyright run on both files."""
    proc = subprocess.run(
        [_pyright(), "--outputjson", "--pythonpath", sys.executable, str(USAGE), str(MISTAKES)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    try:
        report = json.loads(proc.stdout)
    except ValueError:
        pytest.skip(f"pyright did not run: {(proc.stdout + proc.stderr)[-500:]}")
    out: Dict[str, List[Tuple[int, str, str]]] = {USAGE.name: [], MISTAKES.name: []}
    for diag in report["generalDiagnostics"]:
        out.setdefault(Path(diag["file"]).name, []).append(
            (diag["range"]["start"]["line"] + 1, diag["severity"], diag["message"])
        )
    return out


def test_pyright_reveals_the_public_types(
    pyright_output: Dict[str, List[Tuple[int, str, str]]],
) -> None:
    expected = _marked(USAGE, "reveal")
    revealed = {}
    for line, _severity, message in pyright_output[USAGE.name]:
        match = re.fullmatch(r'Type of ".*" is "(.*)"', message, re.DOTALL)
        if match:
            revealed[line] = _normalized(match.group(1))
    # pyright spells typing's aliases (Set[int]) as they are written in the signature
    assert {k: v.lower() for k, v in revealed.items()} == {
        k: v.lower() for k, v in expected.items()
    }
    assert [d for d in pyright_output[USAGE.name] if d[1] == "error"] == []


def test_pyright_reports_each_mistake(
    pyright_output: Dict[str, List[Tuple[int, str, str]]],
) -> None:
    lines = {line for line, severity, _m in pyright_output[MISTAKES.name] if severity == "error"}
    assert lines == set(_marked(MISTAKES, "error"))


# ------------------------------------------------------------------ the generated settings
def test_the_committed_settings_module_is_what_the_generator_makes() -> None:
    generator = runpy.run_path(str(ROOT / "tools" / "generate_settings.py"))
    assert generator["main"](["--check"]) == 0


def test_the_settings_are_every_python_spelled_keyword_the_producer_takes() -> None:
    taken = {a for a in config._ALIASES if "." not in a} | set(config._HOOKS)
    assert set(SETTING_NAMES) == taken - set(config.REFUSED)
    assert list(ProducerSettings.__annotations__) == list(SETTING_NAMES)
    assert not ProducerSettings.__required_keys__


def test_every_setting_is_taken_by_the_config() -> None:
    """Each keyword of the TypedDict is one ProducerConfig knows (none is refused as unknown)."""
    for name in SETTING_NAMES:
        assert name in config._ALIASES or name in config._HOOKS, name
        assert name not in config.REFUSED, name
