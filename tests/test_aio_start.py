"""AIOKafkaProducer.start() with no bootstrap server reachable: aiokafka tries each once and
raises KafkaConnectionError at once; the facade does the same (run on aiokafka too)."""

from __future__ import annotations

import asyncio
import socket
import time
from types import ModuleType

import aiokafka
import aiokafka.errors
import pytest

import cproducer.aio
import cproducer.aio.errors


def _refused() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"


@pytest.mark.parametrize(
    "impl, errs",
    [(aiokafka, aiokafka.errors), (cproducer.aio, cproducer.aio.errors)],
    ids=["aiokafka", "cproducer.aio"],
)
@pytest.mark.parametrize("servers", ["refused", "refused,no-such-host.invalid:9092"])
def test_start_fails_at_once_when_no_bootstrap_server_answers(
    impl: ModuleType, errs: ModuleType, servers: str
) -> None:
    bootstrap = servers.replace("refused", _refused())

    async def start() -> float:
        # request_timeout_ms is aiokafka's bound on the whole start(): the refusal must not wait
        p = impl.AIOKafkaProducer(bootstrap_servers=bootstrap, request_timeout_ms=20000)
        began = time.monotonic()
        try:
            with pytest.raises(errs.KafkaConnectionError, match="Unable to bootstrap from"):
                await p.start()
            return time.monotonic() - began
        finally:
            await p.stop()

    assert asyncio.run(start()) < 2.0
