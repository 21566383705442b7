"""The inline check() runs only public checks, says so, and reports the first failure."""
from __future__ import annotations

import torch

from grader.inline import check
from tests.conftest import load_solution


def test_check_passes_the_solution_and_says_hidden_tests_remain(capsys):
    namespace = vars(load_solution("01_permutation_invariance")).copy()
    assert check("permutation_matrix", namespace) is True
    out = capsys.readouterr().out
    assert "public checks passed" in out and "hidden tests" in out
    assert "All tests passed" not in out


def test_check_reports_the_first_failure_and_names_the_mistake(capsys):
    namespace = vars(load_solution("01_permutation_invariance")).copy()

    def permutation_matrix(perm):
        perm = torch.as_tensor(perm)
        p = torch.zeros(len(perm), len(perm))
        p[perm, torch.arange(len(perm))] = 1.0
        return p

    namespace["permutation_matrix"] = permutation_matrix
    assert check("permutation_matrix", namespace) is False
    out = capsys.readouterr().out
    assert "FAIL" in out and "the transpose" in out and "0/1 public checks failed" in out


def test_check_on_a_stub_says_not_implemented(capsys):
    def scaled_dot_product_attention(q, k, v, mask=None):
        raise NotImplementedError

    assert check("scaled_dot_product_attention",
                 {"scaled_dot_product_attention": scaled_dot_product_attention}) is False
    assert "not implemented yet" in capsys.readouterr().out


def test_check_with_an_unknown_name_says_so(capsys):
    assert check("no_such_exercise", {}) is False
    assert "no public checks found" in capsys.readouterr().out
