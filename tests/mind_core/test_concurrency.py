"""Two processes writing one mind at once lose nothing and never see "database is locked"."""

import multiprocessing as mp

from mind_core.mind import Mind

# Bounds for the children, well inside the test's own timeout: on a loaded 2-core machine a spawned
# child takes seconds to import before it writes, and 120 s once proved too short (the test then
# failed with exit code None although nothing was lost).
JOIN_SECONDS = 480


def _writer(path: str, worker: int, n: int, barrier) -> None:
    with Mind.open(path) as mind:
        barrier.wait()
        for batch in range(n // 50):
            with mind.db.transaction():
                gop = mind.sessions.ensure(f"w{worker}")["gop_id"]
                for i in range(50):
                    mind.frames.create_i_frame(gop, f"worker {worker} frame {batch * 50 + i}")


def _ensure_active(path: str, barrier, out) -> None:
    with Mind.open(path) as mind:
        barrier.wait()
        out.put(mind.sessions.ensure_active()["gop_id"])


def test_two_processes_write_one_mind(tmp_path):
    path = str(tmp_path / "shared.mind")
    Mind.open(path).close()
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(2)
    procs = [ctx.Process(target=_writer, args=(path, w, 1000, barrier)) for w in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(JOIN_SECONDS)
    assert [p.exitcode for p in procs] == [0, 0]
    with Mind.open(path) as mind:
        assert mind.frames.get_stats()["total"] == 2000
        assert mind.db.scalar("SELECT COUNT(*) FROM memory_frames_fts") == 2000
        for worker in range(2):
            ts = [f.t for f in mind.frames.get_gop_frames(f"w{worker}")]
            assert ts == list(range(1000))


def test_concurrent_ensure_active_makes_one_session(tmp_path):
    path = str(tmp_path / "twins.mind")
    Mind.open(path).close()
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(4)
    out = ctx.Queue()
    procs = [ctx.Process(target=_ensure_active, args=(path, barrier, out)) for _ in range(4)]
    for p in procs:
        p.start()
    gop_ids = {out.get(timeout=JOIN_SECONDS) for _ in procs}
    for p in procs:
        p.join(JOIN_SECONDS)
    assert len(gop_ids) == 1
    with Mind.open(path) as mind:
        assert len(mind.sessions.get_active()) == 1
