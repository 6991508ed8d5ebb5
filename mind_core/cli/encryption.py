"""``mind encrypt`` and ``mind decrypt``: a mind rewritten encrypted (SQLCipher) or plain again.

The key comes from ``$MIND_HARVEST_KEY_<WORKSPACE>``, ``$MIND_HARVEST_KEY`` or the OS keyring
(``mind_core.store.cipher``); output and errors name where it came from, never the key.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import click

from mind_core.cli.base import (
    ALL_WORKSPACES_OPTION,
    EXIT_OK,
    CommandArgs,
    common_options_hiding,
    example,
    mind_command,
    no_minds,
    require_mind,
    selected_workspaces,
)
from mind_core.cli.output import TableView, emit
from mind_core.store.home import MindHome

if TYPE_CHECKING:
    from mind_core.store.cipher_migration import Rewritten


@click.command(
    "encrypt",
    epilog=example(
        "MIND_HARVEST_KEY_PERSONAL='a long passphrase' mind encrypt -w personal",
        "keyring set mind-harvest team && mind encrypt -w team",
        "mind encrypt --all-workspaces          # every mind, with $MIND_HARVEST_KEY",
    ),
)
@ALL_WORKSPACES_OPTION
@common_options_hiding("embedder", "quiet")
@mind_command
def encrypt(args: CommandArgs) -> int:
    """Encrypt a mind at rest (SQLCipher, AES-256).

    The key: $MIND_HARVEST_KEY_<WORKSPACE> (e.g. MIND_HARVEST_KEY_TEAM_A), else
    $MIND_HARVEST_KEY, else the OS keyring (service mind-harvest, user the workspace); a
    passphrase, or 64 hex digits for a raw key. The mind is copied into a new encrypted file,
    checked, then swapped in; the plain original is kept until then. Stop `mind serve` and
    Dagster runs on the mind first. Every later command needs the same key.
    """
    from mind_core.store.cipher_migration import encrypt_mind

    return _rewrite(args, encrypt_mind, encrypted=True)


@click.command("decrypt", epilog=example("mind decrypt -w team", "mind decrypt --all-workspaces"))
@ALL_WORKSPACES_OPTION
@common_options_hiding("embedder", "quiet")
@mind_command
def decrypt(args: CommandArgs) -> int:
    """Write an encrypted mind back as a plain SQLite file.

    Needs the mind's key (as `mind encrypt` takes it). The plain copy is checked before it
    replaces the encrypted file.
    """
    from mind_core.store.cipher_migration import decrypt_mind

    return _rewrite(args, decrypt_mind, encrypted=False)


def _rewrite(args: CommandArgs, rewrite: Callable[..., Rewritten], *, encrypted: bool) -> int:
    """Run ``rewrite`` on every selected mind, which leaves it ``encrypted`` or not; with
    --all-workspaces a mind already so is listed as skipped."""
    from mind_core.store.cipher import is_encrypted

    home = MindHome(args.home)
    workspaces = selected_workspaces(args)
    if not workspaces:
        raise no_minds(home)
    if not args.all_workspaces:
        require_mind(args)
    already = "already encrypted" if encrypted else "not encrypted"
    done: list[dict[str, object]] = []
    for workspace in workspaces:
        path = home.mind_path(workspace)
        if args.all_workspaces and is_encrypted(path) == encrypted:
            done.append({"workspace": workspace, "encrypted": encrypted, "skipped": already})
            continue
        result = rewrite(path)
        done.append({"workspace": workspace, **result.to_dict(), "skipped": None})
    rows = [
        [d["workspace"], "yes" if d["encrypted"] else "no", d.get("rows", "-"), d.get("key_from", "-"), d["skipped"] or ""]
        for d in done
    ]
    emit(
        args,
        done if args.all_workspaces else done[0],
        TableView(("workspace", "encrypted", "rows", "key from", "skipped"), rows),
    )
    return EXIT_OK
