"""Hypothesis properties, CI-sized (benchmarks/reliability.py runs them with 1,000+ examples)."""

import pytest

from mind_core.testing.fakes import HashingEmbedder
from mind_core.testing.properties import (
    build_query_fixture,
    check_parser_on_mutations,
    check_queries,
    parser_samples,
)

CI_EXAMPLES = 60


@pytest.fixture(scope="module")
def samples(shared_data):
    return parser_samples(shared_data)


@pytest.mark.parametrize("kind", ["chatgpt", "claude", "gemini", "markdown", "email"])
def test_parsers_survive_mutated_real_samples(kind, samples, tmp_path):
    assert samples[kind], f"no {kind} samples in ../shared/data"
    assert check_parser_on_mutations(kind, samples[kind], tmp_path, CI_EXAMPLES) == CI_EXAMPLES


def test_any_query_string_is_answered_without_deleted_frames_or_retired_entities(tmp_path):
    fixture = build_query_fixture(tmp_path, HashingEmbedder())
    try:
        assert check_queries(fixture, CI_EXAMPLES) == CI_EXAMPLES
    finally:
        fixture.workspace.close()
        fixture.personal.close()


def test_a_lone_surrogate_query_is_searched_not_refused(tmp_path):
    fixture = build_query_fixture(tmp_path, HashingEmbedder())
    try:
        found = fixture.workspace.search.search("Alice \ud800 Berlin")
        assert found and all("Alice" in r.frame.content or "Berlin" in r.frame.content for r in found[:3])
        knowledge = fixture.workspace.knowledge
        assert knowledge.search_entities("\udc80") == []
        plain = knowledge.create_entity("person", "Alinta Quorvath")
        # the lone surrogate is read as U+FFFD, the character a broken decoder left in this name
        replaced = knowledge.create_entity("organization", "Ali\ufffd Holdings")
        assert {e.id for e in knowledge.search_entities("Ali")} >= {plain.id, replaced.id}
        assert [e.id for e in knowledge.search_entities("Ali\ud800")] == [replaced.id]
    finally:
        fixture.workspace.close()
        fixture.personal.close()
