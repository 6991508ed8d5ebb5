"""`mind harvest` of real mail and notes: messages (notes) per CPU second and peak memory.

The shared mail (``email/``, one source of its four corpora: maildirs, mbox files, single
messages, Outlook files) and each shared vault (``markdown/*``) are registered and harvested as a
user does (``mind sources add``, then ``mind harvest`` in a new process, ``_harvest_run``), each in
a fresh home, once with the mock embedder (the pipeline's own cost) and once with the real model
(``inprocess``, as ``mind harvest`` loads it). Printed per source and embedder: what the harvest
read (mails; notes and their sections), its CPU seconds (the whole ``mind harvest`` process: start,
the model's load, every stage, the history it records) and that per CPU second, the CPU before its
first stage began (imports, opening the mind), wall seconds, and the process's peak RSS
(``ru_maxrss``). CPU time, since the machine is shared; one run each.

    nice .venv/bin/python benchmarks/mail_notes_harvest.py [--embedders mock inprocess]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from _common import SHARED_DATA, machine, write_results
from _harvest_run import measured_harvest


def shared_sources() -> dict[str, tuple[str, Path]]:
    """The shared mail (one source of the whole folder) and each shared vault, by name."""
    vaults = sorted(p for p in (SHARED_DATA / "markdown").iterdir() if p.is_dir())
    return {"mail": ("email", SHARED_DATA / "email"), **{vault.name: ("markdown", vault) for vault in vaults}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--embedders", nargs="+", default=["mock", "inprocess"])
    args = parser.parse_args()
    print(machine())
    results: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for embedder in args.embedders:
            for name, (kind, path) in shared_sources().items():
                home = Path(tmp) / f"{name}-{embedder}"
                # the shared mail holds files no importer reads (malformed, Outlook): it ends partial, exit 1
                r = measured_harvest(home, path, None, kind=kind, embedder=embedder, allowed_exits=(0, 1))
                mail = kind == "email"
                count, unit = (r["messages"], "mails") if mail else (r["items"], "notes")
                r["per_cpu_s"] = count / r["cpu_s"]
                startup = r["stage_cpu_s"].get("start-up", 0.0)
                r["per_cpu_s_after_startup"] = count / max(r["cpu_s"] - startup, 1e-9)
                results[f"{name}/{embedder}"] = r
                sections = "" if mail else f" ({r['messages']:,} sections)"
                print(
                    f"{name} ({kind}, {embedder}, {r['status']}): {count:,} {unit}{sections}, {r['frames']:,} frames; "
                    f"{r['cpu_s']:.1f} CPU s = {r['per_cpu_s']:,.1f} {unit}/CPU s ({startup:.1f} of them before "
                    f"the first stage: {r['per_cpu_s_after_startup']:,.1f} {unit}/CPU s after it); "
                    f"{r['wall_s']:.1f} s wall; peak RSS {r['peak_rss_mb']:,.0f} MB",
                    flush=True,
                )
    write_results("mail_notes_harvest", {"sources": results})


if __name__ == "__main__":
    main()
