"""The Dagster instance of a mind home: where its runs, materializations and checks are recorded.

``$DAGSTER_HOME`` when set, else ``<MIND_HOME>/dagster``: the command line, ``make run`` and
``make ui`` then read and write one history per mind home. A new instance folder gets the
shipped ``dagster.yaml`` (telemetry off; the run queue with one run in progress per mind).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from mind_core.store.home import MindHome

SHIPPED_CONFIG = Path(__file__).with_name("dagster.yaml")
INSTANCE_DIR = "dagster"
MARKS_DIR = "mind_harvest_recorded"


def dagster_home(home: MindHome) -> Path:
    """The instance folder of ``home``: ``$DAGSTER_HOME`` or ``<MIND_HOME>/dagster``."""
    configured = os.environ.get("DAGSTER_HOME")
    return Path(configured).expanduser().resolve() if configured else home.root / INSTANCE_DIR


def prepare_dagster_home(home: MindHome) -> Path:
    """Create the instance folder with the shipped configuration (an existing one is kept as the
    operator left it); open it with ``DagsterInstance.from_config(folder)``, or export it as
    ``$DAGSTER_HOME`` for Dagster's own processes."""
    folder = dagster_home(home)
    folder.mkdir(parents=True, exist_ok=True)
    config = folder / "dagster.yaml"
    if not config.exists():
        shutil.copyfile(SHIPPED_CONFIG, config)
    return folder


def recorded_mark(mind_home: Path, workspace: str, source: str) -> Path:
    """The file whose presence says the instance holds this source's harvest chain (written by
    ``mind_harvest.pipelines.history`` once it recorded it): an unchanged re-harvest then records nothing."""
    return dagster_home(MindHome(mind_home)) / MARKS_DIR / workspace / source
