"""A real broker (Tansu) for the whole test session; no test assumes one is running. Test
certificates (made by the openssl CLI) for the TLS and SASL_SSL tests."""

from __future__ import annotations

import itertools
import re
import subprocess
import uuid
from pathlib import Path
from typing import Callable, Dict, Iterator

import pytest

from cproducer.localbroker import LocalBroker

_SEQ = itertools.count()


@pytest.fixture(scope="session")
def broker() -> Iterator[LocalBroker]:
    with LocalBroker() as b:
        yield b


@pytest.fixture
def new_topic(broker: LocalBroker, request: pytest.FixtureRequest) -> Callable[..., str]:
    """``new_topic(partitions=N)``: creates a topic with a unique name on the session broker and
    returns its name once Metadata shows all N partitions with a leader."""
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", request.node.name).strip("-")[:60]  # legal chars

    def make(partitions: int = 1) -> str:
        name = f"{stem}-{next(_SEQ)}-{uuid.uuid4().hex[:6]}"
        broker.create_topic(name, partitions)
        return name

    return make


@pytest.fixture
def topic_factory(new_topic: Callable[..., str]) -> Callable[..., str]:
    """The same factory under another name."""
    return new_topic


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def _issue(d: Path, name: str, subject_alt_name: str) -> None:
    """``name``.key/.pem signed by the CA in ``d``."""
    ext = d / f"{name}.ext"
    ext.write_text(f"subjectAltName={subject_alt_name}\n")
    key, csr, pem = f"{name}.key", f"{name}.csr", f"{name}.pem"
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-subj", f"/CN={name}",
             "-out", csr, cwd=d)  # fmt: skip
    _openssl("x509", "-req", "-in", csr, "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
             "-days", "2", "-extfile", ext.name, "-out", pem, cwd=d)  # fmt: skip


@pytest.fixture(scope="session")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Dict[str, str]:
    d = tmp_path_factory.mktemp("tls")
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-subj",
             "/CN=cproducer test CA", "-days", "2", "-out", "ca.pem", cwd=d)  # fmt: skip
    _issue(d, "broker", "IP:127.0.0.1,DNS:localhost")
    _issue(d, "elsewhere", "DNS:broker.elsewhere.example")
    _issue(d, "client", "DNS:client")
    # a keystore as Java's PEM keystores hold it: the certificate chain and the key in one file
    (d / "client-keystore.pem").write_text(
        (d / "client.pem").read_text() + (d / "client.key").read_text()
    )
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "other-ca.key", "-subj",
             "/CN=another CA", "-days", "2", "-out", "other-ca.pem", cwd=d)  # fmt: skip
    return {p.stem if p.suffix == ".pem" else p.name: str(p) for p in d.iterdir()}
