"""The process-count bound's control groups do not pile up when a grader is killed."""
from __future__ import annotations

import subprocess
import sys

import pytest

from grader.sandbox import supervise


def test_groups_of_killed_graders_are_removed():
    first = supervise.process_limit(8)
    if first.cgroup is None:
        first.release()
        pytest.skip(f"no pids cgroup here ({first.how})")
    root = first.cgroup.parent
    first.release()
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    stale = root / f"grader-{gone.stdout.strip()}-1"  # a grader killed before it cleaned up
    stale.mkdir()
    try:
        fresh = supervise.process_limit(8)
        fresh.release()
        assert not stale.exists(), "the group of a grader that is gone was left behind"
        assert not fresh.cgroup.exists()
    finally:
        if stale.exists():
            stale.rmdir()
