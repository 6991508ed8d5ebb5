"""Which addresses a message's own headers show to be mailing lists.

A list server stamps the mail it relays: ``List-Post`` names the address to post to (RFC 2369),
``List-Id`` the list's identifier (RFC 2919; in practice its address with ``@`` written as ``.``),
``X-Mailing-List`` (vger) and ``X-BeenThere`` (Mailman) the list address, and ``Sender``,
``Errors-To`` and ``Return-Path`` the list's bounce or owner address (``notmuch-bounces@``,
``owner-linux-kernel@``). Without these, a list address in ``To:`` looks like anybody's, and the
knowledge graph took ``notmuch@notmuchmail.org`` for a person. What an address's shape alone
suggests (``noreply@``, ``...-request@``) is read by the graph (``mind_core.knowledge.addresses``), not here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from mind_harvest.plugins.mail_text import unfold

MAILTO = re.compile(r"<\s*mailto:([^<>?\s]+@[^<>?\s]+)", re.IGNORECASE)
ADDRESS = re.compile(r"[^\s<>@\"',;:()]+@[^\s<>\"',;:()]+")
LIST_ID = re.compile(r"<([^<>\s]+)>")
# Where a list server sends bounces: owner-LIST@, LIST-bounces@, LIST-owner@, LIST-request@ (with
# a Mailman VERP tail: LIST-bounces+someone=example.org@)
LIST_SERVICE = re.compile(r"^(?:owner-(?P<owned>.+)|(?P<list>.+?)-(?:bounces?|owner|request|admin))(?:\+.*)?$")
LIST_ADDRESS_HEADERS = ("x-mailing-list", "x-beenthere")
BOUNCE_HEADERS = ("sender", "errors-to", "return-path")


def list_addresses(headers: dict[str, list[str]], addresses: Iterable[str]) -> list[str]:
    """The mailing-list addresses this message's headers name (lower-cased, sorted).

    ``List-Post``, ``X-Mailing-List`` and ``X-BeenThere`` name a list outright. ``List-Id`` and a
    bounce address name one only through an address of the message (``addresses``: its From, To
    and Cc), since a list id is not an address and ``owner-x@`` alone could be a person's alias.
    """
    present = {address.strip().lower() for address in addresses if "@" in address}
    found: set[str] = set()
    for value in headers.get("list-post", []):
        found.update(match.lower() for match in MAILTO.findall(unfold(value)))
    for name in LIST_ADDRESS_HEADERS:
        for value in headers.get(name, []):
            match = ADDRESS.search(unfold(value))
            if match:
                found.add(match.group(0).lower())
    for value in headers.get("list-id", []):
        text = unfold(value).strip()
        match = LIST_ID.search(text)
        list_id = (match.group(1) if match else text).lower()
        found.update(address for address in present if address.replace("@", ".", 1) == list_id)
    for name in BOUNCE_HEADERS:
        for value in headers.get(name, []):
            match = ADDRESS.search(unfold(value))
            listed = _served_list(match.group(0).lower()) if match else None
            if listed in present:
                found.add(listed)
    return sorted(found)


def _served_list(address: str) -> str | None:
    """``notmuch@notmuchmail.org`` for ``notmuch-bounces@notmuchmail.org``; None for other addresses."""
    local, _, domain = address.rpartition("@")
    match = LIST_SERVICE.match(local)
    if not match or not domain:
        return None
    return f"{match.group('owned') or match.group('list')}@{domain}"
