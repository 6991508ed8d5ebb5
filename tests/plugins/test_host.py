"""The pluggy host: entry-point discovery, the autoload switch, and the unknown-kind error."""

from __future__ import annotations

import textwrap
import types
from pathlib import Path

import pluggy
import pytest

from mind_core import plugins
from mind_core.harvest.items import HarvestItem

THROWAWAY_PLUGIN = '''
from pathlib import Path

from mind_core.harvest.items import HarvestItem, HarvestMessage, stable_key
from mind_core.harvest.source_files import file_fingerprint
from mind_core.plugins import hookimpl


class LinesSource:
    """One item per .lines file, one message per line."""

    kind = "throwaway-lines"
    display_name = "Throwaway lines"

    def detect(self, path):
        return Path(path).suffix == ".lines"

    def scan(self, path):
        path = Path(path)
        lines = path.read_text(encoding="utf-8").splitlines()
        yield HarvestItem(
            key=stable_key(self.kind, path.name),
            kind="note",
            title=path.stem,
            container_key=path.name,
            messages=[HarvestMessage(key=str(i), text=line) for i, line in enumerate(lines)],
        )

    def fingerprint(self, path):
        return file_fingerprint(path)


@hookimpl
def register_sources(register):
    register(LinesSource())


class ThrowawayExtractor:
    name = "throwaway-extractor"

    def extract(self, text):
        raise NotImplementedError


class ThrowawayRetriever:
    name = "throwaway-retriever"

    def search(self, query, limit):
        return []


@hookimpl
def register_extractors(register):
    register(ThrowawayExtractor())


@hookimpl
def register_retrievers(register):
    register(ThrowawayRetriever())
'''


def install_distribution(site: Path, module: str, code: str) -> None:
    """A real installed distribution (dist-info + entry_points.txt) that only exists in ``site``."""
    site.mkdir(exist_ok=True)
    (site / f"{module}.py").write_text(code, encoding="utf-8")
    dist_info = site / f"{module}-0.1.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {module.replace('_', '-')}\nVersion: 0.1\n", encoding="utf-8"
    )
    (dist_info / "entry_points.txt").write_text(f"[mind_harvest]\n{module} = {module}\n", encoding="utf-8")


