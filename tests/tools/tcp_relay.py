"""A TCP relay whose target can change while it runs: a stable bootstrap address in front of
clusters that come and go (rebootstrap tests), or an IPv6 front for an IPv4-only listener.

``TcpRelay(target, host="127.0.0.1").start()`` listens on a free port of ``host`` and copies bytes
both ways between each client and a fresh connection to ``target`` (``(host, port)``).
``retarget(new)`` sends new connections elsewhere and cuts the current ones. ``connections``
counts the connections accepted.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any, Optional, Set, Tuple


class TcpRelay:
    def __init__(self, target: Tuple[str, int], host: str = "127.0.0.1") -> None:
        self.target = target
        self.host = host
        self.port = 0
        self.connections = 0
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._server: Optional[Any] = None
        self._writers: Set[asyncio.StreamWriter] = set()

    @property
    def address(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"

    def start(self) -> TcpRelay:
        self._thread.start()
        self._call(self._listen())
        return self

    def retarget(self, target: Tuple[str, int]) -> None:
        self.target = target
        self._call(self._cut())

    def close(self) -> None:
        self._call(self._shutdown())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)

    def __enter__(self) -> TcpRelay:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _call(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(10)

    async def _listen(self) -> None:
        self._server = await asyncio.start_server(self._serve, self.host, 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _cut(self) -> None:
        for w in list(self._writers):
            w.close()

    async def _shutdown(self) -> None:
        if self._server is not None:
            self._server.close()
        await self._cut()
        tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.target)
        except OSError:
            writer.close()
            return
        self._writers.update((writer, up_writer))

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            try:
                while True:
                    data = await src.read(65536)
                    if not data:
                        break
                    dst.write(data)
                    await dst.drain()
            except (OSError, asyncio.CancelledError):
                pass
            finally:
                dst.close()

        try:
            await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))
        finally:
            self._writers.discard(writer)
            self._writers.discard(up_writer)
