"""The feedback page: escaped, bounded, self-contained, and right in a real browser."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from grader.report import feedback
from grader import results
from grader.results import FAILED, PASSED, CellFailure, ExecutionResult, NotebookReport

HOSTILE = '<script>alert("x")</script><img src=x onerror="fetch(\'https://evil.example\')">'


def _report(output: str = HOSTILE) -> NotebookReport:
    tests = [
        results.TestResult("apply_rope", "test_apply_rope_matches_reference", "Rotates pairs by m*theta.",
                   3, PASSED, public=True),
        results.TestResult("apply_rope", "test_apply_rope_half_split_layout", "Half-split layout.", 2,
                   FAILED, output=output),
        results.TestResult("rope_inv_freq", "test_inv_freq_secret_name", "", 1, FAILED, output=output),
    ]
    execution = ExecutionResult(cells=4, passed=3, failures=[CellFailure("Cell 2", output)])
    return NotebookReport(path="04_rotary_embeddings.ipynb", suite="04_rotary_embeddings",
                          execution=execution, tests=tests, load_errors=[f"cell 3: {output}"])


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: set[str] = set()
        self.attributes: list[tuple[str, str | None]] = []

    def handle_starttag(self, tag, attrs) -> None:
        self.tags.add(tag)
        self.attributes += attrs


def test_learner_text_is_escaped_and_page_is_self_contained():
    page = feedback.render([_report()], title="Feedback <for> you", student_id="ada<b>")
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page
    assert "Feedback &lt;for&gt; you" in page and "ada&lt;b&gt;" in page
    parsed = _Tags()
    parsed.feed(page)
    assert parsed.tags <= {"html", "head", "meta", "title", "style", "body", "h1", "h2", "p",
                           "strong", "span", "table", "tr", "th", "td", "pre", "a"}
    for name, value in parsed.attributes:
        assert name in {"lang", "charset", "class", "id", "href"}, name
        assert name != "href" or value.startswith("#"), value  # in-page links only
    style = page.split("<style>")[1].split("</style>")[0]
    assert "url(" not in style and "@import" not in style
    assert "Total: 3/6 points" in page


def test_hidden_tests_appear_by_description_only():
    page = feedback.render([_report("wrong")])
    assert "Half-split layout." in page
    assert "test_apply_rope_half_split_layout" not in page and "test_inv_freq_secret_name" not in page
    assert "a hidden test" in page  # a test without a docstring is still listed, anonymously


@pytest.mark.parametrize("size", [10_000_000, 300_000])
def test_page_stays_under_one_megabyte_whatever_the_learner_printed(size):
    flood = '"<&' * (size // 3)
    reports = [_report(flood) for _ in range(8)]
    page = feedback.render(reports)
    assert len(page.encode()) < feedback.PAGE_LIMIT
    assert "(cut:" in page
    assert "Total: 24/48 points" in page  # the scores survive the cut


def _chromium() -> str:
    """Debian's chromium, installed with apt-get when missing; skips when that is impossible."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found:
        return found
    if shutil.which("apt-get") is None or os.geteuid() != 0:
        pytest.skip("chromium is not installed, and apt-get is unavailable or needs root "
                    "(install Debian's `chromium` package to run this test)")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for command in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", "chromium"]):
        try:
            done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900)
        except subprocess.TimeoutExpired:
            pytest.skip(f"chromium could not be installed: `{' '.join(command)}` took over 15 min")
        if done.returncode != 0:
            tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
            pytest.skip(f"chromium could not be installed with `{' '.join(command)}`: {tail}")
    return shutil.which("chromium") or pytest.skip("apt-get installed chromium, but it is not on PATH")


def _browse(chromium: str, page: Path, tmp_path: Path, *mode: str) -> subprocess.CompletedProcess:
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
             "--disable-component-update", "--no-first-run", "--hide-scrollbars",
             f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1000,900"]
    return subprocess.run([chromium, *flags, *mode, page.as_uri()], capture_output=True, text=True,
                          timeout=120)


@pytest.mark.slow
def test_page_renders_in_headless_chromium(tmp_path):
    matplotlib_image = pytest.importorskip("matplotlib.image")
    chromium = _chromium()
    page = tmp_path / "feedback.html"
    feedback.write(page, [_report()], title="Feedback for ada", student_id="ada",
                   grading_status="ok")
    dom = _browse(chromium, page, tmp_path, "--dump-dom")
    assert dom.returncode == 0, dom.stderr[-500:]
    assert "Total: 3/6 points" in dom.stdout and "04_rotary_embeddings — 3/6 points" in dom.stdout
    assert "<script>" not in dom.stdout  # the learner's markup stayed text in the browser too
    png = tmp_path / "feedback.png"
    shot = _browse(chromium, page, tmp_path, f"--screenshot={png}")
    assert shot.returncode == 0 and png.is_file(), shot.stderr[-500:]
    pixels = matplotlib_image.imread(png)
    assert pixels.shape[:2] == (900, 1000)
    assert pixels[..., :3].std() > 0.05, "the screenshot is blank"


