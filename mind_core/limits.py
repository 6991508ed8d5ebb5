"""Input limits, in one place: the HTTP service, the MCP tools, the command line and the search
engine all read these, so a query one surface accepts is never refused (or cut) by another."""

MAX_QUERY_CHARS = 2_000  # a recall or search query; longer text is not a question but a document
DEFAULT_RESULTS = 10
MAX_RESULTS = 100  # results per mind in one recall or search
DEFAULT_ENTITY_RESULTS = 50
MAX_ENTITY_RESULTS = 200
MAX_ENTITY_QUERY_CHARS = 200
MAX_ENTITY_TYPE_CHARS = 64
DEFAULT_GRAPH_RESULTS = 200  # rows of one knowledge-graph query (mind kg, /kg/..., kg_* tools)
MAX_GRAPH_RESULTS = 10_000
MAX_WORKSPACE_NAME_CHARS = 64
MAX_TIME_BOUND_CHARS = 40
MAX_SESSION_ID_CHARS = 300
MAX_FILTER_TAGS = 20  # tags one recall may require
MAX_FILTER_CHARS = 200  # a tag, sender or source-kind filter
MIN_SNIPPET_CHARS = 20
MAX_SNIPPET_CHARS = 2_000
MAX_FRAME_ID = 2**63 - 1  # SQLite's largest rowid
MAX_REQUEST_HEAD_BYTES = 16 * 1024  # an HTTP request line and headers; larger ones are a 431
MAX_BODY_BYTES = 64 * 1024  # an HTTP request body; larger ones are refused (413) unparsed
MAX_DRAIN_BYTES = 4 * 1024 * 1024  # a refused body up to this size is read and dropped, so the
# client sees the 413 instead of a connection reset; a larger one is not read at all
BODY_TIMEOUT_SECONDS = 30.0  # a request body must arrive within this time
DEFAULT_HEADER_TIMEOUT_SECONDS = 10.0  # a request head must arrive within this (`mind serve --header-timeout`)
MAX_INGEST_ITEMS = 1_000  # Universal JSON items in one ingest call (POST /ingest, MCP ingest_items)
