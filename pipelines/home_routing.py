"""The Celery executor with several home nodes: each run's home steps go to its mind's node.

The op tags (``pipelines/routing.py``) name one home queue for every mind. With a homes file
(``pipelines/homes.py``) a run of one mind (its ``mind_harvest/workspace`` tag) sends every step
that is not on the shared queue (the steps that open a mind, and any step without a queue tag) to
the queue of the node holding that mind instead; a run tied to no mind sends them to the first
node's queue. The stateless steps stay on the shared queue, but for a scan whose run config lacks
the source (made where the code location could not read the registry): it reads the registry
itself, so it runs on the mind's node too. Each step so moved gets an engine
event in the run's log ("Routing step ... to queue ..."), after dagster-celery's own "Submitting
celery task" event, which names the queue of the op tag. Imported only when the Celery executor is
chosen, so a single-machine install runs without dagster-celery.
"""

from __future__ import annotations

from dagster._core.events import DagsterEvent, EngineEventData
from dagster_celery.core_execution_loop import core_celery_execution_loop
from dagster_celery.executor import CeleryExecutor, _submit_task
from mind_harvest.pipelines.assets import harvest_items
from mind_harvest.pipelines.homes import Homes, configured_homes
from mind_harvest.pipelines.jobs import WORKSPACE_TAG
from mind_harvest.pipelines.routing import any_queue

ROUTED_PREFIX = 'Routing step "{step}" to queue "'


def home_queue_of_run(homes: Homes, workspace: str | None) -> tuple[str, str]:
    """The queue of the run's home node and why (for the run's log)."""
    if workspace is None:
        return homes.default.queue, f"{homes.default.name}, the home of runs tied to no mind"
    node = homes.owner(workspace)
    return node.queue, f"{node.name}, the home of workspace {workspace}"


class HomeRoutedCeleryExecutor(CeleryExecutor):
    """dagster-celery's executor, submitting each home step to the queue of its run's home node."""

    @classmethod
    def of(cls, executor: CeleryExecutor) -> HomeRoutedCeleryExecutor:
        return cls(
            retries=executor.retries,
            broker=executor.broker,
            backend=executor.backend,
            include=executor.include,
            config_source=dict(vars(executor.config_source)),  # dagster-celery keeps it as a dict_wrapper
        )

    def execute(self, plan_context, execution_plan):
        homes = configured_homes()
        if homes is None:
            return super().execute(plan_context, execution_plan)
        # an unknown workspace fails the run here, before any step runs, naming the homes file
        home_queue, reason = home_queue_of_run(homes, plan_context.dagster_run.tags.get(WORKSPACE_TAG))
        shared = any_queue()
        scan = harvest_items.node_def.name
        scan_configured = bool(plan_context.run_config.get("ops", {}).get(scan, {}).get("config"))

        def submit(app, context, step, queue, priority, known_state):
            if queue != shared or (step.key == scan and not scan_configured):
                DagsterEvent.engine_event(
                    context.for_step(step), f'{ROUTED_PREFIX.format(step=step.key)}{home_queue}" ({reason}).',
                    EngineEventData(),
                )
                queue = home_queue
            return _submit_task(app, context, step, queue, priority, known_state)

        return core_celery_execution_loop(plan_context, execution_plan, step_execution_fn=submit)
