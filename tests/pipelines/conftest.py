import dagster as dg
import pytest
from mind_harvest.pipelines.resources import MindHomeResource

from mind_core.store.home import MindHome
from tests.pipelines import doubles


@pytest.fixture
def home(tmp_path) -> MindHome:
    return MindHome(tmp_path / "home")


@pytest.fixture
def instance():
    with dg.instance_for_test() as instance:
        yield instance


@pytest.fixture
def resources(home) -> dict:
    """The pipeline's resources with the fake embedder and scan-counting plugins."""
    doubles.reset()
    return {
        "mind_home": MindHomeResource(root=str(home.root)),
        "embedder": doubles.FakeEmbedderResource(),
        "plugins": doubles.CountingPluginsResource(),
    }
