"""ProducerMetadata: versions, await_update across threads, backoff, expiry, topic errors."""

from __future__ import annotations

import threading
import time

import pytest

from cproducer import errors
from cproducer.cluster import Node, TopicPartition
from cproducer.producer.internals.producer_metadata import ProducerMetadata
from cproducer.protocol import MetadataResponse, PartitionMetadata, TopicMetadata

N = Node(1, "h", 9092)


def response(*topics, brokers=(N,)):
    return MetadataResponse(0, list(brokers), "cid", 1, list(topics))


def topic(name, n=2, err=0, leader=1, epoch=0):
    parts = [PartitionMetadata(0, p, leader, epoch, [1], [1], []) for p in range(n)]
    return TopicMetadata(err, name, False, parts if err == 0 else [])


def test_add_update_fetch_and_versions() -> None:
    md = ProducerMetadata(topic_time_ms=lambda: 0)
    md.bootstrap([("h", 9092)])
    assert [n.id for n in md.fetch().nodes] == [-1]
    md.add("t", 0)
    req, partial = md.new_metadata_request(0)
    assert not partial and req.topics == ["t"]  # bootstrap asked for a full update
    v = md.version
    cell = md.version_cell  # what the C send paths read
    md.update(response(topic("t", 3)), partial, 10)
    assert md.version == v + 1 == cell.value
    c = md.fetch()
    assert c.partition_count_for_topic("t") == 3 and c.leader_for(("t", 0)) == N
    assert not md.update_requested()
    md.add("u", 20)  # a new topic: only it is asked for
    req, partial = md.new_metadata_request(20)
    assert partial and req.topics == ["u"]
    md.update(response(topic("u", 1)), partial, 30)
    assert md.fetch().partition_count_for_topic("t") == 3  # kept from before
    assert md.fetch().partition_count_for_topic("u") == 1


def test_await_update_wakes_across_threads_and_times_out() -> None:
    md = ProducerMetadata()
    v = md.request_update()
    threading.Timer(0.05, lambda: md.update(response(topic("t")), False, 1)).start()
    md.await_update(v, 5000)
    assert md.version > v
    with pytest.raises(errors.KafkaTimeoutError, match="not updated within 50 ms"):
        md.await_update(md.version, 50)


def test_refresh_backoff_and_max_age_with_fake_clock() -> None:
    md = ProducerMetadata(
        refresh_backoff_ms=100,
        refresh_backoff_max_ms=800,
        metadata_max_age_ms=10_000,
        random=lambda: 0.5,  # a jitter factor of exactly 1
    )
    md.add("t", 0)
    md.update(response(topic("t")), False, 1000)
    assert md.time_to_next_update(1000) == 10_000  # next refresh at max age
    md.request_update()
    assert md.time_to_next_update(1000) == 100  # within the refresh backoff
    assert md.time_to_next_update(1100) == 0
    backoffs = []
    now = 2000
    for _ in range(6):
        md.failed_update(now)
        backoffs.append(md.time_to_next_update(now))
    assert backoffs == [100, 200, 400, 800, 800, 800]  # Java's backoff(attempts - 1)


def test_unknown_topic_is_retried_and_invalid_topic_raises() -> None:
    md = ProducerMetadata()
    md.add("new", 0)
    md.add("bad", 0)
    md.update(response(topic("new", err=3), topic("bad", err=17)), True, 0)
    assert md.fetch().partition_count_for_topic("new") is None
    assert md.update_requested()  # the topic being created is asked for again
    with pytest.raises(errors.InvalidTopicError):
        md.maybe_throw_exception_for_topic("bad")
    md.maybe_throw_exception_for_topic("new")  # retriable: no error


def test_idle_topics_expire() -> None:
    sending_side_now = [0]
    md = ProducerMetadata(metadata_max_idle_ms=5000, topic_time_ms=lambda: sending_side_now[0])
    md.add("old", 0)
    md.add("fresh", 0)
    md.add("fresh", 9000)
    req, _ = md.new_metadata_request(40)  # the client's clock does not decide
    assert md.topics == ["old", "fresh"]
    sending_side_now[0] = 9000
    req, _ = md.new_metadata_request(41)
    assert "old" not in md.topics and md.topics == ["fresh"]
    assert "old" not in (req.topics or [])


def test_stale_leader_epoch_is_ignored() -> None:
    md = ProducerMetadata()
    n2 = Node(2, "h2", 9092)
    md.add("t", 0)
    md.update(response(topic("t", 1, leader=1, epoch=5), brokers=(N, n2)), False, 0)
    md.update(response(topic("t", 1, leader=2, epoch=3), brokers=(N, n2)), False, 1)
    assert md.fetch().leader_for(("t", 0)) == N
    md.update(response(topic("t", 1, leader=2, epoch=6), brokers=(N, n2)), False, 2)
    assert md.fetch().leader_for(("t", 0)) == n2


