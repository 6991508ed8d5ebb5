"""``make cluster``: a real Dagster cluster on this machine, from the same pieces a team deploys.

PostgreSQL (Debian's server, a private cluster made with ``initdb`` in the cluster folder) holds
the instance of ``deploy/dagster.yaml``; Redis is the Celery broker and result backend; two
Celery workers started by ``dagster-celery worker start``: the "any" worker takes stateless steps
only, the "home" worker owns the minds' folder and takes the writing steps (and stateless ones when
it is free); ``dagster-daemon`` runs the queue, sensors and schedules; ``dagster-webserver`` is the
UI. Every process is a child of this one, in its own process group, and is stopped with it (Ctrl-C,
or by itself with ``--check``).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from mind_core.harvest.staging_store import STAGING_URL_ENV, default_staging_url

REPO = Path(__file__).resolve().parents[1]
DEPLOY = REPO / "deploy"
INSTANCE_CONFIG = DEPLOY / "dagster.yaml"
CELERY_CONFIG = DEPLOY / "celery.yaml"
DEFAULT_FOLDER = REPO / ".cluster"
DEFAULT_LOCATION = ("-m", "mind_harvest.pipelines.definitions", "-a", "defs")
BIN = Path(sys.executable).parent
STARTUP_TIMEOUT_S = 90
STOP_TIMEOUT_S = 20
PG_DATABASE = "dagster"
PG_USER = "dagster"
INSTALL_HINT = "apt-get install -y postgresql redis-server"


class ClusterError(RuntimeError):
    """A piece of the cluster is missing or did not come up; the message says which and why."""


@dataclass(frozen=True)
class Queues:
    """The Celery queues, named for the code location through the environment
    (``mind_harvest.pipelines.routing``): ``shared`` for stateless steps (every worker), ``home`` for the steps
    that open a mind (only the worker on the minds' node). The home worker also takes steps
    without a queue tag (dagster-celery's default queue): a step nobody routed may open a mind."""

    shared: str = "any"
    home: str = "home"
    untagged: str = "dagster"


@dataclass
class ClusterSettings:
    folder: Path
    minds: Path
    location: Sequence[str] = DEFAULT_LOCATION
    queues: Queues = field(default_factory=Queues)
    any_worker: bool = True  # False: the home worker alone (a one-worker cluster, for benchmarks)
    any_concurrency: int = 1
    home_concurrency: int = 1
    webserver: bool = True
    webserver_port: int = 3000
    extra_env: Mapping[str, str] = field(default_factory=dict)
    ephemeral: bool = False  # a throwaway cluster (tests, benchmarks): PostgreSQL without fsync


def _server_binary(name: str) -> Path:
    """A PostgreSQL server program: on PATH, else in Debian's versioned folder (newest first)."""
    found = shutil.which(name)
    if found:
        return Path(found)
    candidates = sorted(
        Path("/usr/lib/postgresql").glob(f"*/bin/{name}"), key=lambda p: int(p.parts[-3]), reverse=True
    )
    if not candidates:
        raise ClusterError(f"PostgreSQL's {name} not found: install the server ({INSTALL_HINT})")
    return candidates[0]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait_for(what: str, ready, processes: Mapping[Path, subprocess.Popen], timeout: float) -> None:
    """Poll ``ready()`` until it is true; a process that exits (its log is shown) or a timeout fails."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for log, process in processes.items():
            if process.poll() is not None:
                raise ClusterError(f"{what}: exited with code {process.returncode}; its log {log}:\n{_tail(log)}")
        try:
            if ready():
                return
        except Exception:  # noqa: BLE001 - not up yet: connection refused, broker not ready, ...
            pass
        time.sleep(0.3)
    logs = "\n".join(f"{log}:\n{_tail(log)}" for log in processes)
    raise ClusterError(f"{what} did not come up within {timeout:.0f} s\n{logs}")


def _tail(log: Path, lines: int = 30) -> str:
    return "\n".join(log.read_text(errors="replace").splitlines()[-lines:]) if log.exists() else "(no log)"


class LocalCluster:
    """Start with ``start()`` (or use as a context manager), stop with ``stop()``: every process it
    started is stopped, also after a failed start."""

    def __init__(self, settings: ClusterSettings) -> None:
        self.settings = settings
        self.folder = settings.folder.resolve()
        self.logs = self.folder / "logs"
        self.dagster_home = self.folder / "dagster_home"
        self.pg_port = _free_port()
        self.redis_port = _free_port()
        self._pg_root: Path | None = None
        self._pg_data: Path | None = None
        self._pg_user: pwd.struct_passwd | None = None
        self._processes: list[tuple[str, subprocess.Popen]] = []

    # --- what every Dagster process of the cluster shares -------------------------------------
    @property
    def env(self) -> dict[str, str]:
        redis = f"redis://127.0.0.1:{self.redis_port}"
        pythonpath = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
        return {
            **os.environ,
            "PYTHONPATH": pythonpath,
            # the worker command starts `celery` from PATH
            "PATH": os.pathsep.join([str(BIN), os.environ.get("PATH", "")]),
            "DAGSTER_HOME": str(self.dagster_home),
            "MIND_HARVEST_PG_HOST": "127.0.0.1",
            "MIND_HARVEST_PG_PORT": str(self.pg_port),
            "MIND_HARVEST_PG_USER": PG_USER,
            "MIND_HARVEST_PG_PASSWORD": "",
            "MIND_HARVEST_PG_DB": PG_DATABASE,
            "MIND_HARVEST_CELERY_BROKER": f"{redis}/0",
            "MIND_HARVEST_CELERY_BACKEND": f"{redis}/1",
            "MIND_HARVEST_DAGSTER_EXECUTOR": "celery",
            "MIND_HARVEST_ANY_QUEUE": self.settings.queues.shared,
            "MIND_HARVEST_HOME_QUEUE": self.settings.queues.home,
            "MIND_HOME": str(self.settings.minds),
            # the default store of the home node, named for every process: the "any" worker has
            # a home of its own (no minds) and must still stage where the home worker reads
            STAGING_URL_ENV: default_staging_url(self.settings.minds),
            **self.settings.extra_env,
        }

    def worker_env(self, name: str) -> dict[str, str]:
        """The "any" worker runs as on a machine of its own: its ``$MIND_HOME`` is an empty folder,
        so a stateless step that opened a mind would fail there instead of passing unnoticed."""
        if name != "any":
            return self.env
        return {**self.env, "MIND_HOME": str(self.folder / "any-node")}

    @property
    def webserver_url(self) -> str:
        return f"http://127.0.0.1:{self.settings.webserver_port}"

    @property
    def instance_env(self) -> dict[str, str]:
        """What a process needs in its environment to open the cluster's instance
        (``dg.DagsterInstance.get()``)."""
        return {k: v for k, v in self.env.items() if k == "DAGSTER_HOME" or k.startswith("MIND_HARVEST_PG_")}

    def launch_backfill(self, job: str, partitions: Sequence[str]) -> None:
        """Queue one run of ``job`` per partition (``dagster job backfill``); the daemon launches them."""
        self._run(
            "backfill",
            [str(BIN / "dagster"), "job", "backfill", *self.settings.location, "-j", job,
             "--partitions", ",".join(partitions), "--noprompt"],
        )

    def wait_for_runs(self, instance, partitions: Sequence[str], timeout: float) -> list:
        """The run records of ``partitions`` once each has a finished run (success, failure or
        canceled); a cluster process that exits, or the timeout, raises ClusterError."""
        from dagster import DagsterRunStatus, RunsFilter

        finished = {DagsterRunStatus.SUCCESS, DagsterRunStatus.FAILURE, DagsterRunStatus.CANCELED}
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.exited():
                raise ClusterError(f"stopped during the runs: {', '.join(self.exited())} (logs {self.logs})")
            records = [
                r for r in instance.get_run_records(RunsFilter(statuses=list(finished)))
                if r.dagster_run.tags.get("dagster/partition") in set(partitions)
            ]
            if {r.dagster_run.tags.get("dagster/partition") for r in records} == set(partitions):
                return records
            time.sleep(1)
        raise ClusterError(f"runs not finished after {timeout:.0f} s (logs {self.logs})")

    # --- lifecycle ------------------------------------------------------------------------------
    def __enter__(self) -> LocalCluster:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self) -> None:
        try:
            self.logs.mkdir(parents=True, exist_ok=True)
            self.dagster_home.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(INSTANCE_CONFIG, self.dagster_home / "dagster.yaml")
            self._start_postgres()
            self._start_redis()
            self._run("instance migrate", [str(BIN / "dagster"), "instance", "migrate"])
            self._start_workers()
            location = list(self.settings.location)
            self._spawn("daemon", [str(BIN / "dagster-daemon"), "run", *location])
            if self.settings.webserver:
                self._start_webserver(location)
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        """Dagster and Celery first (they hold connections), then Redis, then PostgreSQL."""
        for name, process in reversed(self._processes):
            self._terminate(name, process)
        self._processes.clear()
        if self._pg_data is not None:
            self._as_pg_user(
                [str(_server_binary("pg_ctl")), "stop", "-D", str(self._pg_data), "-m", "fast", "-w"],
                check=False,
            )
            self._pg_data = None
        if self._pg_root is not None:
            shutil.rmtree(self._pg_root, ignore_errors=True)
            self._pg_root = None

    def exited(self) -> list[str]:
        """The names of the cluster's processes that have ended."""
        return [name for name, process in self._processes if process.poll() is not None]

    # --- the pieces -----------------------------------------------------------------------------
    def _start_postgres(self) -> None:
        """A private server owned by the ``postgres`` account when we are root (the server refuses
        to run as root), by the current user otherwise; trust authentication on loopback only."""
        if os.geteuid() == 0:
            try:
                self._pg_user = pwd.getpwnam("postgres")
            except KeyError as exc:
                raise ClusterError(f"no 'postgres' system account: install the server ({INSTALL_HINT})") from exc
        # a folder of its own outside the cluster folder: that one may sit under a private /root path
        pg_root = self._pg_root = Path(tempfile.mkdtemp(prefix="mind-harvest-pg-"))
        if self._pg_user is not None:
            os.chown(pg_root, self._pg_user.pw_uid, self._pg_user.pw_gid)
        data = pg_root / "data"
        self._as_pg_user(
            [str(_server_binary("initdb")), "-D", str(data), "-U", PG_USER, "--auth=trust", "-E", "UTF8",
             "--no-sync", "--locale=C"],
            log=self.logs / "initdb.log",
        )
        options = f"-c listen_addresses=127.0.0.1 -p {self.pg_port} -k {pg_root}"
        if self.settings.ephemeral:
            options += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        self._as_pg_user(
            [str(_server_binary("pg_ctl")), "start", "-D", str(data), "-w", "-t", str(STARTUP_TIMEOUT_S),
             "-l", str(pg_root / "server.log"), "-o", options],
            log=self.logs / "postgres.log",
        )
        self._pg_data = data
        import psycopg2

        connection = psycopg2.connect(host="127.0.0.1", port=self.pg_port, user=PG_USER, dbname="postgres")
        try:
            connection.autocommit = True  # CREATE DATABASE runs outside a transaction
            with connection.cursor() as cursor:
                cursor.execute(f"CREATE DATABASE {PG_DATABASE}")
        finally:
            connection.close()

    def _start_redis(self) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            raise ClusterError(f"redis-server not found: install it ({INSTALL_HINT})")
        folder = self.folder / "redis"
        folder.mkdir(exist_ok=True)
        process = self._spawn(
            "redis",
            [binary, "--port", str(self.redis_port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", str(folder)]
        )
        import redis

        client = redis.Redis(host="127.0.0.1", port=self.redis_port)
        _wait_for("redis-server", client.ping, {self.logs / "redis.log": process}, STARTUP_TIMEOUT_S)
        client.close()

    def _start_workers(self) -> None:
        names = ["home", "any"] if self.settings.any_worker else ["home"]
        self.start_workers(*names)

    def _worker_command(self, name: str) -> list[str]:
        """``home`` listens on the home queue and the shared one; ``any`` on the shared queue only."""
        queues = self.settings.queues
        listen, concurrency = {
            "home": ([queues.home, queues.shared, queues.untagged], self.settings.home_concurrency),
            "any": ([queues.shared], self.settings.any_concurrency),
        }[name]
        command = [str(BIN / "dagster-celery"), "worker", "start", "-A", "dagster_celery.app",
                   "-y", str(CELERY_CONFIG), "-n", name, "--loglevel", "WARNING"]
        # one comma-separated list: Celery 5 keeps only the last of repeated -Q options
        command += ["-q", ",".join(listen)]
        return [*command, "--", "--concurrency", str(concurrency)]

    def start_workers(self, *names: str) -> None:
        """Start the named workers (``home``, ``any``) and wait until each answers the broker."""
        started = {}
        for name in names:
            started[self.logs / f"worker-{name}.log"] = self._spawn(
                f"worker-{name}", self._worker_command(name), self.worker_env(name)
            )
        expected = {f"{name}@{socket.gethostname()}" for name in names}
        from celery import Celery

        app = Celery(broker=self.env["MIND_HARVEST_CELERY_BROKER"])

        def all_answer() -> bool:
            return expected <= {name for reply in app.control.ping(timeout=1.0) for name in reply}

        try:
            _wait_for("the Celery workers", all_answer, started, STARTUP_TIMEOUT_S)
        finally:
            app.close()

    def stop_worker(self, name: str) -> None:
        """Stop a worker (as a machine that goes down would, between tasks: a warm shutdown)."""
        for entry in [e for e in self._processes if e[0] == f"worker-{name}"]:
            self._terminate(*entry)
            self._processes.remove(entry)

    def _start_webserver(self, location: list[str]) -> None:
        port = self.settings.webserver_port
        process = self._spawn(
            "webserver",
            [str(BIN / "dagster-webserver"), *location, "-h", "127.0.0.1", "-p", str(port)]
        )

        def answers() -> bool:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return True

        _wait_for("dagster-webserver", answers, {self.logs / "webserver.log": process}, STARTUP_TIMEOUT_S)

    # --- processes ------------------------------------------------------------------------------
    def _spawn(self, name: str, command: list[str], env: Mapping[str, str] | None = None) -> subprocess.Popen:
        log = open(self.logs / f"{name}.log", "ab")  # noqa: SIM115 - the child keeps writing to it
        process = subprocess.Popen(
            command, cwd=REPO, env=env or self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        log.close()
        self._processes.append((name, process))
        return process

    def _run(self, name: str, command: list[str]) -> None:
        log = self.logs / f"{name.replace(' ', '-')}.log"
        with open(log, "ab") as out:
            code = subprocess.call(command, cwd=REPO, env=self.env, stdout=out, stderr=subprocess.STDOUT)
        if code != 0:
            raise ClusterError(f"{name} failed with code {code}; its log {log}:\n{_tail(log)}")

    def _as_pg_user(self, command: list[str], *, log: Path | None = None, check: bool = True) -> None:
        account = self._pg_user
        out = open(log, "ab") if log else subprocess.DEVNULL  # noqa: SIM115
        try:
            code = subprocess.call(
                command,
                cwd="/",
                stdout=out,
                stderr=subprocess.STDOUT,
                user=account.pw_uid if account else None,
                group=account.pw_gid if account else None,
                extra_groups=[] if account else None,
                env={"PATH": os.environ.get("PATH", ""), "LC_ALL": "C"},
            )
        finally:
            if log:
                out.close()
        if check and code != 0:
            raise ClusterError(f"{Path(command[0]).name} failed with code {code}; its log {log}:\n{_tail(log)}")

    @staticmethod
    def _terminate(name: str, process: subprocess.Popen) -> None:
        """SIGTERM to the process group this cluster started and to every descendant (the worker
        command's Celery child, the code servers the daemon spawns), SIGKILL to what remains."""
        if process.poll() is not None:
            return
        try:
            family = [psutil.Process(process.pid), *psutil.Process(process.pid).children(recursive=True)]
        except psutil.NoSuchProcess:
            family = []
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        for member in family:
            with contextlib.suppress(psutil.NoSuchProcess):
                member.terminate()
        _, alive = psutil.wait_procs(family, timeout=STOP_TIMEOUT_S)
        for member in alive:
            with contextlib.suppress(psutil.NoSuchProcess):
                member.kill()
        psutil.wait_procs(alive, timeout=5)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(5)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m deploy.local_cluster", description=__doc__.splitlines()[0])
    parser.add_argument("--folder", type=Path, default=DEFAULT_FOLDER, help="cluster state (default: .cluster)")
    parser.add_argument("--minds", type=Path, help="the home worker's minds folder (default: $MIND_HOME or <folder>/minds)")
    parser.add_argument("--port", type=int, help="port of the UI (default: 3000; any free one with --check)")
    parser.add_argument("--check", action="store_true", help="start everything, report, stop (no waiting)")
    args = parser.parse_args(argv)
    minds = args.minds or Path(os.environ.get("MIND_HOME") or args.folder / "minds")
    port = args.port or (_free_port() if args.check else 3000)
    settings = ClusterSettings(folder=args.folder, minds=minds.resolve(), webserver_port=port)
    try:
        with LocalCluster(settings) as cluster:
            print(
                f"PostgreSQL 127.0.0.1:{cluster.pg_port}  Redis 127.0.0.1:{cluster.redis_port}\n"
                f"workers: any (queue {settings.queues.shared}), home (queues {settings.queues.home}, "
                f"{settings.queues.shared}, {settings.queues.untagged}; minds {settings.minds})\n"
                f"daemon and UI: {cluster.webserver_url}\nlogs: {cluster.logs}",
                flush=True,
            )
            if args.check:
                print("cluster check: every process came up; stopping", flush=True)
                return 0
            print("Ctrl-C stops the cluster", flush=True)
            while not cluster.exited():
                time.sleep(1)
            print(f"stopped by itself: {', '.join(cluster.exited())} (see {cluster.logs})", file=sys.stderr)
            return 1
    except KeyboardInterrupt:
        return 0
    except ClusterError as exc:
        print(f"cluster: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
