"""The pluggy host: every source, extractor and retriever arrives through these hooks.

Built-in plugins (``DEFAULT_PLUGINS``) are imported and registered exactly like third-party ones,
so a third-party plugin has no capability the built-ins lack. Third-party plugins are found through
the ``mind_harvest`` entry-point group; setting ``MIND_HARVEST_DISABLE_PLUGIN_AUTOLOAD`` turns that
off (tests, or a user debugging a misbehaving plugin).

A plugin module implements any of the hooks below with ``@hookimpl`` and calls ``register`` once per
object it provides::

    from mind_core.plugins import hookimpl

    @hookimpl
    def register_sources(register):
        register(MySource())
"""

from __future__ import annotations

import importlib
import logging
import os
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pluggy

from mind_core.errors import MindError
from mind_core.harvest.items import Source

PROJECT_NAME = "mind_harvest"
ENTRY_POINT_GROUP = "mind_harvest"
DISABLE_AUTOLOAD_ENV = "MIND_HARVEST_DISABLE_PLUGIN_AUTOLOAD"

# A detection at least this sure names the kind of a path added without one, and refuses an
# explicit kind that disagrees. A source whose plugin has no ``detect_sources`` hook answers
# through its ``detect()`` yes/no, which counts as plausible, never as sure.
CONFIDENT = 0.8
PLAUSIBLE = 0.5

DEFAULT_PLUGINS: tuple[str, ...] = (
    "mind_harvest.plugins.chatgpt",
    "mind_harvest.plugins.claude",
    "mind_harvest.plugins.gemini",
    "mind_harvest.plugins.markdown",
    "mind_harvest.plugins.email",
    "mind_harvest.plugins.whatsapp",
    "mind_harvest.plugins.telegram",
    "mind_harvest.plugins.slack",
    "mind_harvest.plugins.discord",
    "mind_harvest.plugins.plaintext",
    "mind_harvest.plugins.pdf",
    "mind_harvest.plugins.web",
    "mind_harvest.plugins.ical",
    "mind_harvest.plugins.vcard",
    "mind_harvest.plugins.claude_code",
    "mind_harvest.plugins.perplexity",
    "mind_harvest.plugins.universal",
)

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)

log = logging.getLogger(__name__)


class PluginError(MindError):
    """A plugin broke the contract (bad source object, duplicate kind)."""


class UnknownSourceError(MindError, LookupError):
    """A source kind no registered plugin provides."""

    def __init__(self, kind: str, known: list[str]) -> None:
        self.kind = kind
        self.known = known
        listed = ", ".join(known) if known else "(none registered)"
        super().__init__(f"unknown source kind {kind!r}; known kinds: {listed}")


class HookSpecs:
    """The hooks a plugin may implement; each receives a ``register`` callable."""

    @hookspec
    def register_sources(self, register: Callable[[Source], None]) -> None:
        """Provide harvest sources: objects with kind, display_name, detect, scan, fingerprint."""

    @hookspec
    def detect_sources(self, path: Path) -> dict[str, float] | None:
        """How sure each of this plugin's sources is that ``path`` is its input: ``{kind: 0..1}``.

        Cheap (names and first bytes, as ``Source.detect``); 0.8 or more means sure: it picks the
        kind of ``mind sources add PATH`` and refuses an explicit kind that disagrees.
        """

    @hookspec
    def harvest_finished(self, mind_home: Path, workspace: str, report: Any) -> None:
        """One source's harvest by the ``mind`` command ended (``report``: its ``HarvestReport``,
        whatever the outcome). A history keeper records it; the pipelines package records it in the
        mind home's Dagster instance, so command-line and Dagster harvests form one history."""

    @hookspec
    def register_commands(self, cli: Any) -> None:
        """Add commands to the ``mind`` command line: ``cli`` is its root click group, so
        ``@cli.command()`` adds ``mind NAME`` (as llm's plugins do). Built-in commands stay."""

    @hookspec
    def register_extractors(self, register: Callable[[Any], None]) -> None:
        """Provide entity/relation extractors for mind_core.knowledge.extraction (cognify)."""

    @hookspec
    def register_retrievers(self, register: Callable[[Any], None]) -> None:
        """Provide external recall sources consulted by combined retrieval."""


@dataclass
class _Registry:
    manager: pluggy.PluginManager
    sources: dict[str, Source] = field(default_factory=dict)
    extractors: list[Any] = field(default_factory=list)
    retrievers: list[Any] = field(default_factory=list)


