"""A learner's code sees an allow-list of the grader's environment, never the grader's secrets.

``INSTRUCTOR_SECRET`` and ``GH_TOKEN`` are planted in the grader's environment; a hostile
notebook's exercise and top-level cell print ``os.environ`` and raise with what they saw
(:func:`tests.conftest.environment_probe`). On every route that runs a learner's code (``check``,
``batch``; the Gradescope run in ``tests/export/test_hosted_gradescope.py``; the class workflows'
shards run ``batch``) neither secret is in any report, page or file the learner can be shown,
while a planted variable of the allow-list (``LC_TELEPHONE``) is: the messages do carry what the
learner's code saw.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from grader.sandbox.confinement import ALLOWED_VARIABLES, SET_VARIABLES, learner_environment
from tests.conftest import PLANTED, ROOT, environment_probe

SECRETS = [value for name, value in PLANTED.items() if not name.startswith("LC_")]
ALLOWED = PLANTED["LC_TELEPHONE"]


def _planted_env() -> dict[str, str]:
    return {**os.environ, **PLANTED}


def _everything_under(folder: Path) -> dict[str, str]:
    return {str(path): path.read_bytes().decode(errors="replace")
            for path in sorted(folder.rglob("*")) if path.is_file()}


def assert_no_secret(texts: dict[str, str], *, both_routes: bool = True) -> None:
    """No planted secret in any of ``texts`` (name -> contents); the allowed marker in some, and
    (with ``both_routes``) from the exercise and the top-level cell alike."""
    for name, text in texts.items():
        for secret in SECRETS:
            assert secret not in text, f"{secret} reached {name}"
    seen = [name for name, text in texts.items() if ALLOWED in text]
    assert seen, "the learner's code saw nothing that reached a report: the test proves nothing"
    if both_routes:
        joined = "\n".join(texts.values())
        assert "permutation_matrix raised RuntimeError: environment seen" in joined
        assert "RuntimeError: environment seen" in joined.replace(
            "permutation_matrix raised RuntimeError: environment seen", "")


def test_learner_environment_is_the_allow_list(monkeypatch, tmp_path):
    for name, value in PLANTED.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("GRADER_NO_BWRAP", "0")
    monkeypatch.setenv("MPLCONFIGDIR", "/home/instructor/.config/matplotlib")
    monkeypatch.setenv("COURSE_ASSETS", "/home/instructor/assets")
    env = learner_environment(tmp_path, {"GRADER_SANDBOX": "1"})
    assert "INSTRUCTOR_SECRET" not in env and "GH_TOKEN" not in env
    assert not [k for k in env if k.startswith("GRADER_") and k != "GRADER_SANDBOX"]
    assert env["LC_TELEPHONE"] == ALLOWED and env["PATH"] == os.environ["PATH"]
    assert env["HOME"] == env["TMPDIR"] == str(tmp_path)
    assert env["MPLCONFIGDIR"].startswith(str(tmp_path)) and "COURSE_ASSETS" not in env
    exact = {n for n in ALLOWED_VARIABLES if not n.endswith("*")}
    allowed_prefixes = tuple(n[:-1] for n in ALLOWED_VARIABLES if n.endswith("*"))
    set_here = {*SET_VARIABLES, "GRADER_SANDBOX"}
    assert set(env) <= exact | set_here | {k for k in env if k.startswith(allowed_prefixes)}


def test_sandbox_and_template_see_the_allow_list_only(monkeypatch):
    """A sandbox spawned on its own and one forked from a template (the zygote's route) alike."""
    from grader.sandbox.parent import Sandbox, Template

    for name, value in PLANTED.items():
        monkeypatch.setenv(name, value)
    cells = [("cell", "import os\ndef env():\n    return dict(os.environ)")]
    with Sandbox(cells) as sandbox:
        spawned = sandbox.call("env", (), {}, timeout=60)
    with Template(cells) as template, Sandbox(template=template) as sandbox:
        forked = sandbox.call("env", (), {}, timeout=60)
    for env in (spawned, forked):
        assert "INSTRUCTOR_SECRET" not in env and "GH_TOKEN" not in env
        assert env["LC_TELEPHONE"] == ALLOWED and env["GRADER_SANDBOX"] == "1"


@pytest.mark.slow  # executes a (small) notebook
def test_no_secret_reaches_a_report_of_check(tmp_path):
    notebook = environment_probe(tmp_path / "work")
    out = tmp_path / "reports"
    done = subprocess.run(
        [sys.executable, "-m", "grader", "check", str(notebook), "--exercise",
         "permutation_matrix", "--verbose", "--json", str(out / "results.json"),
         "--junit", str(out / "results.xml"), "--markdown", str(out / "summary.md"),
         "--html", str(out / "feedback.html")],
        cwd=ROOT, env=_planted_env(), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert_no_secret({"stdout": done.stdout, "stderr": done.stderr, **_everything_under(out),
                      **_everything_under(notebook.parent)})


@pytest.mark.slow  # a batch, with execution
def test_no_secret_reaches_a_file_of_batch(tmp_path, hidden_points):
    import shutil

    submissions = tmp_path / "submissions"
    environment_probe(submissions / "amy")
    out = tmp_path / "grades"
    out.mkdir()
    shutil.copy(hidden_points, out)  # the hidden tests' list, cached by content
    done = subprocess.run(
        [sys.executable, "-m", "grader", "batch", str(submissions), "--out", str(out),
         "--jobs", "1", "--allow-unconfined"],  # graded where bubblewrap is missing too
        cwd=ROOT, env=_planted_env(), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert_no_secret({"stdout": done.stdout, "stderr": done.stderr, **_everything_under(out)})
