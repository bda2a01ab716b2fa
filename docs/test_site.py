"""The built documentation site, as a reader's browser shows it: headless Chromium loads the pages
from a local HTTP server, and the rendered DOM must list every configuration key and every error
class of the code. Run by ``./dev.sh docs`` after the build (``CPRODUCER_DOCS_HTML`` names the
built site)."""

from __future__ import annotations

import functools
import html
import inspect
import os
import re
import shutil
import subprocess
import threading
import urllib.request
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Iterator, List

import pytest

from cproducer import errors
from cproducer.producer import config

SITE = Path(os.environ.get("CPRODUCER_DOCS_HTML", "build/docs/html")).resolve()


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    assert (SITE / "index.html").is_file(), f"no built site at {SITE}: run ./dev.sh docs"
    handler = functools.partial(_QuietHandler, directory=str(SITE))
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


def _rendered(url: str) -> str:
    """The DOM after Chromium loaded the page and ran its scripts."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    assert chromium, "Debian's chromium is needed (apt-get install chromium)"
    done = subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", url],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def _table_rows(dom: str, table_id: str) -> List[List[str]]:
    m = re.search(rf'<table[^>]*id="{table_id}".*?</table>', dom, flags=re.S)
    assert m, f"no table #{table_id} in the page"
    rows = []
    for row in re.findall(r"<tr[^>]*>(.*?)</tr>", m.group(0), flags=re.S):
        cells = re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", row, flags=re.S)
        rows.append([html.unescape(re.sub(r"<[^>]+>", "", c)).strip() for c in cells])
    return rows[1:]  # without the header row


def test_configuration_page_lists_every_key(server: str) -> None:
    dom = _rendered(f"{server}/reference/configuration.html")
    rows = {r[0]: r for r in _table_rows(dom, "config-table")}
    assert list(rows) == list(config.CONFIG_DEFS)
    for java, definition in config.CONFIG_DEFS.items():
        _, python_names, default, meaning = rows[java]
        assert java.replace(".", "_") in python_names.split(", ")
        assert meaning == re.sub(r"``(.+?)``", r"\1", definition.doc)  # inline code, as read
        assert default, java
    assert rows["linger.ms"][2] == str(config.CONFIG_DEFS["linger.ms"].default)


def test_error_page_lists_every_error_class(server: str) -> None:
    dom = _rendered(f"{server}/reference/errors.html")
    listed = set()
    for table in ("client-errors-table", "broker-errors-table"):
        for row in _table_rows(dom, table):
            cls = row[1] if table == "broker-errors-table" else row[0]
            listed.update(cls.split(", "))
    public = {
        name
        for name, obj in vars(errors).items()
        if inspect.isclass(obj) and issubclass(obj, errors.KafkaError)
    }
    assert public <= listed


def test_every_page_of_the_navigation_is_served(server: str) -> None:
    dom = _rendered(f"{server}/index.html")
    links = set(re.findall(r'class="reference internal" href="([^"#]+\.html)"', dom))
    assert {"getting-started.html", "reference/configuration.html", "performance.html"} <= links
    for link in sorted(links):
        with urllib.request.urlopen(f"{server}/{link}", timeout=30) as answer:
            page = answer.read().decode("utf-8")
        assert "<h1>" in page, link


def test_performance_page_shows_the_benchmark_plots(server: str) -> None:
    dom = _rendered(f"{server}/performance.html")
    images = re.findall(r'<img[^>]+src="([^"]+\.png)"', dom)
    assert len(images) >= 3
    for src in images:
        assert (SITE / src).is_file(), src
    assert _table_rows(dom, "peer-results")


def test_benchmark_history_links_the_asv_site(server: str) -> None:
    dom = _rendered(f"{server}/benchmark-history.html")
    assert 'href="asv/index.html"' in dom
    asv = _rendered(f"{server}/asv/index.html")
    assert "airspeed velocity" in asv.lower()
