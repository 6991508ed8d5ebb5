"""A folder's kind when chat exports and Markdown files sit together: a LICENSE.md or README.md
copied with an export does not make it notes, and a vault with a README.md stays notes."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from mind_core import plugins
from mind_core.errors import InvalidInputError
from mind_core.harvest.items import HarvestError, HarvestItem
from mind_core.harvest.pipeline import choose_kind

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def unpacked_export(folder: Path, *project_files: str) -> Path:
    """The example ChatGPT export unpacked into ``folder`` with the project files beside it."""
    folder.mkdir(parents=True)
    shutil.copy(EXAMPLES / "chatgpt" / "conversations.json", folder / "conversations.json")
    for name in project_files:
        (folder / name).write_text(f"# {name}\n\nPermission is hereby granted...\n", encoding="utf-8")
    return folder


def kinds(path: Path) -> dict[str, float]:
    return {d.kind: d.confidence for d in plugins.rank_sources(path)}


def test_an_export_with_its_license_and_readme_is_the_chat_export(tmp_path: Path) -> None:
    export = unpacked_export(tmp_path / "export", "LICENSE.md", "README.md")
    assert plugins.detect_source(export).kind == "chatgpt"
    assert kinds(export)["markdown"] < plugins.PLAUSIBLE


def test_a_folder_of_unpacked_exports_is_read_as_chatgpt(tmp_path: Path) -> None:
    """Before, the LICENSE.md one level down made it Markdown notes and no chat kind claimed it."""
    unpacked_export(tmp_path / "exports" / "2024-01", "LICENSE.md")
    unpacked_export(tmp_path / "exports" / "2024-02", "README.md")
    shutil.copytree(EXAMPLES / "claude", tmp_path / "exports" / "claude")  # its conversations.json is not read
    folder = tmp_path / "exports"
    assert choose_kind(folder, None) == "chatgpt"
    events = list(plugins.get_source("chatgpt").scan(folder))
    assert [e for e in events if isinstance(e, HarvestError)] == []
    one_export = [e for e in plugins.get_source("chatgpt").scan(folder / "2024-01") if isinstance(e, HarvestItem)]
    assert sum(isinstance(e, HarvestItem) for e in events) == 2 * len(one_export) > 0


def test_a_folder_of_exports_in_the_shared_data_is_chatgpt(shared_data: Path) -> None:
    folder = shared_data / "chat-exports" / "chatgpt"  # two exports, one with its LICENSE.md
    assert choose_kind(folder, None) == "chatgpt"
    events = list(plugins.get_source("chatgpt").scan(folder))
    assert [e for e in events if isinstance(e, HarvestError)] == []
    assert sum(isinstance(e, HarvestItem) for e in events) == 4  # 1 + 2 + 1, as each file alone


def test_a_vault_with_a_readme_and_notes_stays_notes(tmp_path: Path, shared_data: Path) -> None:
    vault = tmp_path / "vault"
    shutil.copytree(EXAMPLES / "vault", vault)
    (vault / "README.md").write_text("# My notes\n", encoding="utf-8")
    (vault / "LICENSE.md").write_text("# License\n", encoding="utf-8")
    assert plugins.detect_source(vault).kind == "markdown"
    assert kinds(vault)["markdown"] >= plugins.CONFIDENT
    for real in ("obsidian-help-en", "kepano-obsidian"):
        assert choose_kind(shared_data / "markdown" / real, None) == "markdown"


def test_a_folder_with_only_a_readme_is_not_guessed(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("# A project\n", encoding="utf-8")
    with pytest.raises(InvalidInputError, match="cannot tell what"):
        choose_kind(tmp_path, None)
    assert choose_kind(tmp_path, "markdown") == "markdown"  # the user may still say it is notes
