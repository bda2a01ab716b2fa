"""Sphinx directives that generate the reference pages from the code at build time, so that they
cannot drift from it:

- ``config-reference``: every producer setting of ``cproducer.producer.config`` (Java name,
  Python names, default, meaning);
- ``error-reference`` (``:kind: client`` or ``:kind: broker``): the classes of ``cproducer.errors``;
- ``perf-cli-help``: ``cproducer-perf-test --help``;
- ``peer-results``: the table of a ``benchmarks/compare_peers.py --json`` file.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import re
from typing import Any, Dict, Iterable, List, Sequence, Union

from docutils import nodes
from docutils.parsers.rst import Directive, directives

Cell = Union[str, nodes.Node]


def _cell(value: Cell) -> nodes.entry:
    entry = nodes.entry()
    if isinstance(value, nodes.Node):
        entry += nodes.paragraph("", "", value) if isinstance(value, nodes.Inline) else value
    else:
        entry += nodes.paragraph(text=value)
    return entry


def _table(
    headers: Sequence[str], rows: Iterable[Sequence[Cell]], widths: Sequence[int], ids: str
) -> nodes.table:
    table = nodes.table(ids=[ids], classes=["cproducer-reference"])
    group = nodes.tgroup(cols=len(headers))
    table += group
    for width in widths:
        group += nodes.colspec(colwidth=width)
    head = nodes.thead()
    row = nodes.row()
    for header in headers:
        row += _cell(header)
    head += row
    group += head
    body = nodes.tbody()
    for values in rows:
        row = nodes.row()
        for value in values:
            row += _cell(value)
        body += row
    group += body
    return table


def _code(text: str) -> nodes.literal:
    """Inline code that a narrow column may break after its dots and underscores (``<wbr>``),
    never inside a word, and that copies as it reads."""
    literal = nodes.literal()
    for i, part in enumerate(re.split(r"(?<=[._])", text)):
        if i:
            literal += nodes.raw("", "<wbr>", format="html")
        literal += nodes.Text(part)
    return literal


def _codes(texts: Sequence[str]) -> nodes.paragraph:
    para = nodes.paragraph()
    for i, text in enumerate(texts):
        if i:
            para += nodes.Text(", ")
        para += _code(text)
    return para


def _prose(text: str) -> nodes.paragraph:
    """A docstring's sentence as it reads: ``code`` and :role:`target` become inline code."""
    para = nodes.paragraph()
    pos = 0
    for m in re.finditer(r"``(.+?)``|:[a-z:]+:`~?([^`]+)`", text):
        para += nodes.Text(text[pos : m.start()])
        para += nodes.literal(text=m.group(1) or m.group(2))
        pos = m.end()
    para += nodes.Text(text[pos:])
    return para


def _default(value: Any) -> str:
    if value is None:
        return "None"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    return repr(value)


class ConfigReference(Directive):
    """Every key of ``cproducer.producer.config.CONFIG_DEFS``, in the table's order."""

    def run(self) -> List[nodes.Node]:
        from cproducer.producer import config

        python_names: Dict[str, List[str]] = {}
        for name, java in config._ALIASES.items():
            if name != java or "." not in java:  # "acks" is its own Python name
                python_names.setdefault(java, []).append(name)
        rows = []
        for java, definition in config.CONFIG_DEFS.items():
            names = sorted(
                python_names.get(java, []), key=lambda n: (n != java.replace(".", "_"), n)
            )
            rows.append(
                [
                    _code(java),
                    _codes(names),
                    _code(_default(definition.default)),
                    _prose(definition.doc),
                ]
            )
        table = _table(
            ["Java name", "Python name", "Default", "Meaning"],
            rows,
            [30, 30, 14, 40],
            "config-table",
        )
        hooks = nodes.paragraph()
        hooks += nodes.Text(
            "Accepted as keyword arguments too, but not Kafka settings (objects handed to the "
            "producer): "
        )
        for i, hook in enumerate(config._HOOKS):
            if i:
                hooks += nodes.Text(", ")
            hooks += _code(hook)
        hooks += nodes.Text(".")
        return [table, hooks]


