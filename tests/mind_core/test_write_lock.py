import multiprocessing
import time

from mind_core.store.home import MindHome
from mind_core.store.write_lock import lock_path_for, mind_write_lock


def hold_for(mind_path, seconds, started, spans):
    with mind_write_lock(mind_path):
        began = time.monotonic()
        started.set()
        time.sleep(seconds)
        spans.put((began, time.monotonic()))


def test_a_second_process_waits_until_the_first_writer_is_done(tmp_path):
    mind = tmp_path / "home" / "workspaces" / "w.mind"
    context = multiprocessing.get_context("spawn")
    started, spans = context.Event(), context.Queue()
    first = context.Process(target=hold_for, args=(mind, 0.5, started, spans))
    first.start()
    assert started.wait(30)
    with mind_write_lock(mind, blocking=False) as acquired:
        assert acquired is False  # held by the other process
    with mind_write_lock(mind):
        got = time.monotonic()
    first.join(30)
    began, ended = spans.get(timeout=5)
    assert got >= ended > began
    assert lock_path_for(mind) == mind.with_name("w.mind.writer.lock")


def test_the_lock_is_released_when_the_holder_dies(tmp_path):
    mind = tmp_path / "w.mind"
    context = multiprocessing.get_context("spawn")
    started, spans = context.Event(), context.Queue()
    holder = context.Process(target=hold_for, args=(mind, 60, started, spans))
    holder.start()
    assert started.wait(30)
    holder.kill()
    holder.join(30)
    with mind_write_lock(mind, blocking=False) as acquired:
        assert acquired is True


def test_lock_files_are_not_taken_for_minds(tmp_path):
    home = MindHome(tmp_path)
    home.workspace_path("w").parent.mkdir(parents=True)
    home.workspace_path("w").touch()
    with mind_write_lock(home.workspace_path("w")):
        assert home.workspaces() == ["w"]
