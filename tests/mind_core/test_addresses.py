"""What an address's shape says: person, list or role (mind_core.knowledge.addresses)."""

from __future__ import annotations

import pytest

from mind_core.knowledge.addresses import address_kind


@pytest.mark.parametrize(
    ("address", "kind"),
    [
        ("cworth@cworth.org", "person"),
        ("linux@arm.linux.org.uk", "person"),  # a maintainer, though named like a list
        ("someone@list.ru", "person"),  # a mail provider, not a list server
        ("linux-kernel@vger.kernel.org", "list"),
        ("e1000-devel@lists.sourceforge.net", "list"),
        ("aur-general@archlinux.org", "list"),
        ("devel@driverdev.osuosl.org", "list"),
        ("ppp-request@zzz.org", "list"),
        ("notmuch-bounces+x=y.org@notmuchmail.org", "list"),
        ("owner-smime-dev@rsa.com", "list"),
        ("NoReply@ggg.com", "role"),
        ("mailer-daemon@zinfandel.lacita.com", "role"),
        ("postmaster@ucla.edu", "role"),
        ("info+news@continuityinsights.com", "role"),
        ("not-an-address", "person"),
    ],
)
def test_address_kind(address: str, kind: str) -> None:
    assert address_kind(address) == kind
