"""What ``release`` may overwrite: only a notebook that is still what it last released there.

Release writes, in each student notebook's metadata, a digest of the notebook it released
(``grader.released``: SHA-256 of the notebook's JSON without that field, keys sorted, so that
saving it unchanged from Jupyter keeps it). Before it writes anything, :func:`refuse_changed`
reads every notebook it would replace or remove: one whose digest still matches (or, released
before digests were written, one that equals what this release writes) is overwritten; any
other holds a learner's work (cells run, answers written), and release stops with one line that
names it, unless ``--force``, which first copies it to ``NAME.ipynb.bak-<UTC time>`` beside it
(:func:`back_up`), a name that no grader run or release reads as a notebook.
"""
from __future__ import annotations

import hashlib
import json
import shutil
import time
from pathlib import Path

from grader.errors import GraderError

DIGEST_KEY = "released"
"""The key, in the notebook's ``grader`` metadata, of the digest of what release wrote."""


def _canonical_digest(content: dict) -> str:
    """SHA-256 of a notebook's JSON (a parsed ``dict``) without the digest, keys sorted."""
    grader = content.get("metadata", {}).get("grader")
    if isinstance(grader, dict) and DIGEST_KEY in grader:
        content = {**content, "metadata": {**content["metadata"],
                                           "grader": {k: v for k, v in grader.items()
                                                      if k != DIGEST_KEY}}}
    text = json.dumps(content, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def stamp(text: str) -> str:
    """``text`` (a notebook as ``nbformat.writes`` gives it) with the digest of its content in
    its ``grader`` metadata; stamping twice gives the same text."""
    content = json.loads(text)
    content.setdefault("metadata", {}).setdefault("grader", {})[DIGEST_KEY] = \
        _canonical_digest(content)
    return json.dumps(content, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def unchanged(target: Path, new_text: str) -> bool:
    """Whether ``target`` is what release last wrote there (its digest matches its content), or
    carries no digest and equals ``new_text`` but for the digest."""
    try:
        content = json.loads(target.read_text(encoding="utf-8"))
        recorded = content["metadata"]["grader"].get(DIGEST_KEY)
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError):
        return False  # not a notebook release wrote: unreadable, or no grader metadata
    if recorded is not None:
        return recorded == _canonical_digest(content)
    return _canonical_digest(content) == _canonical_digest(json.loads(new_text))


def refuse_changed(plan: dict[Path, str | None], *, force: bool) -> list[Path]:
    """Check every file that release would overwrite or remove (``plan``: target -> new text,
    None to remove it) before any is touched; return those changed since they were released.

    Raises GraderError, in one line that names them, where some were changed and not ``force``.
    """
    changed = [target for target, text in plan.items() if target.is_file()
               and (text is None or target.read_text(encoding="utf-8", errors="replace") != text)
               and not unchanged(target, text or "{}")]
    if changed and not force:
        more = f" (and {len(changed) - 1} more)" if len(changed) > 1 else ""
        raise GraderError(f"{changed[0]}{more} is not what release last wrote there (your "
                          "work?); nothing was released: move it away to keep it, or pass "
                          "--force to overwrite it, keeping a copy as "
                          f"{changed[0].name}.bak-<time> beside it")
    return changed


def back_up(path: Path) -> Path:
    """Copy ``path`` to ``path.bak-<UTC time>`` beside it (a new name each second); its path."""
    backup = path.with_name(f"{path.name}.bak-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}")
    number = 1
    while backup.exists():
        number += 1
        backup = backup.with_name(f"{backup.name.split('~')[0]}~{number}")
    shutil.copy2(path, backup)
    return backup
