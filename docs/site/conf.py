"""Sphinx configuration of the course's website (``python3 course.py site`` builds it into site/).

The site is built from the repository's root (this folder is only the configuration): the pages
are ``docs/index.md``, the guides in ``docs/`` and the *released* notebooks in ``notebooks/``,
rendered by MyST-NB from their stored outputs (nothing is executed): the outputs of the given
cells, and a placeholder where a figure is the learner's (``grader/notebook/given.py``). The
released notebooks hold no solution region, no hidden test and no conclusion a thinking exercise
asks for, so the site gives nothing away (``tests/test_site.py`` checks it).

Launch buttons (Binder, Colab) point at the course's own GitHub repository, named in one place:
``[tool.course] repository`` in ``pyproject.toml`` (``owner/name``); built on GitHub Actions, the
repository the workflow runs in (``GITHUB_REPOSITORY``, which Actions sets), so that a copy's site
launches its own notebooks (:func:`launch_repository`).

MathJax is served from the site itself (a copy of MathJax 2.7 from the pinned
``jupyter-server-mathjax`` package), so the pages typeset their maths offline too.
"""
from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from grader.notebook.release import course_repository  # noqa: E402 - the repository's root on the path first



def launch_repository(environ=os.environ) -> str:
    """The repository the launch buttons open: on GitHub Actions the one it runs in, else the
    one ``pyproject.toml`` names (``""``: no launch buttons)."""
    if environ.get("GITHUB_ACTIONS") == "true" and environ.get("GITHUB_REPOSITORY"):
        return environ["GITHUB_REPOSITORY"]
    return course_repository(ROOT)


REPOSITORY = launch_repository()
BRANCH = "main"  # the branch the Pages workflow deploys from, and the launch buttons open

project = "Positional encodings, from first principles"
author = "The positional-encodings course authors"
copyright = "2026, " + author

root_doc = "docs/index"
include_patterns = ["docs/*.md", "notebooks/*.ipynb"]
exclude_patterns = ["site", ".venv", "**/.ipynb_checkpoints"]

extensions = ["myst_nb"]
myst_enable_extensions = ["dollarmath", "amsmath"]
myst_dmath_double_inline = True  # $$...$$ inside a paragraph is display maths, as in JupyterLab
myst_heading_anchors = 3
myst_update_mathjax = False  # its settings are MathJax 3's; MathJax 2's are below
nb_execution_mode = "off"  # the stored outputs are the page; nothing runs at build time
nb_merge_streams = True
suppress_warnings = ["mystnb.unknown_mime_type"]

html_theme = "sphinx_book_theme"
html_title = "Positional encodings, from first principles"
html_extra_path = ["extra"]  # index.html at the site's root leads to docs/index.html
html_static_path = ["static"]
html_js_files = ["fit-equations.js"]  # a display equation too wide for the column is scaled to fit
html_css_files = ["course.css"]
html_copy_source = False
html_show_sourcelink = False
html_theme_options = {
    "path_to_docs": "",
    "home_page_in_toc": True,
    "show_navbar_depth": 1,
    "use_download_button": True,
}
if REPOSITORY:
    html_theme_options |= {
        "repository_url": f"https://github.com/{REPOSITORY}",
        "repository_branch": BRANCH,
        "use_repository_button": True,
        "launch_buttons": {
            "binderhub_url": "https://mybinder.org",
            "colab_url": "https://colab.research.google.com",
            "notebook_interface": "jupyterlab",
        },
    }

# MathJax 2.7 from the site itself: the configuration that typesets TeX into CommonHTML.
mathjax_path = "mathjax/MathJax.js?config=TeX-AMS-MML_HTMLorMML-full"
mathjax2_config = {
    # MyST marks each page's sections tex2jax_ignore and each formula's element "math".
    "tex2jax": {"inlineMath": [["\\(", "\\)"]], "displayMath": [["\\[", "\\]"]],
                "processEscapes": True, "processClass": "math|output_area",
                "ignoreClass": "tex2jax_ignore|mathjax_ignore"},
    # The fonts this copy of MathJax ships (as JupyterLab configures it).
    # No automatic line breaks: they broke formulas mid-term (a sum's argument on a line of its
    # own, a cases block torn from its left-hand side); static/fit-equations.js scales a display
    # equation that is too wide for the column instead.
    "HTML-CSS": {"availableFonts": ["STIX-Web"], "webFont": "STIX-Web", "imageFont": None,
                 "linebreaks": {"automatic": False}},
    "SVG": {"font": "STIX-Web"},
    "menuSettings": {"zoom": "None"},
}
MATHJAX_PARTS = ("MathJax.js", "LICENSE", "config", "jax", "fonts", "extensions/TeX",
                 "extensions/MathML", "extensions/MathMenu.js", "extensions/MathZoom.js",
                 "extensions/tex2jax.js", "extensions/mml2jax.js", "extensions/jsMath2jax.js",
                 "extensions/asciimath2jax.js", "extensions/MathEvents.js", "extensions/toMathML.js",
                 "extensions/FontWarnings.js", "extensions/HelpDialog.js", "extensions/Safe.js")
"""What the pages load of MathJax: the TeX input, the HTML and SVG outputs and their web fonts
(the accessibility extensions, 3.7 MB, are left out)."""


def _copy_mathjax(app, exception) -> None:
    """Copy the parts of MathJax the pages load into the built site's ``mathjax/``."""
    if exception is not None or app.builder.format != "html":
        return
    import jupyter_server_mathjax

    source = Path(jupyter_server_mathjax.__file__).parent / "static"
    target = Path(app.outdir) / "_static" / "mathjax"  # a relative mathjax_path is under _static/
    for part in MATHJAX_PARTS:
        origin = source / part
        if origin.is_dir():
            shutil.copytree(origin, target / part, dirs_exist_ok=True)
        else:
            (target / part).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(origin, target / part)


def setup(app):
    app.connect("build-finished", _copy_mathjax)
