"""``mind_encryption``: run a module's tests once on plain minds and once on encrypted ones."""

from __future__ import annotations

from pathlib import Path

import pytest

from mind_core.store.cipher import KEY_ENV, is_encrypted

# A raw 256-bit key (64 hex digits): SQLCipher uses it as it is, so the encrypted runs pay no
# passphrase stretching per connection (tests/privacy/test_encryption.py covers passphrases).
TEST_KEY = "5eed" * 16


@pytest.fixture(params=["plain", "encrypted"])
def mind_encryption(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """With ``encrypted``, ``$MIND_HARVEST_KEY`` is set before the test's minds are made, so
    every mind file it creates is encrypted; afterwards each one is checked to be so (and, with
    ``plain``, to be a plain SQLite file)."""
    encrypted = request.param == "encrypted"
    if encrypted:
        monkeypatch.setenv(KEY_ENV, TEST_KEY)
    else:
        monkeypatch.delenv(KEY_ENV, raising=False)
    yield request.param
    for mind_file in tmp_path.rglob("*.mind"):
        assert is_encrypted(mind_file) == encrypted, mind_file
