"""The course's website: built from the released notebooks with no warning, within its budget,
with launch buttons to the course's repository, every figure of the solutions' given cells and
nothing of the learner's (no output of an exercise, of a solution region or of a conclusion), its
maths typeset and its display equations whole in a real browser, and nothing of the solutions or
the hidden tests in it; the Colab cell sets the course up in a fresh environment."""
from __future__ import annotations

import ast
import base64
import functools
import hashlib
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

from grader.notebook.given import EXPECTED, EXPECTED_PLACEHOLDER, GIVEN, LEARNER_PLACEHOLDER, classify
from grader.notebook.release import BEGIN_SOLUTION, END_SOLUTION, colab_cell, course_repository
from grader.notebook.read import read_notebook
from tests.conftest import NOTEBOOKS, ROOT, SOLUTIONS

REPOSITORY = course_repository(ROOT)
"""The repository the launch buttons open: the one ``[tool.course] repository`` names."""
BUDGET_BYTES = 20 << 20
"""The pages weigh under 20 MB in all."""
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
PLACEHOLDER = "Your figure appears here when you run the cell"
assert LEARNER_PLACEHOLDER.strip("*").startswith(PLACEHOLDER)
assert EXPECTED_PLACEHOLDER.strip("*").startswith(PLACEHOLDER)

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("site")]


@pytest.fixture(scope="module")
def built_site(tmp_path_factory) -> Path:
    """The site, built as ``course.py site`` builds it (off GitHub Actions), into a temporary folder."""
    out = tmp_path_factory.mktemp("site")
    env = {k: v for k, v in os.environ.items() if k not in ("GITHUB_ACTIONS", "GITHUB_REPOSITORY")}
    result = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html", "-c",
         "docs/site", "-d", str(out / "doctrees"), ".", str(out / "html")],
        cwd=ROOT, env=env, capture_output=True, text=True)
    assert result.returncode == 0, f"the site did not build without warnings:\n{result.stderr[-4000:]}"
    return out / "html"


def _sha(output) -> str:
    return hashlib.sha256(base64.b64decode(output["data"]["image/png"])).hexdigest()


@functools.cache
def _solution_figures(stem: str) -> tuple[frozenset, frozenset, int]:
    """(the figures the page must show: the given cells' and, under their placeholder, the
    implement-only cells', by the SHA-256 of their PNG, as MyST-NB names their files; the figures
    of every other cell, which it must not show; how many placeholders it shows)."""
    solution = read_notebook(SOLUTIONS / f"{stem}.ipynb")
    shown, hidden, placeholders = set(), set(), 0
    for cell, decision in zip(solution.cells, classify(solution, stem)):
        figures = {_sha(o) for o in cell.get("outputs", []) if "image/png" in o.get("data", {})}
        if decision.kind in (GIVEN, EXPECTED):
            shown |= figures
        else:
            hidden |= figures
        placeholders += bool(figures) and decision.kind not in (GIVEN, "exercise")
    return frozenset(shown), frozenset(hidden - shown), placeholders


def _output_lines(outputs) -> set[str]:
    lines = set()
    for output in outputs:
        text = output.get("text") or output.get("data", {}).get("text/plain") or ""
        lines |= {line.strip() for line in text.splitlines()}
    return lines


@functools.cache
def _learners_lines(stem: str) -> frozenset:
    """Printed lines (with a number, 12 characters or more) of the solution's cells that are not
    given (exercises, solution regions, cells that read a learner's result), which the released
    notebook does not hold anywhere."""
    solution = read_notebook(SOLUTIONS / f"{stem}.ipynb")
    released = read_notebook(NOTEBOOKS / f"{stem}.ipynb")
    kept = "\n".join([c.source for c in released.cells] + [
        line for c in released.cells if c.cell_type == "code" for line in _output_lines(c.outputs)])
    lines = set()
    for cell, decision in zip(solution.cells, classify(solution, stem)):
        if cell.cell_type == "code" and decision.kind != GIVEN:
            lines |= {line for line in _output_lines(cell.outputs)
                      if len(line) >= 12 and re.search(r"\d", line) and line not in kept}
    return frozenset(lines)


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
    assert re.fullmatch(r"[\w.-]+/[\w.-]+", REPOSITORY), \
        "[tool.course] repository in pyproject.toml names no GitHub repository (owner/name)"
    for notebook in sorted(NOTEBOOKS.glob("*.ipynb")):
        page = (built_site / "notebooks" / f"{notebook.stem}.html").read_text()
        binder = (f"https://mybinder.org/v2/gh/{REPOSITORY}/main?urlpath=lab/tree/notebooks/"
                  f"{notebook.name}")
        colab = f"https://colab.research.google.com/github/{REPOSITORY}/blob/main/notebooks/{notebook.name}"
        assert binder in page, f"{notebook.stem}: no Binder button"
        assert colab in page, f"{notebook.stem}: no Colab button"
        assert f"https://github.com/{REPOSITORY}" in page, f"{notebook.stem}: no repository button"


