"""Name resolution (KIP-602): the order addresses are tried in, re-resolution, canonical
bootstrap names. The system resolver is used where the machine's hosts file answers."""

from __future__ import annotations

import socket
from typing import Dict, List

import pytest

from cproducer.errors import ConfigError
from cproducer.network.host_resolver import (
    NodeAddresses,
    bootstrap_addresses,
    canonical_host_name,
    check_host_resolver,
    default_host_resolver,
    takes_address,
)


class CountingResolver:
    """Answers from a table that a test can change, counting the lookups."""

    def __init__(self, table: Dict[str, List[str]]) -> None:
        self.table = table
        self.calls = 0

    def __call__(self, host: str) -> List[str]:
        self.calls += 1
        return list(self.table.get(host, []))


def _system_addresses(host: str) -> List[str]:
    out: List[str] = []
    for info in socket.getaddrinfo(host, None, 0, socket.SOCK_STREAM):
        if info[4][0] not in out:
            out.append(info[4][0])
    return out


def _hosts_file_names(address: str) -> List[str]:
    try:
        with open("/etc/hosts") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return []
    out: List[str] = []
    for line in lines:
        fields = line.split("#", 1)[0].split()
        if fields and fields[0] == address:
            out.extend(fields[1:])
    return out


def test_default_resolver_gives_every_address_of_the_system_resolver_once() -> None:
    assert default_host_resolver("localhost") == _system_addresses("localhost")
    assert default_host_resolver("::1") == default_host_resolver("[::1]") == ["::1"]
    assert default_host_resolver("127.0.0.1") == ["127.0.0.1"]
    with pytest.raises(OSError):
        default_host_resolver("no-such-host.invalid")  # RFC 6761: never resolves


def test_each_attempt_takes_the_next_address_then_the_name_is_resolved_again() -> None:
    resolver = CountingResolver({"b.test": ["10.0.0.1", "::2", "10.0.0.3"]})
    node = NodeAddresses("b.test", resolver)
    tried = [node.current()]
    for _ in range(3):
        node.move_to_next()
        tried.append(node.current())
    # every address, in order, whatever its family; past the last one the name is resolved
    # again, and the address just tried is not tried twice in a row
    assert tried == ["10.0.0.1", "::2", "10.0.0.3", "10.0.0.1"]
    assert resolver.calls == 2


def test_after_a_drop_the_name_is_resolved_again_and_the_last_address_goes_last() -> None:
    resolver = CountingResolver({"b.test": ["10.0.0.1", "10.0.0.2"]})
    node = NodeAddresses("b.test", resolver)
    assert node.current() == "10.0.0.1"  # connected, then the connection dropped
    node.clear()
    resolver.table["b.test"] = ["10.0.0.1", "10.0.0.9"]
    node.move_to_next()  # the next attempt
    assert node.current() == "10.0.0.9"
    assert resolver.calls == 2
    resolver.table["b.test"] = ["10.0.0.7"]  # one address: it is used even if it was the last
    node.clear()
    assert node.current() == "10.0.0.7"


def test_a_name_that_resolves_to_nothing_is_an_os_error() -> None:
    node = NodeAddresses("gone.test", CountingResolver({}))
    with pytest.raises(OSError, match="gone.test resolved to no address"):
        node.current()


def test_use_all_dns_ips_keeps_the_bootstrap_names() -> None:
    resolver = CountingResolver({})
    servers = [("kafka-1.test", 9092), ("10.1.1.1", 9093)]
    assert bootstrap_addresses(servers, "use_all_dns_ips", resolver) == servers
    assert resolver.calls == 0  # names are resolved when connecting


def test_canonical_bootstrap_names_from_the_system_resolver() -> None:
    # the hosts file maps several names to 127.0.0.1; its reverse lookup gives the first one
    name = canonical_host_name("127.0.0.1")
    assert name != "127.0.0.1", "the machine's hosts file has no name for 127.0.0.1"
    # another name of that address (hosts files usually have one), as an alias to canonicalize
    names = socket.gethostbyaddr("127.0.0.1")[1] + ["localhost"] + _hosts_file_names("127.0.0.1")
    aliases = [a for a in names if a != name and _system_addresses(a) == ["127.0.0.1"]]
    servers = [(alias, 9092) for alias in aliases[:1]] + [("127.0.0.1", 9093)]
    out = bootstrap_addresses(servers, "resolve_canonical_bootstrap_servers_only")
    assert out == [(name, port) for _, port in servers]
    assert canonical_host_name("192.0.2.1") == "192.0.2.1"  # TEST-NET-1: no reverse name


def test_canonical_bootstrap_one_entry_per_address_unresolvable_hosts_left_out() -> None:
    resolver = CountingResolver({"alias.test": ["10.0.0.1", "10.0.0.2"], "other.test": []})
    names = {"10.0.0.1": "a.real.test", "10.0.0.2": "b.real.test"}
    out = bootstrap_addresses(
        [("alias.test", 9092), ("other.test", 9092)],
        "resolve_canonical_bootstrap_servers_only",
        resolver,
        names.__getitem__,
    )
    assert out == [("a.real.test", 9092), ("b.real.test", 9092)]
    with pytest.raises(ConfigError, match="bootstrap.servers: no resolvable bootstrap server"):
        bootstrap_addresses(
            [("other.test", 9092)], "resolve_canonical_bootstrap_servers_only", resolver
        )


def test_the_resolver_hook_must_be_callable() -> None:
    with pytest.raises(ConfigError, match="host_resolver: expected a callable"):
        check_host_resolver({"a": ["1.2.3.4"]})


def test_which_socket_factories_take_the_address() -> None:
    def old(host: str, port: int, send: int, recv: int) -> None: ...

    def new(host: str, port: int, send: int, recv: int, address: str) -> None: ...

    def anything(*args: object, **kwargs: object) -> None: ...

    assert not takes_address(old) and takes_address(new) and takes_address(anything)
    assert not takes_address(print)  # no signature to read: the four arguments
