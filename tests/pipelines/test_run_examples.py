import shutil

from mind_core.harvest.catalog import read_catalog
from pipelines.partitions import harvest_sources, mind_workspaces
from pipelines.run_examples import EXAMPLE_SOURCES, EXAMPLES, add_partitions, register_examples


def test_every_bundled_example_present_is_registered_with_its_kind(tmp_path, home, instance):
    examples = tmp_path / "examples"
    shutil.copytree(EXAMPLES / "chatgpt", examples / "chatgpt")
    shutil.copytree(EXAMPLES / "vault", examples / "vault")
    assert register_examples(home, examples) == ["demo/chatgpt", "demo/vault"]
    sources = {s.source.source: s.source.kind for s in read_catalog(home).sources}
    assert sources == {"chatgpt": "chatgpt", "vault": "markdown"}
    add_partitions(instance, home)
    add_partitions(instance, home)  # idempotent, like the sensor's ticks
    assert sorted(instance.get_dynamic_partitions(harvest_sources.name)) == ["demo/chatgpt", "demo/vault"]
    assert instance.get_dynamic_partitions(mind_workspaces.name) == ["demo"]


def test_the_bundled_examples_cover_every_kind_make_run_registers():
    assert all((EXAMPLES / relative).exists() for _, _, relative in EXAMPLE_SOURCES)