class ErrorReference(Directive):
    """The error classes of ``cproducer.errors``: client-side ones or those of broker codes."""

    option_spec = {"kind": lambda arg: directives.choice(arg, ("client", "broker"))}

    def run(self) -> List[nodes.Node]:
        from cproducer import errors

        kind = self.options.get("kind", "client")
        classes: Dict[type, List[str]] = {}
        for name, obj in vars(errors).items():
            if (
                inspect.isclass(obj)
                and issubclass(obj, errors.KafkaError)
                and obj.__module__ == errors.__name__
            ):
                classes.setdefault(obj, []).append(name)
        broker_base = errors.BrokerResponseError
        if kind == "broker":
            chosen = [c for c in classes if issubclass(c, broker_base) and c is not broker_base]
            chosen.sort(key=lambda c: (c.errno, c.__name__))
            rows = [
                [
                    str(c.errno),
                    _codes(self._names(c, classes[c])),
                    "yes" if c.retriable else "no",
                    "yes" if c.invalid_metadata else "no",
                    self._meaning(c),
                ]
                for c in chosen
            ]
            return [
                _table(
                    ["Code", "Class", "Retriable", "Refreshes metadata", "Meaning"],
                    rows,
                    [6, 34, 9, 11, 40],
                    "broker-errors-table",
                )
            ]
        chosen = [c for c in classes if not issubclass(c, broker_base) or c is broker_base]
        rows = [
            [
                _codes(self._names(c, classes[c])),
                _codes([b.__name__ for b in c.__bases__]),
                "yes" if c.retriable else "no",
                self._meaning(c),
            ]
            for c in chosen
        ]
        return [
            _table(
                ["Class", "Bases", "Retriable", "Meaning"],
                rows,
                [28, 28, 9, 45],
                "client-errors-table",
            )
        ]

    @staticmethod
    def _names(cls: type, names: List[str]) -> List[str]:
        # the class's own name first, then the other names it is exported under (aliases)
        return sorted(set(names), key=lambda n: (n != cls.__name__, n))

    @staticmethod
    def _meaning(cls: type) -> nodes.paragraph:
        doc = inspect.getdoc(cls) or ""
        if doc == cls.__name__:  # a broker error class made without a description
            doc = ""
        return _prose(" ".join(doc.split("\n\n")[0].split()))


class PerfCliHelp(Directive):
    """``cproducer-perf-test --help`` as a literal block, 100 columns wide."""

    def run(self) -> List[nodes.Node]:
        from cproducer.perf import build_parser

        parser = build_parser()
        parser.formatter_class = lambda prog: argparse.HelpFormatter(prog, width=100)
        text = parser.format_help()
        block = nodes.literal_block(text, text)
        block["language"] = "text"
        return [block]


class PeerResults(Directive):
    """The results table of ``compare_peers.py --json FILE``: msg/s, CPU per message and both as
    ratios to confluent-kafka in the same run. The path is relative to the docs directory."""

    required_arguments = 1

    def run(self) -> List[nodes.Node]:
        env = self.state.document.settings.env
        path = os.path.join(env.srcdir, self.arguments[0])
        env.note_dependency(path)
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
        records = data["records"]
        results = [r for r in data["results"] if "error" not in r]
        base = next((r for r in results if r["client"] == "confluent"), None)
        rows = []
        for r in results:
            rate = records / r["wall_s"]
            cpu_us = r["cpu_s"] / records * 1e6
            row: List[Cell] = [
                data["labels"].get(r["client"], r["client"]),
                f"{rate:,.0f}",
                f"{cpu_us:.2f}",
            ]
            if base is not None:
                row.append(f"{rate / (records / base['wall_s']):.2f}")
                row.append(f"{cpu_us / (base['cpu_s'] / records * 1e6):.2f}")
            rows.append(row)
        headers = ["Client", "msg/s", "CPU µs/msg"]
        if base is not None:
            headers += ["× confluent msg/s", "× confluent CPU"]
        caption = nodes.paragraph(text=data["workload"])
        out: List[nodes.Node] = [caption]
        if "command" in data:
            rounds, load = data["rounds"], data["load_average"]
            how = f"medians of {rounds} alternating rounds" if rounds > 1 else "one round"
            out.append(
                nodes.paragraph(
                    text=f"{how}; load average (1 min) {load[0]} before and {load[1]} after"
                )
            )
            out.append(nodes.literal_block(text="$ " + data["command"], language="console"))
        return [
            *out,
            _table(headers, rows, [40, 14, 12, 14, 14][: len(headers)], "peer-results"),
        ]


def setup(app: Any) -> Dict[str, Any]:
    app.add_directive("config-reference", ConfigReference)
    app.add_directive("error-reference", ErrorReference)
    app.add_directive("perf-cli-help", PerfCliHelp)
    app.add_directive("peer-results", PeerResults)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
