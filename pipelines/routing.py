"""Where each step may run: the op tags that route it to a queue.

A mind is one SQLite file with one writer, never shared over a network filesystem, so the steps
that write a mind (import, vector load, cognify, reconcile, compaction, and the snapshot, which
reads the files) run on the mind home's node; scanning and embedding touch no mind and run on
any worker. With the Celery executor (``dagster-celery``) the ``dagster-celery/queue`` tag picks
the queue a step is sent to: a worker started with ``-q home`` on the home node takes the writing
steps, workers with ``-q any`` anywhere take the rest. With the default in-process or
multiprocess executor the tags change nothing.

The queue names come from the environment when the code location loads:
``MIND_HARVEST_ANY_QUEUE`` (default ``any``) and ``MIND_HARVEST_HOME_QUEUE`` (default ``home``).
``mind_harvest/stage`` says which kind of step it is (``stateless`` or ``writing``), for people
and for tests that read a run's events.
"""

from __future__ import annotations

import os

QUEUE_TAG = "dagster-celery/queue"
STAGE_TAG = "mind_harvest/stage"
ANY_QUEUE_ENV = "MIND_HARVEST_ANY_QUEUE"
HOME_QUEUE_ENV = "MIND_HARVEST_HOME_QUEUE"
DEFAULT_ANY_QUEUE = "any"
DEFAULT_HOME_QUEUE = "home"
STATELESS, WRITING = "stateless", "writing"
# The Dagster concurrency pool of every step that opens a mind (``pool=`` on its asset or op):
# the home node's disk and cores are shared by all its minds, so the writing steps in progress at
# once, across runs, are capped by the pool's limit (the shipped dagster.yaml sets 2; change it
# with ``dagster instance concurrency set mind_writes N``). One writer per mind stays the run
# queue's and the write lock's job.
WRITE_POOL = "mind_writes"


def any_queue() -> str:
    return os.environ.get(ANY_QUEUE_ENV) or DEFAULT_ANY_QUEUE


def home_queue() -> str:
    return os.environ.get(HOME_QUEUE_ENV) or DEFAULT_HOME_QUEUE


def stateless_step() -> dict[str, str]:
    """Tags of a step that reads and writes only the staging store: any worker."""
    return {QUEUE_TAG: any_queue(), STAGE_TAG: STATELESS}


def writing_step() -> dict[str, str]:
    """Tags of a step that opens a mind: the home node's queue only."""
    return {QUEUE_TAG: home_queue(), STAGE_TAG: WRITING}
