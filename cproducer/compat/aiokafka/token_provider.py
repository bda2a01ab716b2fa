"""aiokafka's OAUTHBEARER token provider, for the engine.

aiokafka's ``AbstractTokenProvider.token()`` is a coroutine; the engine asks for a token with a
plain call on its I/O thread, at each (re)authentication. ``LoopTokenProvider`` runs the
coroutine on the producer's event loop and waits for it there, on the I/O thread: the loop is
never blocked, and the provider runs where aiokafka runs it (its own awaits, its HTTP client
sessions). A provider whose ``token()`` is a plain function is called directly.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from typing import Any, Dict


async def _await(awaitable: Any) -> Any:
    return await awaitable


class LoopTokenProvider:
    """The engine's token provider (``token()``, ``extensions()``) over aiokafka's."""

    def __init__(self, provider: Any, loop: asyncio.AbstractEventLoop, timeout_s: float) -> None:
        self._provider = provider
        self._loop = loop
        self._timeout_s = timeout_s
        self._loop_thread = threading.get_ident()  # made on the loop's thread

    def token(self) -> Any:
        got = self._provider.token()
        if not inspect.isawaitable(got):
            return got
        if threading.get_ident() == self._loop_thread:
            # waiting here would block the loop the coroutine needs
            close = getattr(got, "close", None)
            if close is not None:
                close()
            raise RuntimeError("an async token provider cannot be awaited on its own loop's thread")
        return asyncio.run_coroutine_threadsafe(_await(got), self._loop).result(self._timeout_s)

    def extensions(self) -> Dict[str, str]:
        extensions = getattr(self._provider, "extensions", None)
        return dict(extensions()) if callable(extensions) else {}

    def __repr__(self) -> str:
        return f"LoopTokenProvider({type(self._provider).__name__})"  # never a token
