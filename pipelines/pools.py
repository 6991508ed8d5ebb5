"""One writer per mind: a Dagster concurrency pool per mind, claimed by the step that writes it.

Dagster's ``pool=`` is fixed when an asset is defined, but the mind a step writes depends on its
partition (the workspace in the key) and minds come and go at run time. So a writing step claims
a slot in the pool ``mind:<workspace>`` itself, from the instance's concurrency store: the same
slot table, first-come-first-served queue, Concurrency page in the UI, CLI
(``dagster instance concurrency set mind:<workspace> N``) and daemon clean-up of slots left by
dead runs that ``pool=`` uses. A pool without a limit gets ``WRITERS_PER_MIND`` (1) on first use;
an operator may set 0 to pause writes to one mind. Steps of other minds claim other pools and run
in parallel; read-only steps (scans, checks, snapshots) claim nothing.

With the slot, the step also holds the mind's OS write lock (``mind_core.write_lock``) while it
writes. Dagster's slot claims are atomic on Postgres-backed instance storage (row locks); on the
SQLite storage of ``dagster dev`` two simultaneous claims can both succeed, and creating a pool from
two processes at once can leave it unusable. The lock makes the one-writer rule hold on any
storage and serializes a pool's creation.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import dagster as dg

from mind_core.write_lock import mind_write_lock

POOL_PREFIX = "mind:"
WRITERS_PER_MIND = 1
_FIRST_WAIT_S = 0.1
_LONGEST_WAIT_S = 1.0


def mind_pool(workspace: str) -> str:
    return f"{POOL_PREFIX}{workspace}"


def _claim_slot(context: dg.AssetExecutionContext, pool: str, step_key: str) -> None:
    """Wait in the pool's queue until this step holds a slot."""
    storage = context.instance.event_log_storage
    wait = _FIRST_WAIT_S
    status = storage.claim_concurrency_slot(pool, context.run.run_id, step_key)
    if not status.is_claimed:
        context.log.info(f"waiting for a slot in pool {pool!r} (another step is writing this mind)")
    while not status.is_claimed:
        time.sleep(wait)
        wait = min(wait * 1.5, _LONGEST_WAIT_S)
        status = storage.claim_concurrency_slot(pool, context.run.run_id, step_key)


@contextmanager
def mind_writer(context: dg.AssetExecutionContext, workspace: str, mind_path: Path) -> Iterator[str]:
    """Hold the writer slot (pool ``mind:<workspace>``) and the write lock of one mind for the block."""
    storage = context.instance.event_log_storage
    pool = mind_pool(workspace)
    step_key = context.get_step_execution_context().step.key
    pooled = storage.supports_global_concurrency_limits
    if not pooled:
        context.log.warning(
            f"this instance's storage has no concurrency tables (run `dagster instance migrate`); "
            f"writing mind {workspace!r} under its write lock only, without pool {pool!r}"
        )
    began = time.perf_counter()
    if pooled:
        with mind_write_lock(mind_path):
            if pool not in storage.get_concurrency_keys():
                storage.set_concurrency_slots(pool, WRITERS_PER_MIND)
        _claim_slot(context, pool, step_key)
    try:
        with mind_write_lock(mind_path):
            context.log.debug(
                f"holding the writer slot of mind {workspace!r} (waited {time.perf_counter() - began:.1f}s)"
            )
            try:
                yield pool
            finally:
                context.log.debug(f"releasing the writer slot of mind {workspace!r}")
    finally:
        if pooled:
            storage.free_concurrency_slot_for_step(context.run.run_id, step_key)
