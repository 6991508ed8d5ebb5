"""Where and how long each step of a run ran, read from the run's own event log.

dagster-celery records two engine events per step: "Submitting celery task for step X to queue Q"
(in the run's process; with several home nodes followed by ours, "Routing step X to queue Q") and
"Executing steps X in celery worker" with the worker's node name as
metadata (in the worker). With the step's start and end events they give a step's queue, worker
and duration, without any logging of our own.
"""

from __future__ import annotations

from dataclasses import dataclass

import dagster as dg
from mind_harvest.pipelines.home_routing import ROUTED_PREFIX

WORKER_KEY = "Celery worker"
QUEUE_PREFIX = 'Submitting celery task for step "{step}" to queue "'
ENDS = {dg.DagsterEventType.STEP_SUCCESS, dg.DagsterEventType.STEP_FAILURE}


@dataclass
class StepRecord:
    step: str
    queue: str | None = None
    workers: tuple[str, ...] = ()  # node names without the host: ("home",); two when retried elsewhere
    received: float | None = None  # the worker took the task (before it loads the job and resources)
    started: float | None = None
    ended: float | None = None
    succeeded: bool = False

    @property
    def seconds(self) -> float:
        """From the worker taking the step to its end: the step's own time and the worker's
        per-step overhead, not the time it waited in the queue."""
        began = self.received or self.started
        return (self.ended - began) if self.ended and began else 0.0


def step_records(instance: dg.DagsterInstance, run_id: str) -> dict[str, StepRecord]:
    records: dict[str, StepRecord] = {}
    for entry in instance.all_logs(run_id):
        event = entry.dagster_event
        if event is None or not entry.step_key:
            continue
        record = records.setdefault(entry.step_key, StepRecord(entry.step_key))
        if event.event_type == dg.DagsterEventType.ENGINE_EVENT:
            metadata = event.engine_event_data.metadata if event.engine_event_data else {}
            if WORKER_KEY in metadata:
                record.workers += (str(metadata[WORKER_KEY].value).split("@")[0],)
                record.received = entry.timestamp
            # the queue of the op's tag, then, with several home nodes, the one it was routed to
            for prefix in (QUEUE_PREFIX.format(step=entry.step_key), ROUTED_PREFIX.format(step=entry.step_key)):
                if entry.user_message.startswith(prefix):
                    record.queue = entry.user_message[len(prefix):].split('"', 1)[0]
        elif event.event_type == dg.DagsterEventType.STEP_START:
            record.started = entry.timestamp
        elif event.event_type in ENDS:
            record.ended = entry.timestamp
            record.succeeded = event.event_type == dg.DagsterEventType.STEP_SUCCESS
    return records
