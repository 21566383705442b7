"""Chapters, not logs: the limits every notebook's text keeps (docs/maintainers.md, "Chapters").

- the released notebook's prose (its markdown cells' words) within WORDS_LIMIT: 4,500 for 01-03,
  5,000 from 04 on;
- no markdown paragraph of a solution notebook (paragraphs are separated by blank lines; model
  answers and rubrics included) quotes more than NUMBERS_PER_PARAGRAPH numbers: findings go in
  sentences, the figures in printed tables. Numbers inside LaTeX and inline code, years, and a
  citation's section, equation, figure and table numbers are not counted;
- every line a solution's stored outputs print within PRINTED_LINE characters.
"""
from __future__ import annotations

import re

import nbformat
import pytest

from tests.conftest import NOTEBOOKS, solution_notebooks

NUMBERS_PER_PARAGRAPH = 6
PRINTED_LINE = 100


def words_limit(name: str) -> int:
    return 4_500 if name[:2] in {"01", "02", "03"} else 5_000


_NUMBER = re.compile(r"(?<![\w.])[-+]?\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?%?")
_NOT_COUNTED = (
    re.compile(r"\$\$.*?\$\$|\$[^$]*\$", re.S),                                   # LaTeX
    re.compile(r"`[^`]*`"),                                                      # inline code
    re.compile(r"(?:§|eq\.|Eq\.|equation|Figure|Fig\.|Table|[Ss]ection|arXiv:?)\s*[\d.]+"),
    re.compile(r"\((?:19|20)\d\d[a-z]?\)|\b(?:19|20)\d\d\b"),                    # years
)


def numbers(paragraph: str) -> list[str]:
    """The numbers a paragraph of Markdown quotes, as the rule above counts them."""
    for pattern in _NOT_COUNTED:
        paragraph = pattern.sub(" ", paragraph)
    return _NUMBER.findall(paragraph)


def test_numbers_counts_measured_figures_and_leaves_citations_and_maths_out():
    assert numbers("0.825 against 0.41 [0.37, 0.45] at 1,024 tokens, 95% of draws") == \
        ["0.825", "0.41", "0.37", "0.45", "1,024", "95%"]
    assert numbers("Su et al. (2021), eq. 34 and §3.2; $\\theta_i = b^{-2i/d}$ with `head_dim = 64`") == []


@pytest.mark.parametrize("path", solution_notebooks(), ids=lambda path: path.stem[:2])
def test_released_prose_is_within_the_words_limit(path):
    released = nbformat.read(NOTEBOOKS / path.name, as_version=4)
    words = sum(len(cell.source.split()) for cell in released.cells if cell.cell_type == "markdown")
    assert words <= words_limit(path.name), f"{path.name}: {words} words of prose"


@pytest.mark.parametrize("path", solution_notebooks(), ids=lambda path: path.stem[:2])
def test_no_paragraph_quotes_more_than_six_numbers(path):
    heavy = [f"cell {index}: {found} in {paragraph[:60]!r}"
             for index, cell in enumerate(nbformat.read(path, as_version=4).cells)
             if cell.cell_type == "markdown"
             for paragraph in re.split(r"\n\s*\n", cell.source)
             if len(found := numbers(paragraph)) > NUMBERS_PER_PARAGRAPH]
    assert not heavy, "put these numbers in a printed table:\n" + "\n".join(heavy)


@pytest.mark.parametrize("path", solution_notebooks(), ids=lambda path: path.stem[:2])
def test_printed_lines_fit_a_hundred_characters(path):
    long = []
    for index, cell in enumerate(nbformat.read(path, as_version=4).cells):
        for output in cell.get("outputs", []) if cell.cell_type == "code" else []:
            text = output.get("text", "") if output.output_type == "stream" else \
                output.get("data", {}).get("text/plain", "")
            long += [f"cell {index}: {len(line)} characters" for line in text.splitlines()
                     if len(line) > PRINTED_LINE]
    assert not long, "\n".join(long)
