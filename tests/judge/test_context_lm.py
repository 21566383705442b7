"""grader.judge.context_lm, the trusted copy of notebook 05's model, agrees with the notebook's own model.

The hidden tests of the challenge `extension_inv_freq` score a learner's scaling rule with
grader.judge.context_lm; if it drifted from the notebook's TinyRoPELM, the grade would not be the loss the
learner measures in the notebook. Both load the shipped base checkpoint and run on the same held-out
characters under the same frequencies; the held-out split is the notebook's.
"""
from __future__ import annotations

import math

import pytest
import torch

from grader.judge import context_lm
from tests.test_checkpoints_05 import load_chapter


@pytest.fixture(scope="module")
def chapter():
    return load_chapter()


@pytest.mark.parametrize("scale, factor", [(1.0, 1.0), (8.0, 0.1 * math.log(8) + 1)])
def test_same_logits_as_the_notebook_model(chapter, scale, factor):
    inputs = context_lm.windows([20, 21], "held-out")[0][:, :300]           # (2, 300)
    inv_freq = chapter["default_inv_freq"](32, 100.0) / scale
    notebook_model = chapter["TinyRoPELM"](chapter["CFG"])
    notebook_model.load_state_dict(torch.load(context_lm.course_assets("ctx05_base.pt") / "ctx05_base.pt",
                                              weights_only=True))
    with torch.no_grad():
        want = notebook_model.eval()(inputs, lambda T: (inv_freq, factor))
        got = context_lm.base_model()(inputs, inv_freq, factor)
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)


def test_same_held_out_split_as_the_notebook(chapter):
    assert torch.equal(context_lm.held_out(), chapter["val_ids"])


def test_windows_past_the_end_or_of_an_unknown_source_are_refused():
    for indices, source in (([78], "held-out"), ([48], "grader"), ([-1], "grader"), ([], "grader")):
        with pytest.raises(ValueError, match=f"{source} windows"):
            context_lm.windows(indices, source)
    with pytest.raises(ValueError, match="source must be one of"):
        context_lm.windows([0], "train")


def test_the_grader_text_is_not_in_the_corpus():
    """No grader window occurs in corpus.txt, so no notebook table, fit or public check has read it."""
    corpus = (context_lm.course_assets("corpus.txt") / "corpus.txt").read_text(encoding="ascii")
    text = (context_lm.course_assets("ctx05_grader_windows.txt") / "ctx05_grader_windows.txt").read_text(encoding="ascii")
    size = context_lm.WINDOW + 1
    assert len(text) == context_lm.GRADER_WINDOWS * size
    assert not any(text[k * size + 200: k * size + 400] in corpus for k in range(context_lm.GRADER_WINDOWS))


@pytest.mark.parametrize("source", context_lm.SOURCES)
def test_unscaled_model_breaks_past_its_training_length(source):
    """At its training length the unscaled model is near the notebook's 1.37 nats/char; at 1,024 it breaks."""
    theta = context_lm.default_inv_freq()
    short = context_lm.held_out_loss(theta, 1.0, 128, range(40, 44), source)
    long = context_lm.held_out_loss(theta, 1.0, 1024, range(40, 44), source)
    assert 1.0 < short < 1.6 and long > short + 1.0


def test_passes_at_once_change_no_loss(monkeypatch):
    """The passes that held_out_loss runs on threads of their own compute what each computes alone: the
    same float, to the last bit, with one pass at a time and with several (five passes of 2 windows at
    1,024; 3 passes of 5 and 1 window at 400), and no pass records an autograd graph."""
    inv_freq, factor = context_lm.default_inv_freq() / 8, 1.2
    cases = ((1024, range(10)), (400, range(30, 41)))
    monkeypatch.setattr(context_lm, "PASSES_AT_ONCE", 1)
    alone = [context_lm.held_out_loss(inv_freq, factor, length, windows) for length, windows in cases]
    monkeypatch.setattr(context_lm, "PASSES_AT_ONCE", 3)
    graphs = []
    forward = context_lm.ContextLM.forward
    monkeypatch.setattr(context_lm.ContextLM, "forward",
                        lambda self, *a: graphs.append(torch.is_grad_enabled()) or forward(self, *a))
    together = [context_lm.held_out_loss(inv_freq, factor, length, windows) for length, windows in cases]
    assert together == alone and len(graphs) == 5 + 3 and not any(graphs)
