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
import hashlib
import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import psutil
import yaml
from mind_harvest.pipelines.homes import HOMES_ENV, HomeNode, read_homes

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
# Pieces started again when they exit (a worker lost, as a machine going down would be); at most
# MAX_RESTARTS of one piece within RESTART_WINDOW_S, then the cluster stops (something is wrong).
RESTARTABLE = ("daemon", "webserver")  # and every worker-<name>
MAX_RESTARTS = 5
RESTART_WINDOW_S = 300
WILL_RETRY_TAG = "dagster/will_retry"  # set on a failed run that run retries will re-execute


@contextlib.contextmanager
def environment(values: Mapping[str, str]) -> Iterator[None]:
    """These environment variables set in this process while the block runs, then restored."""
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


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
    # A throwaway cluster (tests, benchmarks): PostgreSQL without fsync, in a temporary folder
    # removed on stop. Otherwise its data folder stays, so the runs' history outlives a restart.
    ephemeral: bool = False
    wipe: bool = False  # start from an empty history (the data folder of an earlier start removed)
    # Celery's visibility timeout and restore sweep (deploy/celery.yaml) for this cluster's workers:
    # how long a step of a lost worker waits before another worker runs it. None: celery.yaml's.
    visibility_timeout_s: int | None = None
    restore_interval_s: int | None = None
    # Several home nodes (a homes file, ``pipelines/homes.py``): a home worker per node, named after
    # it, listening on its queue and the shared one, its minds in the file's folder or, when the
    # file names none, ``<folder>/homes/<name>``; instead of the one "home" worker.
    homes_file: Path | None = None
    # Sections of deploy/dagster.yaml replaced for this cluster (tests: a short run-monitoring poll).
    instance_overrides: Mapping[str, object] = field(default_factory=dict)


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
        self._pg_temporary: Path | None = None  # an ephemeral cluster's data, removed on stop
        self.history_kept = False  # the server started on the data of an earlier start
        self._pg_data: Path | None = None
        self._pg_user: pwd.struct_passwd | None = None
        self._processes: list[tuple[str, subprocess.Popen]] = []
        self._restarts: dict[str, list[float]] = {}
        self.celery_config = self.folder / "celery.yaml"  # deploy/celery.yaml with this cluster's timeouts
        self.homes_file = self.folder / "homes.yaml"  # the homes file with every node's minds folder
        self.home_nodes: dict[str, HomeNode] = {}
        if settings.homes_file is not None:
            self.home_nodes = {
                node.name: HomeNode(node.name, node.queue, node.workspaces, node.minds or self.folder / "homes" / node.name)
                for node in read_homes(settings.homes_file).nodes
            }

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
            **({HOMES_ENV: str(self.homes_file)} if self.home_nodes else {}),
            **self.settings.extra_env,
        }

    def worker_env(self, name: str) -> dict[str, str]:
        """The "any" worker runs as on a machine of its own: its ``$MIND_HOME`` is an empty folder,
        so a stateless step that opened a mind would fail there instead of passing unnoticed; so
        does each node of a homes file, with its own minds folder."""
        if name in self.home_nodes:
            return {**self.env, "MIND_HOME": str(self.home_nodes[name].minds)}
        if name != "any":
            return self.env
        return {**self.env, "MIND_HOME": str(self.folder / "any-node")}

    @property
    def worker_names(self) -> list[str]:
        homes = list(self.home_nodes) or ["home"]
        return [*homes, "any"] if self.settings.any_worker else homes

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

    def launch_run(self, job: str, run_config: Mapping, tags: Mapping[str, str]) -> None:
        """Queue one run of ``job`` with this run config and tags (``dagster job launch``)."""
        self._run(
            "launch",
            [str(BIN / "dagster"), "job", "launch", *self.settings.location, "-j", job,
             "--config-json", json.dumps(run_config), "--tags", json.dumps(dict(tags))],
        )

    def wait_for_runs(self, instance, partitions: Sequence[str], timeout: float, job: str | None = None) -> list:
        """The latest run record of each of ``partitions`` (of ``job`` only, when named) once it has
        finished (success, failure or canceled) and no automatic retry of it is due (run retries,
        ``deploy/dagster.yaml``; a failed run that the retry daemon has not looked at yet, such as one
        the queue failed while launching it, may still be retried).
        Meanwhile a worker, the daemon or the webserver that exits is started again, as ``make
        cluster`` does; another piece that exits, or the timeout, raises ClusterError."""
        from dagster import DagsterRunStatus, RunsFilter

        finished = {DagsterRunStatus.SUCCESS, DagsterRunStatus.FAILURE, DagsterRunStatus.CANCELED}
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.restart_exited()
            latest = {}
            runs = RunsFilter(tags={"dagster/partition": list(partitions)}, job_name=job)
            for record in instance.get_run_records(runs):
                key = record.dagster_run.tags.get("dagster/partition")
                if key not in latest or record.create_timestamp > latest[key].create_timestamp:
                    latest[key] = record
            done = [r for r in latest.values() if r.dagster_run.status in finished and not _retry_due(instance, r)]
            if len(done) == len(set(partitions)):
                return done
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
            instance = {**yaml.safe_load(INSTANCE_CONFIG.read_text()), **self.settings.instance_overrides}
            (self.dagster_home / "dagster.yaml").write_text(yaml.safe_dump(instance, sort_keys=False))
            self._start_postgres()
            self._start_redis()
            self._run("instance migrate", [str(BIN / "dagster"), "instance", "migrate"])
            self._write_celery_config()
            self._write_homes_file()
            self._start_workers()
            self._start_daemon()
            if self.settings.webserver:
                self._start_webserver()
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
        if self._pg_temporary is not None:
            shutil.rmtree(self._pg_temporary, ignore_errors=True)
            self._pg_temporary = None

    def exited(self) -> list[str]:
        """The names of the cluster's processes that have ended."""
        return [name for name, process in self._processes if process.poll() is not None]

    def restart_exited(self) -> list[tuple[str, int]]:
        """Start again each worker, the daemon and the webserver that has ended (what remains of
        its process group killed first); (name, exit code) of each. Redis ending, or a piece
        ending more than MAX_RESTARTS times within RESTART_WINDOW_S, raises ClusterError."""
        restarted = []
        for entry in [e for e in self._processes if e[1].poll() is not None]:
            name, process = entry
            if name not in RESTARTABLE and not name.startswith("worker-"):
                raise ClusterError(f"{name} exited with code {process.returncode} (log {self.logs / name}.log)")
            now = time.monotonic()
            recent = self._restarts[name] = [t for t in self._restarts.get(name, []) if now - t < RESTART_WINDOW_S]
            if len(recent) >= MAX_RESTARTS:
                raise ClusterError(f"{name} exited {len(recent) + 1} times within {RESTART_WINDOW_S} s; stopping")
            recent.append(now)
            self._processes.remove(entry)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)  # its pool processes, code servers
            if name.startswith("worker-"):
                self.start_workers(name.removeprefix("worker-"))
            else:
                {"daemon": self._start_daemon, "webserver": self._start_webserver}[name]()
            restarted.append((name, process.returncode))
        return restarted

    @property
    def visibility_timeout_s(self) -> int:
        """How long a step of a lost worker waits before another worker runs it."""
        options = self._celery_config_source().get("broker_transport_options", {})
        return int(options.get("visibility_timeout", 3600))

    # --- the pieces -----------------------------------------------------------------------------
    def pg_root(self) -> Path:
        """Where the PostgreSQL server keeps its data: ``<folder>/postgres``, or, when the server
        runs as the ``postgres`` account (we are root), a folder of that account's own under
        ``/var/tmp`` named after the cluster folder (which may sit under a private ``/root`` path)."""
        if self._pg_user is None:
            return self.folder / "postgres"
        digest = hashlib.sha256(str(self.folder).encode()).hexdigest()[:12]
        return Path("/var/tmp") / f"mind-harvest-pg-{digest}"

    def _start_postgres(self) -> None:
        """A private server owned by the ``postgres`` account when we are root (the server refuses
        to run as root), by the current user otherwise; trust authentication on loopback only. Its
        data folder is kept across starts (the runs' history) unless the cluster is ephemeral or
        asked to wipe it."""
        if os.geteuid() == 0:
            try:
                self._pg_user = pwd.getpwnam("postgres")
            except KeyError as exc:
                raise ClusterError(f"no 'postgres' system account: install the server ({INSTALL_HINT})") from exc
        if self.settings.ephemeral:
            pg_root = Path(tempfile.mkdtemp(prefix="mind-harvest-pg-"))
            self._pg_temporary = pg_root
        else:
            pg_root = self.pg_root()
            if self.settings.wipe:
                shutil.rmtree(pg_root, ignore_errors=True)
            pg_root.mkdir(parents=True, exist_ok=True)
        if self._pg_user is not None:
            os.chown(pg_root, self._pg_user.pw_uid, self._pg_user.pw_gid)
        data = pg_root / "data"
        self.history_kept = (data / "PG_VERSION").exists()
        if (data / "postmaster.pid").exists():  # a server left running by a session killed without its stop
            self._as_pg_user([str(_server_binary("pg_ctl")), "stop", "-D", str(data), "-m", "fast", "-w"], check=False)
        if not self.history_kept:
            shutil.rmtree(data, ignore_errors=True)  # an initdb cut short
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
                cursor.execute("SELECT 1 FROM pg_database WHERE datname = %s", (PG_DATABASE,))
                if cursor.fetchone() is None:
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

    def _celery_config_source(self) -> dict:
        source = yaml.safe_load(CELERY_CONFIG.read_text())["execution"]["config"]["config_source"]
        options = source.setdefault("broker_transport_options", {})
        if self.settings.visibility_timeout_s is not None:
            options["visibility_timeout"] = self.settings.visibility_timeout_s
        if self.settings.restore_interval_s is not None:
            options["unacked_restore_interval"] = self.settings.restore_interval_s
        return source

    def _write_celery_config(self) -> None:
        """The workers' copy of deploy/celery.yaml, with the cluster's own timeouts when it has them."""
        config = yaml.safe_load(CELERY_CONFIG.read_text())
        config["execution"]["config"]["config_source"] = self._celery_config_source()
        self.celery_config.write_text(yaml.safe_dump(config, sort_keys=False))

    def _start_daemon(self) -> None:
        self._spawn("daemon", [str(BIN / "dagster-daemon"), "run", *self.settings.location])

    def _write_homes_file(self) -> None:
        """The homes file every process reads (``$MIND_HARVEST_HOMES``): the given one, with each
        node's minds folder (created) filled in."""
        if not self.home_nodes:
            return
        for node in self.home_nodes.values():
            node.minds.mkdir(parents=True, exist_ok=True)
        homes = [{"name": n.name, "queue": n.queue, "workspaces": list(n.workspaces), "minds": str(n.minds)}
                 for n in self.home_nodes.values()]
        self.homes_file.write_text(yaml.safe_dump({"homes": homes}, sort_keys=False))

    def _start_workers(self) -> None:
        self.start_workers(*self.worker_names)

    def _worker_command(self, name: str) -> list[str]:
        """``home`` listens on the home queue and the shared one; ``any`` on the shared queue only;
        a node of a homes file on its own queue and the shared one."""
        queues = self.settings.queues
        if name in self.home_nodes:
            listen, concurrency = [self.home_nodes[name].queue, queues.shared], self.settings.home_concurrency
        else:
            listen, concurrency = {
                "home": ([queues.home, queues.shared, queues.untagged], self.settings.home_concurrency),
                "any": ([queues.shared], self.settings.any_concurrency),
            }[name]
        command = [str(BIN / "dagster-celery"), "worker", "start", "-A", "dagster_celery.app",
                   "-y", str(self.celery_config), "-n", name, "--loglevel", "WARNING"]
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

    def _worker_process(self, name: str) -> subprocess.Popen:
        for process_name, process in self._processes:
            if process_name == f"worker-{name}" and process.poll() is None:
                return process
        raise ClusterError(f"no running worker {name!r}")

    def kill_pool_processes(self, name: str) -> list[int]:
        """SIGKILL the pool processes of worker ``name`` (the processes that run its tasks), as
        the OOM killer would; the worker's main process lives on and starts new ones. Their pids."""
        command = psutil.Process(self._worker_process(name).pid)  # dagster-celery worker start
        pool = [child for main in command.children() for child in main.children()
                if "celery" in " ".join(child.cmdline())]
        for process in pool:
            with contextlib.suppress(psutil.NoSuchProcess):
                process.kill()
        return [process.pid for process in pool]

    def kill_worker(self, name: str) -> None:
        """SIGKILL worker ``name`` whole (its main process and its pool), as a machine lost would
        be; it stays in the process list as exited, so ``restart_exited`` starts it again."""
        process = self._worker_process(name)
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(STOP_TIMEOUT_S)

    def _start_webserver(self) -> None:
        port = self.settings.webserver_port
        process = self._spawn(
            "webserver",
            [str(BIN / "dagster-webserver"), *self.settings.location, "-h", "127.0.0.1", "-p", str(port)]
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


def _retry_due(instance, record) -> bool:
    """Whether run retries may still re-execute this finished run: it says so (the will-retry tag),
    or it failed without the tag (it is set on a run failed during its steps, and by the retry
    daemon's next look at one failed otherwise) while run retries are on."""
    run = record.dagster_run
    tag = run.tags.get(WILL_RETRY_TAG)
    if tag is not None:
        return tag == "true"
    from dagster import DagsterRunStatus

    return run.status == DagsterRunStatus.FAILURE and instance.run_retries_enabled


def _exit_reason(code: int) -> str:
    if code < 0:
        with contextlib.suppress(ValueError):
            return f"killed by {signal.Signals(-code).name}"
    return f"exit code {code}"


def supervise(cluster: LocalCluster) -> None:
    """Until Ctrl-C: a worker, the daemon or the webserver that exits is started again, and the
    console says so (with what happens to the step a lost worker was running)."""
    while True:
        for name, code in cluster.restart_exited():
            note = ""
            if name.startswith("worker-"):
                note = (
                    f"; a step it was running goes back to its queue after the visibility timeout "
                    f"({cluster.visibility_timeout_s} s) and runs again"
                )
            stamp = time.strftime("%H:%M:%S")
            print(f"{stamp} {name} stopped ({_exit_reason(code)}): started again{note}", flush=True)
        time.sleep(1)


def _interrupt(_signum, _frame) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m deploy.local_cluster", description=__doc__.splitlines()[0])
    parser.add_argument("--folder", type=Path, default=DEFAULT_FOLDER, help="cluster state (default: .cluster)")
    parser.add_argument("--minds", type=Path, help="the home worker's minds folder (default: $MIND_HOME or <folder>/minds)")
    parser.add_argument("--port", type=int, help="port of the UI (default: 3000; any free one with --check)")
    parser.add_argument("--wipe", action="store_true", help="start with an empty run history (PostgreSQL's data removed)")
    parser.add_argument("--visibility-timeout", type=int, help="seconds before a lost worker's step runs elsewhere "
                        "(default: deploy/celery.yaml's)")
    parser.add_argument("--homes", type=Path, help="a homes file (deploy/homes.example.yaml): a home worker per "
                        "node, each with its own minds folder and queue (deploy/README.md, 'Several home nodes')")
    parser.add_argument("--check", action="store_true", help="start everything in a folder of its own (default "
                        ".cluster/check, emptied first), harvest the bundled examples, verify the mind, stop")
    args = parser.parse_args(argv)
    for stop_signal in (signal.SIGINT, signal.SIGTERM):  # Ctrl-C or `kill`: stop everything in order
        signal.signal(stop_signal, _interrupt)
    if args.check:  # a folder of its own, emptied first: never a user's minds or history
        args.folder = args.folder / "check" if args.folder == DEFAULT_FOLDER else args.folder
        shutil.rmtree(args.folder, ignore_errors=True)
        minds = args.minds or args.folder / "minds"
    else:
        minds = args.minds or Path(os.environ.get("MIND_HOME") or args.folder / "minds")
    port = args.port or (_free_port() if args.check else 3000)
    settings = ClusterSettings(
        folder=args.folder, minds=minds.resolve(), webserver_port=port, wipe=args.wipe or args.check,
        visibility_timeout_s=args.visibility_timeout, homes_file=args.homes,
    )
    try:
        with LocalCluster(settings) as cluster:
            history = "kept from the last start" if cluster.history_kept else "new"
            print(
                f"PostgreSQL 127.0.0.1:{cluster.pg_port} (run history {history}: {cluster.pg_root()}; "
                f"--wipe or make cluster WIPE=1 empties it)  Redis 127.0.0.1:{cluster.redis_port}\n"
                f"workers: any (queue {settings.queues.shared}), "
                + (", ".join(f"{n.name} (queues {n.queue}, {settings.queues.shared}; workspaces "
                             f"{', '.join(n.workspaces)}; minds {n.minds})" for n in cluster.home_nodes.values())
                   or f"home (queues {settings.queues.home}, {settings.queues.shared}, {settings.queues.untagged}; "
                      f"minds {settings.minds})") + "\n"
                f"daemon and UI: {cluster.webserver_url}\nlogs: {cluster.logs}",
                flush=True,
            )
            if args.check:
                from deploy.cluster_check import check_harvest

                return 0 if check_harvest(cluster) else 1
            print("Ctrl-C stops the cluster; a worker that stops is started again", flush=True)
            supervise(cluster)
    except KeyboardInterrupt:
        return 0
    except ClusterError as exc:
        print(f"cluster: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
