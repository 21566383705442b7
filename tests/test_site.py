"""The course's website: built from the released notebooks with no warning, within its budget,
with launch buttons, its maths typeset and its plots shown in a real browser, and nothing of the
solutions or the hidden tests in it; the Colab cell sets the course up in a fresh environment."""
from __future__ import annotations

import ast
import functools
import html
import os
import re
import shutil
import subprocess
import sys
import threading
import venv
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from grader.notebook.release import BEGIN_SOLUTION, END_SOLUTION, colab_cell
from grader.notebook.read import read_notebook
from tests.conftest import NOTEBOOKS, ROOT, SOLUTIONS

REPOSITORY = "example-org/example-course"
"""The repository the test build names (the course's own is set in pyproject.toml)."""
BUDGET_BYTES = 20 << 20
"""The pages weigh under 20 MB in all."""
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("site")]


@pytest.fixture(scope="module")
def built_site(tmp_path_factory) -> Path:
    """The site, built as ``course.py site`` builds it, into a temporary folder."""
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "COURSE_REPOSITORY": REPOSITORY}
    result = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html", "-c",
         "docs/site", "-d", str(out / "doctrees"), ".", str(out / "html")],
        cwd=ROOT, env=env, capture_output=True, text=True)
    assert result.returncode == 0, f"the site did not build without warnings:\n{result.stderr[-4000:]}"
    return out / "html"


def _pages(site: Path) -> dict[Path, str]:
    return {path: path.read_text(errors="replace") for path in site.rglob("*.html")
            if "_static" not in path.parts}


def _text(page: str) -> str:
    """A page's text as a reader sees it (tags dropped, entities decoded)."""
    return html.unescape(re.sub(r"<[^>]+>", "", page))


def test_every_notebook_and_guide_is_a_page_within_the_budget(built_site):
    for notebook in sorted(NOTEBOOKS.glob("*.ipynb")):
        assert (built_site / "notebooks" / f"{notebook.stem}.html").is_file(), notebook.name
    assert (built_site / "docs" / "index.html").is_file() and (built_site / "index.html").is_file()
    weight = sum(path.stat().st_size for path in built_site.rglob("*") if path.is_file())
    assert weight < BUDGET_BYTES, f"the site weighs {weight / 2**20:.1f} MB, over 20 MB"


def test_each_notebook_page_launches_from_the_course_repository(built_site):
    for notebook in sorted(NOTEBOOKS.glob("*.ipynb")):
        page = (built_site / "notebooks" / f"{notebook.stem}.html").read_text()
        binder = (f"https://mybinder.org/v2/gh/{REPOSITORY}/main?urlpath=lab/tree/notebooks/"
                  f"{notebook.name}")
        colab = f"https://colab.research.google.com/github/{REPOSITORY}/blob/main/notebooks/{notebook.name}"
        assert binder in page, f"{notebook.stem}: no Binder button"
        assert colab in page, f"{notebook.stem}: no Colab button"


@functools.cache
def _solution_lines() -> set[str]:
    """Lines of the solutions' regions (code and conclusions) that no released notebook holds."""
    released = "\n".join(cell.source for path in NOTEBOOKS.glob("*.ipynb")
                         for cell in read_notebook(path).cells)
    lines = set()
    for path in SOLUTIONS.glob("*.ipynb"):
        for cell in read_notebook(path).cells:
            inside = False
            for line in cell.source.split("\n"):
                marker = line.strip()
                if marker in (BEGIN_SOLUTION, END_SOLUTION):
                    inside = marker == BEGIN_SOLUTION
                elif inside and len(marker) >= 30 and marker not in released:
                    lines.add(marker)
    return lines


def _hidden_test_names() -> set[str]:
    names = set()
    for suite in (ROOT / "grader" / "judge" / "suites").glob("test_*.py"):
        for node in ast.walk(ast.parse(suite.read_text())):
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
                names.add(node.name)
    return names


def test_no_page_holds_a_solution_or_a_hidden_test(built_site):
    secrets = _solution_lines()
    assert len(secrets) > 100, "the solutions' regions were not found"
    names = _hidden_test_names()
    assert names, "the hidden tests' names were not found"
    for path, page in _pages(built_site).items():
        text = _text(page)
        leaked = sorted(line for line in secrets if line in text)
        assert not leaked, f"{path.relative_to(built_site)} shows solution lines: {leaked[:3]}"
        shown = sorted(names & set(re.findall(r"\w+", text)))  # as whole words (identifiers)
        assert not shown, f"{path.relative_to(built_site)} names hidden tests: {shown[:3]}"


