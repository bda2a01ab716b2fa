"""``metrics(raw=True)``: each metric as a ``MetricName`` and a ``KafkaMetric``, as kafka-python
3.0 returns them (its ``kafka.metrics.MetricName`` and ``KafkaMetric``; Java's ``MetricName`` and
``Metric``): ``{MetricName(name, group, description, tags): KafkaMetric}``.

A metric reads its current value when asked (``value()``), as kafka-python's does: it goes back to
the producer's metrics, it does not keep the value the dict was made with.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Mapping, Optional

Groups = Dict[str, Dict[str, float]]


class MetricName:
    """A metric's name, its group, a description and tags; equal (and hashed) by name, group and
    tags, as kafka-python's and Java's."""

    __slots__ = ("_name", "_group", "_description", "_tags")

    def __init__(
        self,
        name: str,
        group: str,
        description: Optional[str] = None,
        tags: Optional[Mapping[str, str]] = None,
    ) -> None:
        if not name:
            raise ValueError("name must be a non-empty string")
        if not group:
            raise ValueError("group must be a non-empty string")
        self._name = name
        self._group = group
        self._description = description
        self._tags = dict(tags or {})

    @property
    def name(self) -> str:
        return self._name

    @property
    def group(self) -> str:
        return self._group

    @property
    def description(self) -> Optional[str]:
        return self._description

    @property
    def tags(self) -> Dict[str, str]:
        return dict(self._tags)

    def __hash__(self) -> int:
        return hash((self._name, self._group, frozenset(self._tags.items())))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, MetricName):
            return NotImplemented
        return (self._name, self._group, self._tags) == (other._name, other._group, other._tags)

    def __repr__(self) -> str:
        return (
            f"MetricName(name={self._name!r}, group={self._group!r}, "
            f"description={self._description!r}, tags={self._tags!r})"
        )


class KafkaMetric:
    """One metric: its ``metric_name`` and ``value()``, read from the producer when called."""

    __slots__ = ("_metric_name", "_read")

    def __init__(self, metric_name: MetricName, read: Callable[[], Groups]) -> None:
        self._metric_name = metric_name
        self._read = read

    @property
    def metric_name(self) -> MetricName:
        return self._metric_name

    def value(self, time_ms: Optional[int] = None) -> float:
        """The metric's value now (NaN once the producer no longer reports it). ``time_ms``
        (kafka-python's wall-clock time to measure at) must be None: the producer measures on
        its own monotonic clock."""
        if time_ms is not None:
            raise ValueError(
                "time_ms is not supported: the value is read at the time of the call (pass None)"
            )
        group = self._read().get(self._metric_name.group, {})
        return group.get(self._metric_name.name, float("nan"))

    def __repr__(self) -> str:
        return f"KafkaMetric({self._metric_name!r})"


def raw_metrics(read: Callable[[], Groups]) -> Dict[MetricName, Any]:
    """kafka-python's ``metrics(raw=True)`` from ``read``, the producer's ``{group: {name:
    value}}``: one ``MetricName`` -> ``KafkaMetric`` per metric (no tags: the node or the topic
    is in the group's name, as kafka-python's)."""
    out: Dict[MetricName, Any] = {}
    for group, metrics in read().items():
        for name in metrics:
            metric_name = MetricName(name, group)
            out[metric_name] = KafkaMetric(metric_name, read)
    return out