def test_a_named_mistake_is_said_once_with_the_points_it_cost_and_exercises_are_numbered():
    mistake = "the permutation applied to the rows instead of the columns (its transpose)"
    tests = [
        results.TestResult("rope_inv_freq", "test_a", "Frequencies.", 1, PASSED),
        results.TestResult("apply_rope", "test_b", "Rotates pairs.", 3, FAILED,
                           output=f"output differs at index (0, 1); this is what you get with: {mistake}"),
        results.TestResult("apply_rope", "test_c", "Half-split layout.", 2, FAILED,
                           output=f"output differs at index (2, 3); this is what you get with: {mistake} "
                                  "[failing example: test_c(seed=3)]"),
    ]
    report = NotebookReport(path="04.ipynb", suite="04_rotary_embeddings", tests=tests,
                            exercise_order=["rope_inv_freq", "rope_rotation_matrix", "apply_rope"])
    page = feedback.render([report], hidden_detail="full")
    assert page.count(mistake) == 1
    assert f"Likely mistake: <strong>{mistake}</strong>" in page and "&minus;5<" in page
    assert "output differs at index (0, 1)<" in page and "[failing example: test_c(seed=3)]" in page
    assert page.index("4.1 rope_inv_freq") < page.index("4.3 apply_rope")


def test_a_page_before_the_hidden_tests_are_shown_holds_the_public_checks_only():
    report = _report("wrong")
    page = feedback.render([report], hidden_visibility="after_due_date")
    assert "Public checks: 3/3 points" in page and "Total:" not in page
    assert "the hidden tests&#x27; results are shown after the due date" in page
    assert "Half-split layout." not in page and "test_inv_freq_secret_name" not in page
    assert "hidden test" not in page.replace("hidden tests&#x27; results", "")
    assert "Rotates pairs by m*theta." in page
    full = feedback.render([report])
    assert "Total: 3/6 points" in full and "Half-split layout." in full
    with pytest.raises(ValueError, match="hidden_visibility must be one of"):
        feedback.render([report], hidden_visibility="later")


def _hidden_and_public() -> NotebookReport:
    mistake = "missing the 1/sqrt(d_k) scaling"
    return NotebookReport(path="01.ipynb", suite="01_permutation_invariance", tests=[
        results.TestResult("scaled_dot_product_attention", "test_public", "No mask, one case.", 3, FAILED,
                           output="output differs: got 2.06482, expected 1.06268", public=True),
        results.TestResult("scaled_dot_product_attention", "test_hidden", "Scaled by 1/sqrt(d_k).", 2, FAILED,
                           output=f"got -1.43553, expected -0.838096 (argument 1: [3, 1, 0, 2]); "
                                  f"this is what you get with: {mistake} [failing example: test(seed=3)]"),
    ])


@pytest.mark.parametrize("detail, shown, hidden", [
    ("description", [], ["-1.43553", "-0.838096", "[3, 1, 0, 2]", "failing example", "1/sqrt(d_k) scaling"]),
    ("mistake", ["1/sqrt(d_k) scaling"], ["-1.43553", "-0.838096", "[3, 1, 0, 2]", "failing example"]),
    ("full", ["-1.43553", "-0.838096", "[3, 1, 0, 2]", "failing example", "1/sqrt(d_k) scaling"], []),
])
def test_hidden_tests_show_what_the_instructors_setting_allows(detail, shown, hidden):
    """By default (the instructor's guide: "by their one-line description only") the feedback page
    and results.json show a hidden test's description, status and points, not its inputs or
    expected values; `mistake` adds the catalogued mistake it names; `full`, the whole message.
    A public check's message is always whole."""
    from grader.report import render

    report = _hidden_and_public()
    page = feedback.render([report], hidden_detail=detail)
    results_json = json.dumps(render.gradescope([report], 1.0, hidden_visibility="visible",
                                                hidden_detail=detail))
    for text in (page, results_json):
        assert "Scaled by 1/sqrt(d_k)." in text and "got 2.06482, expected 1.06268" in text
        assert all(value in text for value in shown), [v for v in shown if v not in text]
        assert not [value for value in hidden if value in text]
    assert render.HIDDEN_DETAIL == "description"
    with pytest.raises(ValueError, match="hidden_detail must be one of"):
        render.learner_view(report, "everything")