@pytest.fixture(scope="module")
def served(built_site):
    """The built site on a loopback HTTP server, as a browser would read it."""
    handler = functools.partial(_QuietHandler, directory=str(built_site))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


def test_a_real_browser_typesets_the_maths_and_shows_the_plot(served, tmp_path):
    """Headless Chromium (Debian's package) renders notebook 03: every formula typeset by
    MathJax, and its first plot loaded, on screen and not blank."""
    if CHROMIUM is None:
        if os.environ.get("CI"):
            pytest.fail("Chromium is missing: .ci/run installs Debian's chromium package")
        pytest.skip("Chromium is not installed (apt-get install chromium)")
    from PIL import Image
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=[
            "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync"])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(f"{served}/notebooks/03_addition_vs_concatenation.html")
            page.wait_for_function(
                "window.MathJax && MathJax.Hub && MathJax.Hub.queue.pending === 0"
                " && document.querySelectorAll('.MathJax, .MathJax_Display').length > 0",
                timeout=30_000)
            formulas, typeset = page.evaluate(
                "() => { const all = [...document.querySelectorAll('.math.notranslate')];"
                " return [all.length, all.filter(e => e.querySelector('.MathJax, .MathJax_Display')).length]; }")
            assert formulas > 20 and typeset == formulas, f"{typeset} of {formulas} formulas typeset"
            plot = page.locator("div.cell_output img").first
            plot.scroll_into_view_if_needed()
            width, height, complete = plot.evaluate("e => [e.naturalWidth, e.naturalHeight, e.complete]")
            assert complete and width > 200 and height > 150, "the plot did not load"
            plot.screenshot(path=str(tmp_path / "plot.png"))
        finally:
            browser.close()
    pixels = Image.open(tmp_path / "plot.png").convert("L")
    low, high = pixels.getextrema()
    dark = sum(pixels.histogram()[:128]) / (pixels.width * pixels.height)
    assert high - low > 100 and 0.005 < dark < 0.5, "the plot on screen is blank"


def test_the_colab_cell_sets_the_course_up_in_a_fresh_environment(tmp_path):
    """The Colab cell, run as on Colab (``google.colab`` imported) in a fresh virtual environment
    that already has what Colab has, with the repository given as a local path: it clones the
    course, installs the rest, and the notebook then imports ``check`` and finds its assets."""
    env_dir = tmp_path / "colab-env"
    venv.EnvBuilder(with_pip=False).create(env_dir)  # pip comes with what Colab ships (below)
    python = env_dir / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    # What Colab ships (torch, numpy, matplotlib, pip, ...): this environment's packages, on the
    # path without their .pth files, so the course itself is not importable until the cell
    # installs it (pip among them: no copy of pip of the environment's own to install, 3 s of CPU).
    ours = next(p for p in sys.path if p.endswith("site-packages") and Path(p, "torch").is_dir())
    Path(site, "colab_preinstalled.pth").write_text(ours + "\n")
    cell = colab_cell(REPOSITORY, "01_permutation_invariance").source
    home = tmp_path / "content" / "course"
    script = tmp_path / "on_colab.py"
    script.write_text(
        "import sys, types\n"
        "sys.modules['google.colab'] = types.ModuleType('google.colab')\n"
        + cell + "\n"
        "import grader\n"
        "from grader import check\n"
        "from grader.assets import course_assets\n"
        "print('grader', grader.__file__)\n"
        "print('assets', course_assets('corpus.txt'))\n"
        "import os; print('cwd', os.getcwd())\n")
    result = subprocess.run(
        [str(python), str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=600,
        env={**{k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")},
             "COURSE_URL": str(ROOT), "COURSE_HOME": str(home)})
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    assert f"grader {home / 'grader' / '__init__.py'}" in result.stdout
    assert f"assets {home / 'assets'}" in result.stdout
    assert f"cwd {home / 'notebooks'}" in result.stdout
    assert (home / "notebooks" / "01_permutation_invariance.ipynb").is_file()
