"""The HTTP service's routes: one FastAPI router per resource (recall and search, the knowledge
graph, the service and its minds)."""
