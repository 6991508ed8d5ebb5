"""Backfills whose status tells what their runs did: launched through the webserver, as the UI's
"Launch backfill" does, so the daemon submits the runs and ends the backfill "Succeeded" when all
of them succeeded and "Failed" when one of them failed.

``dagster job backfill`` (the command line) is not used for that: it submits every run itself
and marks its backfill completed at once, before any run has started, so the UI shows it green
"Completed" whatever its runs then do.

    python -m mind_harvest.pipelines.backfill --job harvest_job --partitions demo/chatgpt,demo/vault
    python -m mind_harvest.pipelines.backfill --job harvest_job --all --url http://127.0.0.1:3000
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import httpx

DEFAULT_URL = "http://127.0.0.1:3000"
LAUNCH = """
mutation Launch($params: LaunchBackfillParams!) {
  launchPartitionBackfill(backfillParams: $params) {
    __typename
    ... on LaunchBackfillSuccess { backfillId }
    ... on PythonError { message }
    ... on PartitionSetNotFoundError { message }
    ... on PartitionKeysNotFoundError { message }
    ... on UnauthorizedError { message }
    ... on InvalidSubsetError { message }
  }
}
"""
LOCATIONS = """
{
  repositoriesOrError {
    __typename
    ... on RepositoryConnection { nodes { name location { name } pipelines { name } } }
    ... on PythonError { message }
  }
}
"""
STATUS = """
query Status($id: String!) {
  partitionBackfillOrError(backfillId: $id) {
    __typename
    ... on PartitionBackfill { status }
    ... on PythonError { message }
    ... on BackfillNotFoundError { message }
  }
}
"""


class BackfillError(RuntimeError):
    """The webserver refused the backfill, or could not be reached; the message says why."""


def _graphql(url: str, query: str, variables: dict) -> dict:
    try:
        response = httpx.post(f"{url.rstrip('/')}/graphql", json={"query": query, "variables": variables}, timeout=60)
        response.raise_for_status()
    except httpx.HTTPError as exc:
        raise BackfillError(f"the Dagster webserver at {url} could not be reached: {exc}") from None
    body = response.json()
    if body.get("errors"):
        raise BackfillError(f"the Dagster webserver at {url} refused the request: {body['errors'][0]['message']}")
    return body["data"]


def job_repository(job: str, *, url: str = DEFAULT_URL) -> dict[str, str]:
    """The repository selector of the code location that holds ``job`` (loaded by the webserver)."""
    result = _graphql(url, LOCATIONS, {})["repositoriesOrError"]
    for node in result.get("nodes", []):
        if job in {pipeline["name"] for pipeline in node["pipelines"]}:
            return {"repositoryLocationName": node["location"]["name"], "repositoryName": node["name"]}
    raise BackfillError(f"no code location served by {url} has a job {job!r} (still loading?)")


def launch_backfill(job: str, partitions: Sequence[str] | None, *, url: str = DEFAULT_URL) -> str:
    """Ask the webserver at ``url`` for a backfill of ``job`` over ``partitions`` (None: every
    partition); returns its id. The daemon launches its runs and sets its final status."""
    params: dict = {
        "selector": {"partitionSetName": f"{job}_partition_set", "repositorySelector": job_repository(job, url=url)},
    }
    if partitions is None:
        params["allPartitions"] = True
    else:
        params["partitionNames"] = list(partitions)
    result = _graphql(url, LAUNCH, {"params": params})["launchPartitionBackfill"]
    if result["__typename"] != "LaunchBackfillSuccess":
        raise BackfillError(f"backfill of {job} refused ({result['__typename']}): {result.get('message', '')}")
    return result["backfillId"]


def backfill_status(backfill_id: str, *, url: str = DEFAULT_URL) -> str:
    """The backfill's status as the UI shows it: REQUESTED while runs are pending, then
    COMPLETED_SUCCESS ("Succeeded") or COMPLETED_FAILED ("Failed"), or CANCELED / FAILED."""
    result = _graphql(url, STATUS, {"id": backfill_id})["partitionBackfillOrError"]
    if result["__typename"] != "PartitionBackfill":
        raise BackfillError(f"backfill {backfill_id}: {result.get('message', result['__typename'])}")
    return result["status"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m mind_harvest.pipelines.backfill", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--job", default="harvest_job", help="the partitioned job (default: harvest_job)")
    chosen = parser.add_mutually_exclusive_group(required=True)
    chosen.add_argument("--partitions", help="comma-separated partition keys, e.g. demo/chatgpt,demo/vault")
    chosen.add_argument("--all", action="store_true", help="every partition of the job")
    parser.add_argument("--url", default=DEFAULT_URL, help=f"the Dagster webserver (default: {DEFAULT_URL})")
    args = parser.parse_args(argv)
    partitions = None if args.all else [p for p in args.partitions.split(",") if p]
    try:
        backfill_id = launch_backfill(args.job, partitions, url=args.url)
    except BackfillError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"backfill {backfill_id} requested: {args.url.rstrip('/')}/runs/b/{backfill_id}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