_lock = threading.Lock()
_registry: _Registry | None = None


def _build_manager() -> pluggy.PluginManager:
    manager = pluggy.PluginManager(PROJECT_NAME)
    manager.add_hookspecs(HookSpecs)
    for module_name in DEFAULT_PLUGINS:
        manager.register(importlib.import_module(module_name), name=module_name)
    if not os.environ.get(DISABLE_AUTOLOAD_ENV):
        manager.load_setuptools_entrypoints(ENTRY_POINT_GROUP)
    manager.check_pending()
    return manager


@dataclass(frozen=True)
class HookCall:
    """One plugin's part in a hook call: what its implementation returned, or what it raised."""

    plugin_name: str
    result: Any = None
    error: Exception | None = None


def call_each(manager: pluggy.PluginManager, hook_name: str, **kwargs: Any) -> Iterator[HookCall]:
    """Call every implementation of a hook, one plugin at a time, in pluggy's own order (tryfirst
    first, trylast last, otherwise the newest registered first), each inside the hook's wrappers
    (``wrapper=True`` and old-style ``hookwrapper=True``) as a plain hook call would be.

    A plain call stops at the first plugin that raises and does not say which one it was; here
    each plugin's failure is its own ``HookCall`` and the others still run. Lazy: a caller sees
    one plugin's call (and whatever it registered) before the next plugin is called.
    """
    hook = getattr(manager.hook, hook_name)
    implementations = [i for i in reversed(hook.get_hookimpls()) if not (i.wrapper or i.hookwrapper)]
    for implementation in implementations:
        others = [i.plugin for i in implementations if i is not implementation]
        alone = manager.subset_hook_caller(hook_name, remove_plugins=others)
        try:
            results = alone(**kwargs)
        except Exception as exc:
            yield HookCall(implementation.plugin_name, error=exc)
        else:
            yield HookCall(implementation.plugin_name, result=results[0] if results else None)


def _registered(manager: pluggy.PluginManager, hook_name: str) -> Iterator[tuple[str, Any]]:
    """(plugin name, object) for everything the plugins register through a ``register_*`` hook.

    Registration is all or nothing: a plugin that raises fails the whole load with a PluginError
    naming it, so a broken plugin is fixed rather than silently missing.
    """
    registered: list[Any] = []
    for call in call_each(manager, hook_name, register=registered.append):
        if call.error is not None:
            failure = f"plugin {call.plugin_name!r} failed in {hook_name}: {call.error}"
            raise PluginError(failure) from call.error
        for obj in registered:
            yield call.plugin_name, obj
        registered.clear()


def _collect_sources(manager: pluggy.PluginManager) -> dict[str, Source]:
    """The sources by kind, in plugin registration order (built-ins in DEFAULT_PLUGINS order, then
    entry-point plugins): ``rank_sources`` breaks ties by this order, so which source claims a path
    is deterministic and no third-party detector shadows a built-in format."""
    registration_order = {name: rank for rank, (name, _) in enumerate(manager.list_name_plugin())}
    found = sorted(_registered(manager, "register_sources"), key=lambda found: registration_order[found[0]])
    sources: dict[str, Source] = {}
    for plugin_name, source in found:
        if not isinstance(source, Source):
            raise PluginError(
                f"plugin {plugin_name!r} registered {source!r}, which is not a source: it needs kind, "
                "display_name, detect, scan and fingerprint"
            )
        kind = source.kind
        if not isinstance(kind, str) or not kind:
            raise PluginError(f"plugin {plugin_name!r} registered source {source!r} without a kind name")
        if kind in sources:
            raise PluginError(
                f"two plugins register the source kind {kind!r}: {sources[kind]!r} and {source!r} "
                f"(from {plugin_name!r})"
            )
        sources[kind] = source
    return sources


def _named_with(obj: Any, method: str) -> bool:
    name = getattr(obj, "name", None)
    return isinstance(name, str) and bool(name) and callable(getattr(obj, method, None))


def _collect(manager: pluggy.PluginManager, hook_name: str, method: str, what: str) -> list[Any]:
    """What a ``register_*`` hook provides, each object checked: a non-empty str ``name`` and the
    ``method`` its users call (an extractor's ``extract``, a retriever's ``search``)."""
    collected = []
    for plugin_name, obj in _registered(manager, hook_name):
        if not _named_with(obj, method):
            raise PluginError(
                f"plugin {plugin_name!r} registered {obj!r}, which is not {what}: it needs a str "
                f"`name` and a `{method}` method"
            )
        collected.append(obj)
    return collected


