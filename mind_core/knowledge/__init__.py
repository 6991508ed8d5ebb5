"""The bitemporal knowledge graph and what feeds it: extraction, structure, people and cognify."""
