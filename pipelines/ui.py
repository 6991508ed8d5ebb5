"""``make ui``: the Dagster UI over the mind home's instance, with the daemon that runs its queue,
sensors and schedules (what ``dagster dev`` does, with the commands Dagster supports for it).

Both processes read ``workspace.yaml`` and the instance of ``mind_harvest.pipelines.instance``; stopping this
command (Ctrl-C) stops both.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from mind_harvest.pipelines.instance import prepare_dagster_home

from mind_core.store.home import MindHome

WORKSPACE_FILE = Path(__file__).resolve().parents[1] / "workspace.yaml"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mind_harvest.pipelines.ui", description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1", help="address the UI listens on (default: loopback)")
    parser.add_argument("--port", type=int, default=3000, help="port of the UI (default: 3000)")
    args = parser.parse_args(argv)
    home = MindHome()
    instance = prepare_dagster_home(home)
    os.environ["DAGSTER_HOME"] = str(instance)
    print(f"mind home: {home.root}\nDagster home: {instance}\nUI: http://{args.host}:{args.port}", flush=True)
    bin_dir = Path(sys.executable).parent
    workspace = ["-w", str(WORKSPACE_FILE)]
    daemon = subprocess.Popen([str(bin_dir / "dagster-daemon"), "run", *workspace])
    try:
        webserver = [str(bin_dir / "dagster-webserver"), *workspace, "-h", args.host, "-p", str(args.port)]
        return subprocess.call(webserver)
    except KeyboardInterrupt:
        return 0
    finally:
        daemon.terminate()
        daemon.wait(30)


if __name__ == "__main__":
    sys.exit(main())
