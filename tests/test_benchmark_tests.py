"""scripts/benchmark_tests.py reads a JUnit report into the table CI publishes."""
from __future__ import annotations

import subprocess
import sys

from tests.conftest import ROOT

JUNIT = """<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest">
<testcase classname="tests.test_catalogue" name="test_wrong_answer_is_rejected[02_sinusoidal_encoding:offset_matrix:k ignored]" time="2.5"/>
<testcase classname="tests.test_solutions" name="test_solution_gets_full_marks[02_sinusoidal_encoding]" time="7.25"/>
<testcase classname="tests.test_codec" name="test_round_trip" time="0.5"><failure message="boom"/></testcase>
</testsuite></testsuites>"""


def _script(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "scripts" / "benchmark_tests.py"), *args],
                          capture_output=True, text=True, timeout=60)


def test_slowest_tests_and_seconds_per_notebook_from_a_junit_report(tmp_path):
    junit = tmp_path / "junit.xml"
    junit.write_text(JUNIT)
    done = _script("--from-junit", str(junit), "--top", "2", "--csv", str(tmp_path / "t.csv"))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "3 tests (1 failure, 2 passed); test time summed over the workers: 10.2 s"
    assert lines[2].split() == ["7.2", "s", "tests/test_solutions.py::test_solution_gets_full_marks"
                                "[02_sinusoidal_encoding]"]
    assert len([line for line in lines if "tests/" in line]) == 2  # --top 2
    assert (tmp_path / "t.csv").read_text() == \
        "notebook,seconds\n(no notebook),0.5\n02_sinusoidal_encoding,9.8\n"
    markdown = _script("--from-junit", str(junit), "--markdown").stdout
    assert "| 02_sinusoidal_encoding | 9.8 |" in markdown


def test_a_missing_report_is_one_line():
    done = _script("--from-junit", "no/such.xml")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "benchmark_tests: no/such.xml: no such JUnit report; run the tests with --junitxml=FILE first"]
