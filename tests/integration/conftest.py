"""Real brokers for the whole test session; no test assumes one is running.

``broker`` is a parameter of every test that takes it: each such test runs against Tansu (the
embedded broker, ``tansu_broker``) and against Apache Kafka (one combined KRaft node,
``kafka_broker``), marked ``tansu`` and ``kafka`` (``-m "not kafka"`` runs one only). A test
about Tansu itself takes ``tansu_broker``. A failing test against Apache Kafka prints the end of
the broker's log. Test certificates (made by the openssl CLI) for the TLS and SASL_SSL tests."""

from __future__ import annotations

import itertools
import re
import subprocess
import uuid
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, Union

import pytest

from cproducer.localbroker import LocalBroker
from tests.tools.apache_kafka import ApacheKafka

_SEQ = itertools.count()

Broker = Union[LocalBroker, ApacheKafka]


@pytest.fixture(scope="session")
def tansu_broker() -> Iterator[LocalBroker]:
    with LocalBroker() as b:
        yield b


@pytest.fixture(scope="session")
def kafka_broker() -> Iterator[ApacheKafka]:
    with ApacheKafka() as b:
        yield b


@pytest.fixture(
    scope="session",
    params=[
        pytest.param("tansu", marks=pytest.mark.tansu),
        pytest.param("kafka", marks=pytest.mark.kafka),
    ],
)
def broker(request: pytest.FixtureRequest) -> Broker:
    return request.getfixturevalue(f"{request.param}_broker")  # type: ignore[no-any-return]


def is_tansu(broker: Any) -> bool:
    """For the few checks that name a Tansu-only behaviour (a limit of Tansu's, not Kafka's)."""
    return isinstance(broker, LocalBroker)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Any:
    report = yield
    if report.failed:
        b = getattr(item, "funcargs", {}).get("broker")
        if isinstance(b, ApacheKafka):
            report.sections.append(("Apache Kafka broker log (end)", b.log_tail(60)))
    return report


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
