"""What a completion callback may call on its own producer (callbacks run on the producer's I/O
thread, as in Java): ``flush()`` there would wait for that very thread, so it raises
IllegalStateError at once (Java 4.x: KafkaProducer.flush from the I/O thread throws); ``close()``
there closes without waiting for the thread (Java: close with the timeout overridden to 0)."""

from __future__ import annotations

import threading
from typing import Any, Callable, List, Optional

from cproducer import KafkaProducer, errors
from cproducer.localbroker import LocalBroker
from tests.integration.readback import assert_delivered, read_back


def test_flush_in_a_callback_raises_instead_of_deadlocking(
    broker: LocalBroker, new_topic: Callable[..., str]
) -> None:
    topic = new_topic(1)
    raised: List[BaseException] = []
    done = threading.Event()
    with KafkaProducer(bootstrap_servers=broker.bootstrap_servers) as p:

        def cb(md: Any, exc: Optional[BaseException]) -> None:
            try:
                p.flush()  # no timeout: it would never return
            except BaseException as e:
                raised.append(e)
            finally:
                done.set()

        p.send(topic, b"first", callback=cb)
        assert done.wait(10), "flush() in the callback did not return"
        later = p.send(topic, b"second")
        p.flush(10)  # from the application's thread it works as ever
        assert later.get(0).offset == 1
    assert len(raised) == 1 and isinstance(raised[0], errors.IllegalStateError)
    assert "flush() was called from a completion callback" in str(raised[0])
    assert_delivered(read_back(broker.bootstrap_servers, topic, 1, 2), [b"first", b"second"])


def test_close_in_a_callback_closes_without_waiting_for_itself(
    broker: LocalBroker, new_topic: Callable[..., str]
) -> None:
    topic = new_topic(1)
    raised: List[BaseException] = []
    done = threading.Event()
    p = KafkaProducer(bootstrap_servers=broker.bootstrap_servers, linger_ms=60000)

    def cb(md: Any, exc: Optional[BaseException]) -> None:
        try:
            p.close()
        except BaseException as e:
            raised.append(e)
        finally:
            done.set()

    p.send(topic, b"first", callback=cb)
    pending = p.send(topic, b"second", partition=0)
    p.flush(10)  # both records went in one batch; its first callback closes the producer
    assert done.wait(10)
    assert raised == []
    assert p.closed
    p._sender.thread.join(10)
    assert not p._sender.thread.is_alive()
    assert pending.get(0).offset == 1  # completed in the same batch, before the close
