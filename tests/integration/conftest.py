"""A real broker (Tansu) for the whole test session; no test assumes one is running."""

from __future__ import annotations

import itertools
import re
import uuid
from typing import Callable, Iterator

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
