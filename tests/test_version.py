"""One version everywhere: the wheel's metadata, ``cproducer.__version__``, the perf CLI's
``--version``, the client software version ApiVersions sends, and CHANGELOG.md's latest release."""

from __future__ import annotations

import importlib.metadata
import re
from pathlib import Path

import pytest
from setuptools.config.expand import read_attr
from setuptools.config.pyprojecttoml import read_configuration

import cproducer
from cproducer.perf import main as perf_main
from cproducer.protocol.api_versions import ApiVersionsRequest
from cproducer.protocol.primitives import Reader

ROOT = Path(__file__).resolve().parents[1]


def test_version_is_a_release_number() -> None:
    assert re.fullmatch(r"\d+\.\d+\.\d+(?:(?:a|b|rc)\d+)?", cproducer.__version__)


def test_the_build_reads_the_version_from_cproducer_version_module() -> None:
    config = read_configuration(ROOT / "pyproject.toml", expand=False)
    assert "version" not in config["project"], "pyproject.toml must not hold a second version"
    assert config["project"]["dynamic"] == ["version"]
    attr = config["tool"]["setuptools"]["dynamic"]["version"]["attr"]
    assert read_attr(attr, root_dir=ROOT) == cproducer.__version__


def test_installed_metadata_matches() -> None:
    # the editable install (./dev.sh) and the wheel both take it from cproducer/_version.py
    assert importlib.metadata.version("cproducer") == cproducer.__version__


def test_perf_cli_prints_the_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        perf_main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.strip() == f"cproducer-perf-test {cproducer.__version__}"


def test_api_versions_v3_reports_the_version_to_the_broker() -> None:
    (body,) = ApiVersionsRequest().encode_body(3)
    r = Reader(memoryview(bytes(body)))
    assert r.string(compact=True) == "cproducer"
    assert r.string(compact=True) == cproducer.__version__


def test_changelog_latest_release_is_this_version() -> None:
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    releases = re.findall(r"^## \[(\d[^\]]*)\]", text, flags=re.MULTILINE)
    assert releases, "CHANGELOG.md has no '## [x.y.z]' release section"
    assert releases[0] == cproducer.__version__
