"""The bundled models: where they live and which one the app opens on.

>>> sorted(bundled_models())
['induction-2layer', 'mathematics-bpe', 'mathematics-char']
"""

from __future__ import annotations

import os
from pathlib import Path

from gptviz.checkpoints import bundled_checkpoints

# GPTVIZ_MODELS_DIR points the app at another folder of checkpoints (development, tests).
MODELS_DIR = Path(os.environ.get("GPTVIZ_MODELS_DIR")
                  or Path(__file__).resolve().parents[1] / "assets" / "models")
# The BPE model: its tokens are word pieces, so attention maps and next-token
# charts read as words, which is what a class can follow (see the README).
DEFAULT_MODEL = "mathematics-bpe"


def bundled_models() -> dict[str, Path]:
    """Name -> checkpoint folder for every model under ``assets/models``."""
    return bundled_checkpoints(MODELS_DIR)
