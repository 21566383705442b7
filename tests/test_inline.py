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
    assert "FAIL" in out and "the transpose" in out
    assert "permutation_matrix: 0 of 1 public checks passed; failing: " in out
    assert "failed" not in out.splitlines()[-1]  # the summary counts what passed


def test_check_counts_the_checks_that_passed_and_names_the_failing_ones(capsys):
    namespace = vars(load_solution("01_permutation_invariance")).copy()
    assert check("scaled_dot_product_attention", namespace) is True
    passed = capsys.readouterr().out.splitlines()[-1]
    total = int(passed.split(" of ")[1].split()[0])
    assert passed.startswith(f"scaled_dot_product_attention: {total} of {total} public checks passed.")

    def scaled_dot_product_attention(q, k, v, mask=None):
        return torch.softmax(q @ k.transpose(-2, -1), dim=-1) @ v  # no 1/sqrt(d_k)

    namespace["scaled_dot_product_attention"] = scaled_dot_product_attention
    assert check("scaled_dot_product_attention", namespace) is False
    lines = capsys.readouterr().out.splitlines()
    failing = [line.strip().removeprefix("FAIL").strip() for line in lines if "FAIL" in line]
    assert failing and lines[-1].startswith(
        f"scaled_dot_product_attention: {total - len(failing)} of {total} public checks passed; "
        f"failing: {'; '.join(failing)}.")


def test_check_on_a_stub_says_not_implemented(capsys):
    def scaled_dot_product_attention(q, k, v, mask=None):
        raise NotImplementedError

    assert check("scaled_dot_product_attention",
                 {"scaled_dot_product_attention": scaled_dot_product_attention}) is False
    assert "not implemented yet" in capsys.readouterr().out


def test_check_with_an_unknown_name_says_so(capsys):
    assert check("no_such_exercise", {}) is False
    assert "no public checks found" in capsys.readouterr().out
