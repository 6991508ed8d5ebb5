"""The query service opens minds with its embedder's whole vector space: a mind made by the
in-process model on its int8 ONNX weights is served, not refused as another space."""

from mind_core.embeddings.base import fingerprint_of
from mind_core.mind import Mind
from mind_core.query.models.requests import RecallRequest
from mind_core.query.service import QueryService, SerializedEmbedder, ServiceConfig
from mind_core.store.home import MindHome
from mind_core.testing.fakes import HashingEmbedder


class Int8Stand(HashingEmbedder):
    provider = "inprocess"
    runtime = "onnx"
    quantization = "int8"


def test_the_shared_embedder_keeps_the_vector_space():
    assert fingerprint_of(SerializedEmbedder(Int8Stand())) == fingerprint_of(Int8Stand())


def test_a_mind_of_the_int8_model_is_served(tmp_path):
    home = MindHome(tmp_path / "home")
    with Mind.open(home.workspace_path("team"), embedder=Int8Stand()) as mind:
        gop = mind.sessions.ensure("notes")["gop_id"]
        frame = mind.frames.create_i_frame(gop, "the falcon migration moves billing to PostgreSQL")
        mind.search.index_frames_batch([frame])
    service = QueryService(ServiceConfig(home=home, default_workspace="team", embedder=Int8Stand()))
    try:
        answer = service.recall(RecallRequest(query="falcon billing", scope="workspace"))
    finally:
        service.close()
    assert [r.metadata.frame_id for r in answer.results] == [frame.id]