def _load(manager: pluggy.PluginManager | None = None) -> _Registry:
    manager = manager or _build_manager()
    return _Registry(
        manager=manager,
        sources=_collect_sources(manager),
        extractors=_collect(manager, "register_extractors", "extract", "an extractor"),
        retrievers=_collect(manager, "register_retrievers", "search", "a retriever"),
    )


def _current(refresh: bool = False) -> _Registry:
    global _registry
    with _lock:
        if _registry is None or refresh:
            _registry = _load()
        return _registry


def get_plugin_manager(refresh: bool = False) -> pluggy.PluginManager:
    """The process-wide plugin manager; ``refresh=True`` rebuilds it (new entry points, env change)."""
    return _current(refresh).manager


def register_plugin(plugin: object, name: str | None = None) -> None:
    """Register a plugin object or module at run time (an application embedding the engine, tests).

    The same checks apply as at start-up; the sources, extractors and retrievers are collected anew.
    """
    global _registry
    registry = _current()
    with _lock:
        registry.manager.register(plugin, name=name)
        try:
            registry.manager.check_pending()
            _registry = _load(registry.manager)
        except Exception:
            registry.manager.unregister(plugin)
            raise


def announce_harvest(mind_home: Path, workspace: str, report: Any) -> list[str]:
    """Tell every ``harvest_finished`` implementation; returns one warning per implementation that
    failed (a history that cannot be written never fails the harvest it describes)."""
    warnings = []
    calls = call_each(
        get_plugin_manager(), "harvest_finished", mind_home=mind_home, workspace=workspace, report=report
    )
    for call in calls:
        if call.error is not None:
            reason = (str(call.error).strip().splitlines() or [type(call.error).__name__])[0]
            warnings.append(f"plugin {call.plugin_name!r} could not record the harvest: {reason}")
    return warnings


def source_kinds() -> list[str]:
    return sorted(_current().sources)


def get_source(kind: str) -> Source:
    sources = _current().sources
    try:
        return sources[kind]
    except KeyError:
        raise UnknownSourceError(kind, sorted(sources)) from None


@dataclass(frozen=True)
class Detection:
    """How sure one source kind is that a path is its input."""

    kind: str
    confidence: float
    display_name: str

    @property
    def confident(self) -> bool:
        return self.confidence >= CONFIDENT


def rank_sources(path: Path | str) -> list[Detection]:
    """Every source kind that claims the path, surest first (ties: built-ins in DEFAULT_PLUGINS
    order, then entry-point plugins).

    Plugins answer through the ``detect_sources`` hook; a source whose plugin does not answer for
    it is asked its ``detect()`` (yes counts as ``PLAUSIBLE``). A plugin whose detector raises is
    logged and passed over, so one broken third-party detector cannot stop every other source
    from being found.
    """
    target = Path(path)
    registry = _current()
    answered: dict[str, float] = {}
    for call in call_each(registry.manager, "detect_sources", path=target):
        if call.error is not None or not isinstance(call.result, Mapping | None):
            failure = call.error or TypeError(f"detect_sources returned {call.result!r}, not a mapping")
            log.warning("plugin %r failed to inspect %s", call.plugin_name, target, exc_info=failure)
            continue
        for kind, confidence in (call.result or {}).items():
            if kind in registry.sources and isinstance(confidence, int | float):
                answered[kind] = max(answered.get(kind, 0.0), min(1.0, max(0.0, float(confidence))))
    ranked: list[Detection] = []
    for kind, source in registry.sources.items():
        confidence = answered.get(kind)
        if confidence is None:
            try:
                confidence = PLAUSIBLE if source.detect(target) else 0.0
            except Exception:
                log.warning("source %r failed to inspect %s", kind, target, exc_info=True)
                continue
        if confidence > 0:
            ranked.append(Detection(kind, confidence, source.display_name))
    return sorted(ranked, key=lambda d: -d.confidence)


def detect_source(path: Path | str) -> Source | None:
    """The source surest that the path is its input, or None when no source claims it."""
    ranked = rank_sources(path)
    return get_source(ranked[0].kind) if ranked else None


def get_extractors() -> list[Any]:
    return list(_current().extractors)


def get_retrievers() -> list[Any]:
    return list(_current().retrievers)
