"""An Ollama model digest in its normal form: the bare 64 lowercase hex of its sha256."""

from __future__ import annotations

import re

_DIGEST = re.compile(r"[0-9a-f]{64}")


def normalize_digest(digest: str | None) -> str | None:
    """A bare 64-hex digest from an Ollama digest ("sha256:" prefix allowed), else None."""
    if not isinstance(digest, str):
        return None
    bare = digest.removeprefix("sha256:").lower()
    return bare if _DIGEST.fullmatch(bare) else None