def test_close_wakes_waiters() -> None:
    md = ProducerMetadata()
    threading.Timer(0.05, md.close).start()
    t0 = time.monotonic()
    with pytest.raises(errors.ProducerClosedError):
        md.await_update(md.version, 5000)
    assert time.monotonic() - t0 < 2


def test_leaders_from_a_produce_answer_kip_951() -> None:
    """update_partition_leadership takes a newer leader (and its endpoint) for a known
    partition; an epoch that is not newer, an unknown node or partition change nothing."""
    md = ProducerMetadata(topic_time_ms=lambda: 0)
    md.bootstrap([("h", 9092)])
    n2 = Node(2, "h2", 9093)
    md.update(response(topic("t", 2, epoch=5), brokers=(N, n2)), False, 1)
    v = md.version
    n7 = Node(7, "new-broker", 9097, "rack-7")
    tp0, tp1 = TopicPartition("t", 0), TopicPartition("t", 1)
    moved = md.update_partition_leadership({tp0: (7, 6), tp1: (2, 5)}, [n7])
    assert moved == {tp0}  # partition 1: epoch 5 is not newer
    c = md.fetch()
    assert c.leader_for(tp0) == n7 and c.leader_epoch_for(tp0) == 6
    assert c.leader_for(tp1) == N and c.leader_epoch_for(tp1) == 5
    assert c.node_by_id(7) == n7 and c.node_by_id(2) == n2
    assert md.version == v + 1
    assert md.update_partition_leadership({tp1: (9, 8)}, []) == set()  # node 9 unknown
    assert md.update_partition_leadership({TopicPartition("u", 0): (2, 8)}, []) == set()
    assert md.update_partition_leadership({tp1: (2, 6)}, []) == {tp1}  # a known node
    assert md.fetch().leader_for(tp1) == n2
    # a Metadata answer that lags (epoch 5 < 6) does not take the new leader back
    md.update(response(topic("t", 2, epoch=5), brokers=(N, n2)), False, 2)
    assert md.fetch().leader_for(tp0) == n7 and md.fetch().leader_epoch_for(tp0) == 6


def test_rebootstrap_goes_back_to_the_bootstrap_servers() -> None:
    md = ProducerMetadata(topic_time_ms=lambda: 0)
    answers = [[("b1", 9092)], [("b2", 9092), ("b3", 9092)]]

    def resolve() -> list:
        if not answers:
            raise OSError("the names resolve to nothing now")
        return answers.pop(0)

    md.bootstrap(resolve(), resolve)
    md.add("t", 0)
    md.update(response(topic("t", 2)), False, 1)
    assert not md.update_requested() and md.fetch().partition_count_for_topic("t") == 2
    v = md.version
    md.rebootstrap()  # resolved again: other addresses now
    c = md.fetch()
    assert c.is_bootstrap_configured and [(n.id, n.host) for n in c.nodes] == [
        (-1, "b2"),
        (-2, "b3"),
    ]
    assert c.partition_count_for_topic("t") is None and md.update_requested()
    assert md.version == v + 1 and md.topics == ["t"]  # the topics in use are kept
    md.rebootstrap()  # resolving fails now (no answer left): the last addresses stay
    assert [n.host for n in md.fetch().nodes] == ["b2", "b3"]


def test_a_full_listing_asks_for_every_topic_once_and_again_after_a_failure() -> None:
    md = ProducerMetadata(topic_time_ms=lambda: 0)
    md.bootstrap([("h", 9092)])
    md.add("t", 0)
    md.update(response(topic("t")), False, 1)
    answered = md.request_full_listing()
    assert md.update_requested()
    req, partial = md.new_metadata_request(2)
    assert req.topics is None and not partial and not req.allow_auto_topic_creation
    md.failed_update(3, errors.NetworkError("lost"))
    assert md.listings == answered  # not answered: the next request asks again
    req, _ = md.new_metadata_request(4)
    assert req.topics is None
    md.update(response(topic("t"), topic("other", 3)), False, 5)
    assert md.listings == answered + 1
    assert md.fetch().partition_count_for_topic("other") == 3
    req, _ = md.new_metadata_request(6)
    assert req.topics == ["t"]  # then back to the topics in use


def test_the_refresh_backoff_is_drawn_only_while_it_can_delay_the_update() -> None:
    draws = []

    def random() -> float:
        draws.append(1)
        return 0.999  # the largest jitter factor (1.2 by default): capped at the max interval

    md = ProducerMetadata(
        refresh_backoff_ms=100,
        refresh_backoff_max_ms=800,
        metadata_max_age_ms=10_000,
        random=random,
    )
    md.add("t", 0)
    md.update(response(topic("t")), False, 1000)
    for _ in range(4):
        md.failed_update(2000)
    md.request_update()
    assert md.time_to_next_update(2000) == 800  # backoff(3) = 800 x 1.2, capped at 800
    assert md.time_to_next_update(2799) == 1
    n = len(draws)
    assert md.time_to_next_update(2800) == 0 and md.time_to_next_update(9000) == 0
    assert len(draws) == n  # past the max interval no backoff can delay it: nothing drawn
