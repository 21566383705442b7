"""docs/learners.md's worked example of a wrong answer is what grading prints today."""
from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import ROOT


@pytest.mark.slow
def test_the_learners_guide_worked_example_matches_a_run():
    """scripts/worked_example.py grades the catalogued "missing 1/sqrt(d_k)" and compares the
    report with the guide's text (the score, the named mistake's cost, the first failing test)."""
    process = subprocess.run([sys.executable, "scripts/worked_example.py", "--check"], cwd=ROOT,
                             text=True, capture_output=True, timeout=900)
    assert process.returncode == 0, process.stdout[-3000:] + process.stderr[-2000:]
    assert "score 7/14" in (ROOT / "docs" / "learners.md").read_text()
