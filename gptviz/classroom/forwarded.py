"""Who is asking, behind a proxy: the client address a trusted proxy forwards.

Behind a lecture hall's proxy (``deploy/``) every student's connection comes from the
proxy's address, so the rate limits, kept per client, would count the whole hall as one
client. The proxy names the real client in ``X-Forwarded-For`` (HAProxy's ``option
forwardfor`` appends it). That header is believed only when the connection comes from an
address in the setting ``GPTVIZ_TRUSTED_PROXIES`` (addresses or networks, separated by
commas: ``127.0.0.1``, ``10.0.0.5,10.0.0.6``, ``10.0.0.0/24``); from anyone else it is
ignored, since anyone can send one. Of its addresses the last one that is not itself a
trusted proxy is the client: what a client writes into the header stands to the left of
what the proxies append.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
from collections.abc import Iterable

TRUSTED_ENV = "GPTVIZ_TRUSTED_PROXIES"
Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def trusted_networks(setting: str | None = None) -> tuple[Network, ...]:
    """The proxies a setting names (``setting``, else ``$GPTVIZ_TRUSTED_PROXIES``); a word
    that is no address or network is ignored.

    >>> [str(n) for n in trusted_networks("127.0.0.1, 10.0.0.0/24, ::1, nonsense")]
    ['127.0.0.1/32', '10.0.0.0/24', '::1/128']
    """
    raw = os.environ.get(TRUSTED_ENV, "") if setting is None else setting
    found = []
    for word in raw.replace(";", ",").split(","):
        with contextlib.suppress(ValueError):
            found.append(ipaddress.ip_network(word.strip(), strict=False))
    return tuple(found)


def _address(raw: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    text = raw.strip().strip('"')
    if text.startswith("[") and "]" in text:  # [v6]:port
        text = text[1:text.index("]")]
    elif text.count(":") == 1:  # v4:port
        text = text.split(":")[0]
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return None
    mapped = getattr(address, "ipv4_mapped", None)
    return mapped or address


def client_address(peer: str | None, forwarded_for: Iterable[str],
                   trusted: Iterable[Network]) -> str | None:
    """The client's address: ``peer`` (the connection's), unless it is a trusted proxy;
    then the last address of ``forwarded_for`` (the X-Forwarded-For headers, in order)
    that is not a trusted proxy. None when nothing names one.

    >>> proxy = trusted_networks("127.0.0.1")
    >>> client_address("127.0.0.1", ["6.6.6.6, 10.1.2.3"], proxy)  # 6.6.6.6: the client's own
    '10.1.2.3'
    >>> client_address("10.9.9.9", ["6.6.6.6"], proxy)  # not from the proxy: not believed
    '10.9.9.9'
    >>> client_address("127.0.0.1", [], proxy)
    '127.0.0.1'
    """
    trusted = tuple(trusted)
    here = _address(peer) if peer else None

    def is_proxy(address: object) -> bool:
        return address is not None and any(
            address.version == n.version and address in n for n in trusted)

    if here is None or not is_proxy(here):
        return str(here) if here is not None else peer
    hops = [h for header in forwarded_for for h in header.split(",") if h.strip()]
    for hop in reversed(hops):
        address = _address(hop)
        if address is None:  # a garbled hop: the proxies never write one, so stop here
            break
        if not is_proxy(address):
            return str(address)
    return str(here)
