"""Notebook 05's scaling exercises agree with Hugging Face transformers' ROPE_INIT_FUNCTIONS.

transformers (pinned 5.23.0 in the `test` extra) is a test-only oracle: in that version the
functions live in ``transformers.modeling_rope_utils.ROPE_INIT_FUNCTIONS`` and read their
parameters from ``config.rope_parameters``. Hugging Face computes inverse frequencies in float32,
the solution in float64 cast to float32, hence the relative tolerance of 1e-6 (observed ~3e-7).
"""
from __future__ import annotations

import math

import pytest
import torch

# One xdist worker runs this file (course.py passes --dist loadgroup), so that one imports
# transformers, and only when the first of its tests runs: not at collection, where each worker
# paid its import (about 2 s of CPU) whichever tests it ran.
pytestmark = pytest.mark.xdist_group("oracle-05")
rope_utils = LlamaConfig = None
"""transformers' ``modeling_rope_utils`` and ``LlamaConfig``, set by :func:`_transformers`."""


@pytest.fixture(scope="module", autouse=True)
def _transformers():
    """Import transformers for this file's tests (skipping them where it is not installed)."""
    global rope_utils, LlamaConfig
    rope_utils = pytest.importorskip(
        "transformers.modeling_rope_utils",
        reason="transformers is not installed (pip install -e '.[test]')")
    from transformers import LlamaConfig


RTOL = 1e-6
NAME = "05_context_extension"


def _config(head_dim, base, rope_type, max_position_embeddings, **params):
    return LlamaConfig(hidden_size=head_dim * 2, num_attention_heads=2, head_dim=head_dim,
                       max_position_embeddings=max_position_embeddings,
                       rope_parameters={"rope_type": rope_type, "rope_theta": base, **params})


def _hf(rope_type, config, seq_len=None):
    inv_freq, factor = rope_utils.ROPE_INIT_FUNCTIONS[rope_type](config, "cpu", seq_len=seq_len)
    return inv_freq.double(), float(factor)


def _theta(d, base):
    return base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)


CASES = [(128, 1e4, 4096, 16.0), (32, 1e4, 128, 8.0), (64, 5e5, 8192, 4.0), (128, 5e5, 8192, 8.0)]


@pytest.mark.parametrize("d, base, orig, s", CASES)
def test_linear_matches_hf(solution, d, base, orig, s):
    ours = solution(NAME).linear_scaling_inv_freq(_theta(d, base).float(), s).double()
    theirs, _ = _hf("linear", _config(d, base, "linear", int(orig * s), factor=s))
    torch.testing.assert_close(ours, theirs, rtol=RTOL, atol=0)


@pytest.mark.parametrize("d, base, orig, s", CASES)
def test_ntk_aware_matches_hf_dynamic_at_twice_the_length(solution, d, base, orig, s):
    """HF's dynamic base with factor s - 1 at seq_len 2 L_orig is the static NTK-aware base for s."""
    new_base = solution(NAME).ntk_aware_base(base, s, d)
    theirs, _ = _hf("dynamic", _config(d, base, "dynamic", orig, factor=s - 1), seq_len=2 * orig)
    torch.testing.assert_close(_theta(d, new_base), theirs, rtol=RTOL, atol=0)


@pytest.mark.parametrize("d, base, orig, s", CASES)
@pytest.mark.parametrize("multiple", [0.5, 1.0, 1.5, 4.0, 16.0])
def test_dynamic_matches_hf(solution, d, base, orig, s, multiple):
    seq_len = int(multiple * orig)
    new_base = solution(NAME).dynamic_ntk_base(base, s, d, seq_len, orig)
    theirs, _ = _hf("dynamic", _config(d, base, "dynamic", orig, factor=s), seq_len=seq_len)
    torch.testing.assert_close(_theta(d, new_base), theirs, rtol=RTOL, atol=0)


def _compare_yarn(solution, d, base, orig, s, betas):
    """The solution's YaRN inverse frequencies and attention factor equal transformers'."""
    inv_freq, factor = solution(NAME).yarn_inv_freq(d, base, s, orig, *betas)
    config = _config(d, base, "yarn", int(orig * s), factor=s, original_max_position_embeddings=orig,
                     beta_fast=betas[0], beta_slow=betas[1])
    theirs, their_factor = _hf("yarn", config)
    torch.testing.assert_close(inv_freq.double(), theirs, rtol=RTOL, atol=0)
    assert factor == pytest.approx(their_factor, rel=1e-12)


