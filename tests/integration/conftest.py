"""A real broker (Tansu) for the whole test session; no test assumes one is running."""

from __future__ import annotations

from typing import Iterator

import pytest

from cproducer.localbroker import LocalBroker


@pytest.fixture(scope="session")
def broker() -> Iterator[LocalBroker]:
    with LocalBroker() as b:
        yield b
