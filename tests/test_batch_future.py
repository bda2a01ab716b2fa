"""BatchFuture: a send_many call's segments fill its records' partitions and offsets."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from cproducer.errors import KafkaTimeoutError
from cproducer.producer.batch_future import BatchFuture
from cproducer.producer.send_many import fill_segment


def test_segments_in_call_order_and_through_an_order_array() -> None:
    bf = BatchFuture("t", 6)
    order = np.array([4, 1, 5, 0, 2, 3], dtype=np.int64)  # the call's records, by partition
    bf.complete_segment(order, 0, 3, 2, 100, 7, None)  # records 4, 1, 5 at offsets 107..109
    assert not bf.done()
    bf.complete_segment(order, 3, 5, 0, 50, 0, None)  # records 0, 2 at 50, 51
    bf.complete_segment(order, 5, 6, 1, -1, 0, None)  # record 3, acks=0: no offset
    result = bf.get(timeout=1)
    assert result.partitions.tolist() == [0, 2, 0, 1, 2, 2]
    assert result.offsets.tolist() == [50, 108, 51, -1, 107, 109]
    assert result.errors == {} and result.delivered == 6


def test_a_failed_segment_names_each_of_its_records() -> None:
    bf = BatchFuture("t", 4)
    bf.complete_segment(None, 0, 2, 3, 10, 0, None)
    error = KafkaTimeoutError("expired")
    bf.complete_segment(None, 2, 4, 3, 99, 0, error)
    result = bf.get(timeout=1)
    assert result.offsets.tolist() == [10, 11, -1, -1]
    assert result.partitions.tolist() == [3, 3, 3, 3]
    assert result.errors == {2: error, 3: error} and result.delivered == 2


def test_fill_segment_refuses_arrays_it_cannot_fill() -> None:
    parts, offs = np.full(3, -1, np.int32), np.full(3, -1, np.int64)
    with pytest.raises(TypeError, match="int32"):
        fill_segment(parts.astype(np.int64), offs, None, 0, 3, 0, 0)
    with pytest.raises(TypeError, match="order"):
        fill_segment(parts, offs, np.arange(3, dtype=np.int32), 0, 3, 0, 0)
    with pytest.raises(ValueError, match="past the 3 records"):
        fill_segment(parts, offs, None, 1, 4, 0, 0)
    with pytest.raises(IndexError, match=r"order\[0\] = 7"):
        fill_segment(parts, offs, np.array([7, 0, 1], np.int64), 0, 3, 0, 0)


def test_get_waits_for_the_last_segment_and_callbacks_run_once() -> None:
    bf = BatchFuture("t", 3)
    with pytest.raises(KafkaTimeoutError, match="3 records not complete"):
        bf.get(timeout=0.01)
    calls = []
    bf.add_callback(lambda result, tag: calls.append((tag, result.delivered)), "early")
    got = []
    waiter = threading.Thread(target=lambda: got.append(bf.get(timeout=5)))
    waiter.start()
    bf.complete_segment(None, 0, 2, 0, 7, 0, None)
    time.sleep(0.02)
    assert waiter.is_alive() and not bf.done() and calls == []
    bf.complete_segment(None, 2, 3, 1, 9, 0, None)
    waiter.join(5)
    assert got and got[0].offsets.tolist() == [7, 8, 9] and bf.done()
    bf.add_callback(lambda result, tag: calls.append((tag, result.delivered)), "late")
    assert calls == [("early", 3), ("late", 3)]


def test_a_segment_beyond_the_records_left_is_refused() -> None:
    bf = BatchFuture("t", 4)
    bf.complete_segment(None, 0, 3, 0, 0, 0, None)
    with pytest.raises(ValueError, match="segment of 2 records, but only 1"):
        bf.complete_segment(None, 2, 4, 0, 0, 0, None)
    assert not bf.done() and bf.partitions.tolist() == [0, 0, 0, -1]


def test_an_empty_call_and_a_call_failed_whole_are_done_at_once() -> None:
    assert BatchFuture("t", 0).get(timeout=0).count == 0
    bf = BatchFuture("t", 2)
    error = KafkaTimeoutError("no memory")
    bf.fail_all(error)
    result = bf.get(timeout=0)
    assert result.errors == {0: error, 1: error} and result.delivered == 0
