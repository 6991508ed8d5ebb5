"""What a mail address's shape says about who is behind it: a person, a mailing list or a role.

The email plugin reports the list addresses a message's headers name (``mailing_lists``); an
address seen only in ``To:`` or ``Cc:`` still has a shape. These readings are conservative: an
address is a person unless its local part or host is one that people do not use:

- a role: ``noreply@``, ``postmaster@``, ``mailer-daemon@``, ``info@``, ``sales@`` ... (a
  business's or a system's mailbox; the graph types it ``organization``);
- a list: hosted on a list server (``lists.*``, ``vger.kernel.org``, ``googlegroups.com``), named
  like one (``devel@``, ``...-devel@``, ``...-users@``, ``...-announce@``), or a list's own service address
  (``...-request@``, ``...-bounces@``, ``...-owner@``, ``owner-...@``).

``linux@arm.linux.org.uk`` (a maintainer) stays a person: names that merely start like a list
name are not enough.
"""

from __future__ import annotations

import re
from typing import Literal

AddressKind = Literal["person", "list", "role"]

ROLE_LOCAL_PARTS = frozenset(
    "info noreply no-reply no_reply donotreply do-not-reply do_not_reply support sales admin news newsletter"
    " marketing hello contact team office billing service notifications notification mailer-daemon"
    " mailerdaemon postmaster webmaster hostmaster abuse help orders purchasing bounce bounces daemon"
    " root nobody alerts alert automailer auto-reply autoreply".split()
)
LIST_HOSTS = frozenset({"vger.kernel.org", "googlegroups.com", "freelists.org", "yahoogroups.com"})
LIST_HOST_PREFIXES = ("lists.", "listserv.", "mailman.")  # not "list.": list.ru is a mail provider
LIST_NAME = re.compile(r"(?:^|[-_.])(?:devel|users|announce|discuss|general|commits|patches|bugs)$|-(?:dev|user)$")
LIST_SERVICE = re.compile(r"^owner-.+|.+-(?:request|bounces?|owner|admin|subscribe|unsubscribe)$")


def address_kind(address: str) -> AddressKind:
    """``list``, ``role`` or ``person`` for ``local@host`` (case-insensitive; a ``+tag`` ignored)."""
    local, _, host = address.strip().lower().rpartition("@")
    if not local or not host:
        return "person"
    local = local.split("+", 1)[0]
    if host in LIST_HOSTS or host.startswith(LIST_HOST_PREFIXES):
        return "list"
    if LIST_SERVICE.match(local) or LIST_NAME.search(local):
        return "list"
    if local in ROLE_LOCAL_PARTS:
        return "role"
    return "person"
