"""Start-up cost of the grader's own processes (never the learner's).

jsonschema, which nbformat imports, imports the optional IRI format checker ``rfc3987_syntax``
when it is installed (jupyter-events asks for it), and that module builds about forty lark
grammars at import time: one to six seconds per process on the 2-core machine, paid by the
grader and by every nbval child. Neither nbformat's schema nor the grader validates IRIs, so the
grader's processes make that import fail and jsonschema goes on without the checker.
"""
from __future__ import annotations

import sys

SKIPPED = ("rfc3987_syntax",)


def skip_slow_optional_imports() -> None:
    """Make ``import rfc3987_syntax`` raise ImportError in this process (before jsonschema)."""
    for name in SKIPPED:
        sys.modules.setdefault(name, None)


# Importing this module is the skip: pyproject.toml's ``-p grader.notebook._imports`` loads it as a pytest
# plugin, before the plugins found through entry points (nbval's imports nbformat, so jsonschema),
# so that the project's own test processes skip the import too.
skip_slow_optional_imports()