@pytest.fixture
def plugin_site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A folder on sys.path for throwaway distributions; the host is rebuilt without them afterwards."""
    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.delenv(plugins.DISABLE_AUTOLOAD_ENV, raising=False)
    yield site
    monkeypatch.undo()
    plugins.get_plugin_manager(refresh=True)


@pytest.fixture
def installed_throwaway(plugin_site: Path):
    install_distribution(plugin_site, "throwaway_mind_plugin", THROWAWAY_PLUGIN)
    plugins.get_plugin_manager(refresh=True)
    return plugin_site


def test_entry_point_plugin_is_found_and_scans(installed_throwaway, tmp_path: Path) -> None:
    assert "throwaway-lines" in plugins.source_kinds()
    sample = tmp_path / "team.lines"
    sample.write_text("Alice owns Project Falcon\nBob runs PostgreSQL\n", encoding="utf-8")

    source = plugins.detect_source(sample)
    assert source is plugins.get_source("throwaway-lines")
    events = list(source.scan(sample))
    assert len(events) == 1 and isinstance(events[0], HarvestItem)
    assert [m.text for m in events[0].messages] == ["Alice owns Project Falcon", "Bob runs PostgreSQL"]
    assert "throwaway-extractor" in [e.name for e in plugins.get_extractors()]
    assert "throwaway-retriever" in [r.name for r in plugins.get_retrievers()]
    assert plugins.get_plugin_manager().get_plugin("throwaway_mind_plugin") is not None


def test_autoload_switch_skips_entry_points(installed_throwaway, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(plugins.DISABLE_AUTOLOAD_ENV, "1")
    plugins.get_plugin_manager(refresh=True)
    assert "throwaway-lines" not in plugins.source_kinds()
    assert "throwaway-extractor" not in [e.name for e in plugins.get_extractors()]


def test_unknown_kind_lists_known_kinds() -> None:
    plugins.get_plugin_manager(refresh=True)
    with pytest.raises(plugins.UnknownSourceError) as caught:
        plugins.get_source("no-such-kind")
    message = str(caught.value)
    assert "no-such-kind" in message
    for kind in plugins.source_kinds():
        assert kind in message


def test_entry_point_plugin_with_bad_source_fails_loudly(plugin_site: Path) -> None:
    code = textwrap.dedent(
        """
        from mind_core.plugins import hookimpl

        class HalfSource:
            kind = "half"

        @hookimpl
        def register_sources(register):
            register(HalfSource())
        """
    )
    install_distribution(plugin_site, "half_source_plugin", code)
    with pytest.raises(plugins.PluginError, match="'half_source_plugin' registered .* not a source"):
        plugins.get_plugin_manager(refresh=True)


def test_entry_point_plugin_with_misspelled_hook_fails_loudly(plugin_site: Path) -> None:
    code = textwrap.dedent(
        """
        from mind_core.plugins import hookimpl

        @hookimpl
        def register_sourcez(register):
            pass
        """
    )
    install_distribution(plugin_site, "misspelled_plugin", code)
    with pytest.raises(Exception, match="register_sourcez"):
        plugins.get_plugin_manager(refresh=True)


def test_duplicate_kind_is_refused(plugin_site: Path) -> None:
    code = textwrap.dedent(
        """
        from mind_core.plugins import hookimpl

        class Twin:
            kind = "twin"
            display_name = "Twin"
            def detect(self, path):
                return False
            def scan(self, path):
                return iter(())
            def fingerprint(self, path):
                return ""

        @hookimpl
        def register_sources(register):
            register(Twin())
            register(Twin())
        """
    )
    install_distribution(plugin_site, "twin_plugin", code)
    with pytest.raises(plugins.PluginError, match="'twin'"):
        plugins.get_plugin_manager(refresh=True)


def test_every_built_in_is_registered_like_a_plugin() -> None:
    manager = plugins.get_plugin_manager(refresh=True)
    for module_name in plugins.DEFAULT_PLUGINS:
        assert manager.get_plugin(module_name) is not None
    assert {"chatgpt", "claude", "gemini", "markdown", "email"} <= set(plugins.source_kinds())


def test_a_broken_built_in_fails_loudly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(plugins, "DEFAULT_PLUGINS", (*plugins.DEFAULT_PLUGINS, "plugins.no_such_source"))
    with pytest.raises(ModuleNotFoundError, match="plugins.no_such_source"):
        plugins.get_plugin_manager(refresh=True)
    monkeypatch.undo()
    plugins.get_plugin_manager(refresh=True)


def module_from_source(name: str, code: str) -> types.ModuleType:
    module = types.ModuleType(name)
    exec(compile(code, name, "exec"), module.__dict__)
    return module


def test_register_plugin_at_run_time(tmp_path: Path) -> None:
    plugin = module_from_source("runtime_lines", THROWAWAY_PLUGIN)
    plugins.get_plugin_manager(refresh=True)
    plugins.register_plugin(plugin)
    try:
        sample = tmp_path / "notes.lines"
        sample.write_text("one\n", encoding="utf-8")
        assert plugins.detect_source(sample).kind == "throwaway-lines"
        with pytest.raises(plugins.PluginError, match="throwaway-lines"):
            plugins.register_plugin(module_from_source("runtime_lines_twin", THROWAWAY_PLUGIN))
        assert plugins.get_plugin_manager().is_registered(plugin)
        assert "throwaway-lines" in plugins.source_kinds()
    finally:
        plugins.get_plugin_manager(refresh=True)
    assert "throwaway-lines" not in plugins.source_kinds()


# -- the call helper -----------------------------------------------------------------------------
class Recorder:
    """A plugin implementing ``harvest_finished`` that notes its name in a shared log."""

    def __init__(self, name: str, log: list, fail: bool = False) -> None:
        self.name = name
        self.log = log
        self.fail = fail

    @plugins.hookimpl
    def harvest_finished(self, mind_home, workspace, report):
        self.log.append(self.name)
        if self.fail:
            raise RuntimeError(f"{self.name} cannot write its history\nsecond line")
        return self.name


class TryFirst(Recorder):
    @plugins.hookimpl(tryfirst=True)
    def harvest_finished(self, mind_home, workspace, report):
        return super().harvest_finished(mind_home, workspace, report)


class TryLast(Recorder):
    @plugins.hookimpl(trylast=True)
    def harvest_finished(self, mind_home, workspace, report):
        return super().harvest_finished(mind_home, workspace, report)


def fresh_manager(*plugin_objects: object) -> pluggy.PluginManager:
    manager = pluggy.PluginManager(plugins.PROJECT_NAME)
    manager.add_hookspecs(plugins.HookSpecs)
    for plugin in plugin_objects:
        manager.register(plugin, name=plugin.name)
    return manager


def announce(manager: pluggy.PluginManager) -> list[plugins.HookCall]:
    return list(
        plugins.call_each(manager, "harvest_finished", mind_home=Path("."), workspace="w", report=None)
    )


def test_call_each_follows_pluggys_order_tryfirst_and_trylast_included() -> None:
    log: list[str] = []
    manager = fresh_manager(
        TryLast("last", log), Recorder("older", log), TryFirst("first", log), Recorder("newer", log)
    )
    calls = announce(manager)
    assert log == ["first", "newer", "older", "last"]
    assert [(c.plugin_name, c.result, c.error) for c in calls] == [(n, n, None) for n in log]
    log.clear()
    assert manager.hook.harvest_finished(mind_home=Path("."), workspace="w", report=None) == [
        "first", "newer", "older", "last"
    ]  # fmt: skip


def test_call_each_runs_the_wrappers_around_each_plugin() -> None:
    log: list = []

    class OldStyleWrapper:
        name = "old-wrapper"

        @plugins.hookimpl(hookwrapper=True)
        def harvest_finished(self, mind_home, workspace, report):
            log.append("old: before")
            outcome = yield
            log.append(("old: after", outcome.get_result()))

    class NewStyleWrapper:
        name = "new-wrapper"

        @plugins.hookimpl(wrapper=True)
        def harvest_finished(self, mind_home, workspace, report):
            log.append("new: before")
            results = yield
            log.append(("new: after", results))
            return [f"{r} (wrapped)" for r in results]

    manager = fresh_manager(OldStyleWrapper(), NewStyleWrapper(), Recorder("a", log), Recorder("b", log))
    calls = announce(manager)
    around = ["new: before", "old: before"]
    assert log == [
        *around, "b", ("old: after", ["b"]), ("new: after", ["b"]),
        *around, "a", ("old: after", ["a"]), ("new: after", ["a"]),
    ]  # fmt: skip
    assert [(c.plugin_name, c.result) for c in calls] == [("b", "b (wrapped)"), ("a", "a (wrapped)")]


def test_call_each_isolates_a_failing_plugin() -> None:
    log: list[str] = []
    manager = fresh_manager(
        Recorder("steady", log), Recorder("broken", log, fail=True), Recorder("late", log)
    )
    calls = announce(manager)
    assert log == ["late", "broken", "steady"]
    assert [(c.plugin_name, c.result) for c in calls] == [
        ("late", "late"),
        ("broken", None),
        ("steady", "steady"),
    ]
    assert isinstance(calls[1].error, RuntimeError) and calls[0].error is None and calls[2].error is None


def test_announce_harvest_reports_the_failing_plugin_and_tells_the_others(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    log: list[str] = []
    monkeypatch.setenv(plugins.DISABLE_AUTOLOAD_ENV, "1")  # only these two record harvests
    plugins.get_plugin_manager(refresh=True)
    plugins.register_plugin(Recorder("steady", log), name="steady-history")
    plugins.register_plugin(Recorder("broken", log, fail=True), name="broken-history")
    try:
        warnings = plugins.announce_harvest(Path("."), "w", report=None)
    finally:
        monkeypatch.undo()
        plugins.get_plugin_manager(refresh=True)
    assert log == ["broken", "steady"]
    assert warnings == [
        "plugin 'broken-history' could not record the harvest: broken cannot write its history"
    ]


def test_a_failing_detector_is_passed_over(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    class BrokenDetector:
        @plugins.hookimpl(tryfirst=True)
        def detect_sources(self, path):
            raise OSError("cannot read")

    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "note.md").write_text("# A note\n\nSome text.\n", encoding="utf-8")
    plugins.get_plugin_manager(refresh=True)
    before = plugins.rank_sources(vault)
    plugins.register_plugin(BrokenDetector(), name="broken-detector")
    try:
        assert plugins.rank_sources(vault) == before and before
    finally:
        plugins.get_plugin_manager(refresh=True)
    assert "plugin 'broken-detector' failed to inspect" in caplog.text


@pytest.mark.parametrize(
    ("hook", "what"), [("register_extractors", "an extractor"), ("register_retrievers", "a retriever")]
)
def test_a_plain_string_is_refused_as_an_extractor_or_retriever(hook: str, what: str) -> None:
    plugin = module_from_source(
        "string_plugin",
        f"from mind_core.plugins import hookimpl\n@hookimpl\ndef {hook}(register):\n    register('rules')\n",
    )
    plugins.get_plugin_manager(refresh=True)
    with pytest.raises(
        plugins.PluginError, match=f"plugin 'string-plugin' registered 'rules', which is not {what}"
    ):
        plugins.register_plugin(plugin, name="string-plugin")
    assert not plugins.get_plugin_manager().is_registered(plugin)
    assert not any(isinstance(obj, str) for obj in plugins.get_extractors() + plugins.get_retrievers())


def test_a_plugin_that_raises_while_registering_fails_the_load_naming_it() -> None:
    class Crashing:
        @plugins.hookimpl
        def register_extractors(self, register):
            raise ValueError("no model configured")

    plugins.get_plugin_manager(refresh=True)
    with pytest.raises(
        plugins.PluginError, match="plugin 'crashing' failed in register_extractors: no model"
    ):
        plugins.register_plugin(Crashing(), name="crashing")
    assert plugins.get_plugin_manager().get_plugin("crashing") is None
