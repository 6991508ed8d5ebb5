"""Minds on disk: a home folder with the personal mind and one mind file per workspace.

``MIND_HARVEST_HOME`` (named like every other variable of the project; ``MIND_HOME``, its older
name, still read), default ``~/.mind-harvest``::

    personal.mind               the person's own mind
    workspaces/<name>.mind      one mind per workspace (a team, a project)
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from mind_core.errors import InvalidInputError, NotFoundError

DEFAULT_HOME = "~/.mind-harvest"
HOME_ENV = "MIND_HARVEST_HOME"
HOME_ENV_ALIAS = "MIND_HOME"
DEFAULT_WORKSPACE = "default"
PERSONAL = "personal"
_WORKSPACE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


def validate_workspace_name(name: str) -> str:
    """Workspace names become file names: letters, digits, ``_ . -``; no separators, no ``..``."""
    if not isinstance(name, str) or not _WORKSPACE_NAME.match(name) or ".." in name:
        raise InvalidInputError(
            f"invalid workspace name {name!r}: use 1-64 letters, digits, '_', '.' or '-', "
            "starting with a letter or digit (no path separators, no '..')"
        )
    if name == PERSONAL:
        raise InvalidInputError("'personal' is reserved for the personal mind")
    return name


def home_from_environment() -> str | None:
    """The mind home the environment names: ``MIND_HARVEST_HOME``, else ``MIND_HOME``. Both set
    to different folders is refused: tools that set ``MIND_HOME`` for a child process (a scratch
    home) must never have it silently overruled by a real home inherited from the shell."""
    named, alias = os.environ.get(HOME_ENV), os.environ.get(HOME_ENV_ALIAS)
    if named and alias and Path(named).expanduser().resolve() != Path(alias).expanduser().resolve():
        raise InvalidInputError(
            f"${HOME_ENV} ({named}) and ${HOME_ENV_ALIAS} ({alias}) name different mind homes; "
            f"unset one (${HOME_ENV_ALIAS} is the older name of ${HOME_ENV})"
        )
    return named or alias


class MindHome:
    def __init__(self, root: str | Path | None = None) -> None:
        self.root = Path(root or home_from_environment() or DEFAULT_HOME).expanduser().resolve()

    @property
    def personal_path(self) -> Path:
        return self.root / f"{PERSONAL}.mind"

    def workspace_path(self, name: str) -> Path:
        return self.root / "workspaces" / f"{validate_workspace_name(name)}.mind"

    def mind_path(self, workspace: str | None) -> Path:
        """The personal mind for ``None`` or 'personal', else the workspace's mind."""
        if workspace in (None, PERSONAL):
            return self.personal_path
        return self.workspace_path(workspace)

    def minds(self) -> list[str]:
        """Every mind in the home, as ``--all-workspaces`` means it: the personal mind (when it
        exists), then each workspace. One list, so no command's "all" can leave a mind out."""
        return ([PERSONAL] if self.personal_path.is_file() else []) + self.workspaces()

    def missing_mind(self, name: str) -> NotFoundError:
        """The error for a workspace without a mind, naming the minds there are, so a typo is seen
        for one: the same words on every surface (CLI exit 2, HTTP 404, MCP tool error)."""
        minds = self.workspaces() + ([PERSONAL] if self.personal_path.is_file() else [])
        return NotFoundError(f"no mind for workspace {name!r} (minds: {', '.join(minds) or 'none yet'})")

    def workspaces(self) -> list[str]:
        folder = self.root / "workspaces"
        if not folder.is_dir():
            return []
        return sorted(p.stem for p in folder.glob("*.mind") if _WORKSPACE_NAME.match(p.stem))