def _compare_llama3(solution, d, base, orig, s, factors):
    """The solution's Llama 3 inverse frequencies equal transformers'."""
    ours = solution(NAME).llama3_inv_freq(d, base, s, orig, *factors).double()
    config = _config(d, base, "llama3", int(orig * s), factor=s, original_max_position_embeddings=orig,
                     low_freq_factor=factors[0], high_freq_factor=factors[1])
    theirs, _ = _hf("llama3", config)
    torch.testing.assert_close(ours, theirs, rtol=RTOL, atol=0)


@pytest.mark.parametrize("d, base, orig, s", CASES)
@pytest.mark.parametrize("betas", [(32.0, 1.0), (16.0, 2.0)])
def test_yarn_matches_hf(solution, d, base, orig, s, betas):
    _compare_yarn(solution, d, base, orig, s, betas)


def test_yarn_worked_case(solution):
    """head_dim 128, base 1e4, L_orig 4096, s 16: pairs 0-20 kept, 46-63 divided, factor ~ 1.2773."""
    inv_freq, factor = solution(NAME).yarn_inv_freq(128, 1e4, 16.0, 4096)
    theta = _theta(128, 1e4)
    ratio = theta / inv_freq.double()
    assert torch.allclose(ratio[:21], torch.ones(21, dtype=torch.float64), rtol=RTOL)
    assert torch.allclose(ratio[46:], torch.full((18,), 16.0, dtype=torch.float64), rtol=RTOL)
    assert not torch.isclose(ratio[21], torch.tensor(1.0, dtype=torch.float64), rtol=1e-3)
    assert not torch.isclose(ratio[45], torch.tensor(16.0, dtype=torch.float64), rtol=1e-3)
    assert factor == pytest.approx(0.1 * math.log(16) + 1) and round(factor, 4) == 1.2773


@pytest.mark.parametrize("d, base, orig, s", CASES)
@pytest.mark.parametrize("factors", [(1.0, 4.0), (2.0, 8.0)])
def test_llama3_matches_hf(solution, d, base, orig, s, factors):
    _compare_llama3(solution, d, base, orig, s, factors)


# The explicit examples of the hidden property tests: ramp ends that coincide (at 0 and at d - 1),
# a high end past d/2 - 1 and one clamped to d - 1, bases and scales that are not whole numbers.
EDGE_YARN = [(32, 1e4, 5, 4.0, (32.0, 1.0)), (8, 2.0, 700, 2.5, (32.0, 1.0)), (128, 1e4, 60000, 8.0, (32.0, 1.0)),
             (4, 1.5, 445, 3.0, (64.0, 0.5)), (4, 1e4, 1, 2.0, (32.0, 1.0)), (8, 1.5, 64, 2.0, (32.0, 1.0)),
             (64, 12345.6, 3000, 2.75, (20.5, 1.5))]


@pytest.mark.parametrize("d, base, orig, s, betas", EDGE_YARN)
def test_yarn_edges_match_hf(solution, d, base, orig, s, betas):
    _compare_yarn(solution, d, base, orig, s, betas)


EDGE_LLAMA3 = [(2, 1e4, 8, 4.0, (1.0, 4.0)), (2, 5e5, 8192, 8.0, (1.0, 4.0)), (16, 1.5, 64, 8.0, (1.0, 4.0)),
               (64, 5e5, 8192, 8.0, (0.5, 0.6)), (32, 12345.6, 777, 2.75, (0.3, 5.5))]


@pytest.mark.parametrize("d, base, orig, s, factors", EDGE_LLAMA3)
def test_llama3_edges_match_hf(solution, d, base, orig, s, factors):
    _compare_llama3(solution, d, base, orig, s, factors)


@pytest.mark.parametrize("d, base, orig, s", [(4, 1e4, 128, 2.5), (34, 777.7, 300, 1.0), (8, 5e5, 1, 3.25)])
@pytest.mark.parametrize("multiple", [0.25, 1.0, 2.6])
def test_dynamic_edges_match_hf(solution, d, base, orig, s, multiple):
    seq_len = max(1, int(multiple * orig))
    new_base = solution(NAME).dynamic_ntk_base(base, s, d, seq_len, orig)
    theirs, _ = _hf("dynamic", _config(d, base, "dynamic", orig, factor=s), seq_len=seq_len)
    torch.testing.assert_close(_theta(d, new_base), theirs, rtol=RTOL, atol=0)