def test_each_notebook_page_shows_its_given_figures_and_none_of_the_learners(built_site):
    """Every figure that the solution's given cells draw is on the page (and, under its
    placeholder, every figure of a cell that reads implement exercises only); no figure and no
    printed number of an exercise, a solution region or a cell that reads a learner's result is."""
    for notebook in sorted(NOTEBOOKS.glob("*.ipynb")):
        page = (built_site / "notebooks" / f"{notebook.stem}.html").read_text()
        images = set(re.findall(r'<img [^>]*src="\.\./_images/([0-9a-f]{64})\.png"', page))
        shown, hidden, placeholders = _solution_figures(notebook.stem)
        assert shown <= images, f"{notebook.stem}: {len(shown - images)} given figure(s) missing"
        assert not hidden & images, f"{notebook.stem}: shows {len(hidden & images)} figure(s) of the learner's"
        text = _text(page)
        assert text.count(PLACEHOLDER) == placeholders, \
            f"{notebook.stem}: {text.count(PLACEHOLDER)} placeholders, not {placeholders}"
        leaked = sorted(line for line in _learners_lines(notebook.stem) if line in text)
        assert not leaked, f"{notebook.stem} shows outputs of the learner's cells: {leaked[:3]}"


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


_PAGE_FACTS = """() => {
  const article = document.querySelector("article") || document.body;
  const formulas = [...article.querySelectorAll(".math.notranslate")];
  const typeset = formulas.filter(e => e.querySelector(".MathJax, .MathJax_Display")).length;
  // Dollar signs left in the prose: text outside code, outputs and MathJax's own markup.
  const walker = document.createTreeWalker(article, NodeFilter.SHOW_TEXT);
  const raw = [];
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    if (node.parentElement.closest("pre, code, script, style, .cell_output, .MathJax, .MathJax_Display,"
                                    + " .MathJax_Preview, .math")) continue;
    if (node.textContent.includes("$")) raw.push(node.textContent.trim().slice(0, 80));
  }
  // Display equations: the formula's own box against its column, after fit-equations.js.
  const wide = [];
  for (const box of article.querySelectorAll("div.math")) {
    const math = box.querySelector(".MathJax span.math");
    if (!math) continue;
    const inner = math.firstElementChild;
    const width = Math.max(math.scrollWidth, inner ? inner.getBoundingClientRect().width : 0);
    if (width > box.clientWidth + 1) wide.push([Math.round(width), box.clientWidth, box.textContent.slice(0, 40)]);
  }
  const images = [...article.querySelectorAll("div.cell_output img")].map(
    e => [e.getAttribute("src").split("/").pop().replace(".png", ""), e.complete && e.naturalWidth > 100]);
  const links = [...document.querySelectorAll("a[href]")].map(e => e.href);
  return {formulas: formulas.length, typeset, raw, wide, images, links,
          linebreaks: MathJax.Hub.config["HTML-CSS"].linebreaks.automatic,
          pageWidth: document.documentElement.scrollWidth, viewport: window.innerWidth};
}"""


def test_a_real_browser_shows_every_page_whole(served, tmp_path):
    """Headless Chromium (Debian's package) opens the index and every notebook page: every formula
    typeset by MathJax and no raw ``$`` in the prose; every display equation within its column (no
    line break inside a formula, none wider than the column) and the page no wider than the
    window; the figures of the solution's given cells loaded (counted against them); the launch
    buttons' targets; and one plot on screen, not blank."""
    if CHROMIUM is None:
        if os.environ.get("CI"):
            pytest.fail("Chromium is missing: .ci/run installs Debian's chromium package")
        pytest.skip("Chromium is not installed (apt-get install chromium)")
    from PIL import Image
    from playwright.sync_api import sync_playwright

    pages = ["docs/index", *(f"notebooks/{p.stem}" for p in sorted(NOTEBOOKS.glob("*.ipynb")))]
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=[
            "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync"])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            for name in pages:
                page.goto(f"{served}/{name}.html")
                page.wait_for_function(
                    "document.documentElement.getAttribute('data-equations-fitted') === 'yes'",
                    timeout=60_000)
                facts = page.evaluate(_PAGE_FACTS)
                assert facts["typeset"] == facts["formulas"], \
                    f"{name}: {facts['typeset']} of {facts['formulas']} formulas typeset"
                assert not facts["raw"], f"{name}: raw $ in the prose: {facts['raw'][:3]}"
                assert facts["linebreaks"] is False, "MathJax breaks formulas across lines"
                assert not facts["wide"], f"{name}: display equations wider than the column: {facts['wide'][:3]}"
                assert facts["pageWidth"] <= facts["viewport"], f"{name}: the page scrolls sideways"
                assert f"https://github.com/{REPOSITORY}" in facts["links"], f"{name}: repository button"
                if not name.startswith("notebooks/"):
                    continue
                stem = name.split("/")[1]
                assert facts["formulas"] > 5, f"{name}: almost no maths found"
                loaded = {src for src, ok in facts["images"] if ok}
                shown, _, _ = _solution_figures(stem)
                assert shown <= loaded, f"{name}: {len(shown - loaded)} of {len(shown)} figures not shown"
                for target in (f"https://mybinder.org/v2/gh/{REPOSITORY}/main?urlpath=lab/tree/notebooks/{stem}.ipynb",
                               f"https://colab.research.google.com/github/{REPOSITORY}/blob/main/notebooks/{stem}.ipynb"):
                    assert target in facts["links"], f"{name}: no button to {target}"
            plot = page.locator("div.cell_output img").first  # the last page's first plot
            plot.scroll_into_view_if_needed()
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
