"""Notebook 05's shipped checkpoints load safely and reproduce the numbers printed in the notebook.

The model, data and evaluation code are taken from the solution notebook itself, through the same
loader the training script uses (cells tagged `setup`, `exercise` and `model`), so the test, the
script and the chapter cannot drift apart. The expected values are the ones the notebook prints
(2 decimals). Tolerance 0.006: 0.005 of rounding plus float32 reductions on another CPU or thread
count (observed differences below 1e-5); the gaps the chapter calls are all above 0.01 with
intervals that exclude zero.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

from tests.conftest import script_module

ROOT = Path(__file__).resolve().parent.parent
ASSETS = ROOT / "assets"
CHECKPOINTS = ["ctx05_base", "ctx05_none_ft", "ctx05_pi_ft",
               "ctx05_yarn_ft", "ctx05_ntk_ft", "ctx05_dynamic_ft", "ctx05_none_ft1024", "ctx05_pi_ft1024",
               "ctx05_yarn_ft1024", "ctx05_ntk_ft1024", "ctx05_dynamic_ft1024", "ctx05_passkey",
               "ctx05_passkey_none_ft", "ctx05_passkey_pi_ft", "ctx05_passkey_yarn_ft", "ctx05_passkey_ntk_ft"]
TOLERANCE = 0.006
EXPECTED_LOSS = {  # (checkpoint, method, length) -> held-out loss (nats/char) printed in sections 9 and 11
    ("ctx05_base", "none", 128): 1.37,
    ("ctx05_base", "none", 1024): 3.42,
    ("ctx05_base", "NTK-aware", 1024): 1.83,
    ("ctx05_base", "YaRN", 1024): 1.72,
    ("ctx05_none_ft", "none", 1024): 1.43,
    ("ctx05_pi_ft", "PI", 1024): 1.87,
    ("ctx05_yarn_ft", "YaRN", 1024): 1.36,
}
EXPECTED_DIGITS = {  # (checkpoint, method, length) -> teacher-forced per-digit accuracy printed in section 12
    ("ctx05_passkey", "none", 128): 0.98,
    ("ctx05_passkey_none_ft", "none", 512): 0.18,
    ("ctx05_passkey_yarn_ft", "YaRN", 512): 0.95,
}


def load_chapter() -> dict:
    """The chapter's exercises and model cells, through scripts/train_context_extension.py's loader."""
    script = script_module("train_context_extension")
    cwd = os.getcwd()
    try:
        torch.set_num_threads(1)
        return script.load_chapter()
    finally:
        os.chdir(cwd)


@pytest.fixture(scope="module")
def chapter():
    return load_chapter()


def _model(chapter, name):
    model = chapter["TinyRoPELM"](chapter["CFG"])
    model.load_state_dict(torch.load(ASSETS / f"{name}.pt", weights_only=True))
    return model.eval()


def test_assets_stay_small():
    total = sum(p.stat().st_size for p in ASSETS.iterdir() if p.is_file())
    assert total < 40 * 2**20, f"assets/ holds {total / 2**20:.1f} MB; keep it under 40 MB"


@pytest.mark.parametrize("name", CHECKPOINTS)
def test_checkpoint_loads_with_weights_only(chapter, name):
    state = torch.load(ASSETS / f"{name}.pt", weights_only=True)
    model = chapter["TinyRoPELM"](chapter["CFG"])
    model.load_state_dict(state)  # strict: same keys and shapes as the notebook's model
    assert all(t.dtype == torch.float32 for t in state.values())


@pytest.mark.parametrize("key", list(EXPECTED_LOSS))
def test_checkpoint_reproduces_loss(chapter, key):
    name, method, length = key
    per_window = chapter["losses_by_length"](_model(chapter, name), chapter["make_rope"](method))[length]
    loss = float(per_window.mean())
    assert abs(loss - EXPECTED_LOSS[key]) <= TOLERANCE, f"{key}: got {loss:.4f}, expected {EXPECTED_LOSS[key]:.2f}"


@pytest.mark.parametrize("key", list(EXPECTED_DIGITS))
def test_passkey_checkpoint_reproduces_digit_accuracy(chapter, key):
    name, method, length = key
    model, rope = _model(chapter, name), chapter["make_rope"](method)
    accuracy = sum(float(chapter["passkey_scores"](model, rope, length, depth)[1].mean())
                   for depth in chapter["GRID_DEPTHS"]) / len(chapter["GRID_DEPTHS"])
    assert abs(accuracy - EXPECTED_DIGITS[key]) <= TOLERANCE, \
        f"{key}: got {accuracy:.4f}, expected {EXPECTED_DIGITS[key]:.2f}"


@pytest.mark.parametrize("name, suffix", [("ctx05_seeds.json", "_ft"), ("ctx05_seeds1024.json", "_ft1024")])
def test_seed_table_matches_the_shipped_checkpoints(chapter, name, suffix):
    """Seed 1 of each seed table is the shipped fine-tune of each arm: recompute it on the notebook's 16 windows."""
    import json

    table = json.loads((ASSETS / name).read_text())
    rope = {"none": ("none", 1.0), "PI": ("PI", 8.0), "NTK-aware": ("NTK-aware", 8.0),
            "dynamic NTK": ("dynamic NTK", 1.0), "YaRN": ("YaRN", 8.0)}
    tags = {"none": "none", "PI": "pi", "NTK-aware": "ntk", "dynamic NTK": "dynamic", "YaRN": "yarn"}
    assert set(table["losses"]) == set(rope) and table["seeds"] == [1, 2, 3]
    assert table["windows"] == (len(chapter["val_ids"]) - 1) // 1024
    for arm, (method, scale) in rope.items():
        model = chapter["TinyRoPELM"](chapter["CFG"])
        model.load_state_dict(torch.load(ASSETS / f"ctx05_{tags[arm]}{suffix}.pt", weights_only=True))
        by_len = chapter["losses_by_length"](model.eval(), chapter["make_rope"](method, scale))
        for n in (128, 1024):
            want = torch.tensor(table["losses"][arm]["1"][str(n)][:16], dtype=torch.float64)
            assert all(len(table["losses"][arm][str(s)][str(n)]) == table["windows"] for s in (1, 2, 3))
            assert torch.allclose(torch.from_numpy(by_len[n]), want, atol=1e-4), (arm, n)


def test_passkey_seed_table_matches_the_shipped_checkpoints(chapter):
    """Seed 1 of assets/ctx05_passkey_seeds.json is the shipped passkey fine-tune: recompute two cells per arm."""
    import json

    table = json.loads((ASSETS / "ctx05_passkey_seeds.json").read_text())
    rope = {"none": ("none", 1.0), "PI": ("PI", 8.0), "NTK-aware": ("NTK-aware", 8.0), "YaRN": ("YaRN", 8.0)}
    tags = {"none": "none", "PI": "pi", "NTK-aware": "ntk", "YaRN": "yarn"}
    assert set(table["scores"]) == set(rope) and table["seeds"] == [1, 2, 3]
    for arm, (method, scale) in rope.items():
        model = _model(chapter, f"ctx05_passkey_{tags[arm]}_ft")
        for length, depth in ((512, 0.5), (1024, 0.0)):
            log_prob, accuracy = chapter["passkey_scores"](model, chapter["make_rope"](method, scale), length, depth)
            stored = table["scores"][arm]["1"][f"{length} {depth:g}"]
            assert accuracy.tolist() == pytest.approx(stored["digit_accuracy"], abs=1e-4), (arm, length, depth)
            assert log_prob.tolist() == pytest.approx(stored["log_prob"], abs=1e-3), (arm, length, depth)


def test_temperature_table_reproduces_on_its_first_windows(chapter):
    """assets/ctx05_temperature.json: recompute s = 2 and 16 at the paper's temperature and at 1.3, first 4 windows."""
    import json

    table = json.loads((ASSETS / "ctx05_temperature.json").read_text())
    assert sorted(float(s) for s in table["losses"]) == [2.0, 4.0, 8.0, 16.0]
    model = _model(chapter, "ctx05_base")
    val = chapter["val_ids"]
    for s in ("2", "16"):
        row = table["losses"][s]
        length = row["length"]
        assert length == 128 * int(s) and row["windows"] == (len(val) - 1) // length
        inputs = val[: 4 * length].view(4, length)
        targets = val[1: 4 * length + 1].view(4, length)
        for key, factor in (("paper", None), ("1.30", 1.3)):
            rope = chapter["make_rope"]("YaRN", float(s), attention_factor=factor)
            with torch.no_grad():
                logits = model(inputs, rope)
            got = torch.nn.functional.cross_entropy(logits.transpose(1, 2), targets, reduction="none").double().mean(1)
            want = torch.tensor(row["loss"][key][:4], dtype=torch.float64)
            assert torch.allclose(got, want, atol=1e-4), (s, key)


def test_every_window_table_starts_with_the_notebook_windows(chapter):
    """The first 16 of assets/ctx05_windows.json's 78 windows are the notebook's: recompute three arms on them."""
    import json

    table = json.loads((ASSETS / "ctx05_windows.json").read_text())
    assert table["windows"] == (len(chapter["val_ids"]) - 1) // 1024
    for arm, checkpoint, method in (("none", "ctx05_base", "none"), ("YaRN + fine-tune", "ctx05_yarn_ft", "YaRN"),
                                    ("PI", "ctx05_base", "PI")):
        model = chapter["TinyRoPELM"](chapter["CFG"])
        model.load_state_dict(torch.load(ASSETS / f"{checkpoint}.pt", weights_only=True))
        got = chapter["token_losses"](model.eval(), chapter["make_rope"](method), 1024).mean(1)
        want = torch.tensor(table["losses"][arm]["1024"][:16], dtype=torch.float64)
        assert len(table["losses"][arm]["1024"]) == table["windows"]
        assert torch.allclose(torch.from_numpy(got), want, atol=1e-4), arm


def test_step_table_starts_from_the_base_model(chapter):
    """Step 0 of every run in assets/ctx05_steps.json is the base model under its arm's scaling: recompute it;
    the runs of an arm differ after it (their data orders differ)."""
    import json

    table = json.loads((ASSETS / "ctx05_steps.json").read_text())
    base = chapter["TinyRoPELM"](chapter["CFG"])
    base.load_state_dict(torch.load(ASSETS / "ctx05_base.pt", weights_only=True))
    for arm, by_seed in table["curves"].items():
        assert sorted(by_seed) == [str(seed) for seed in table["seeds"]] and len(by_seed) == 3, arm
        rope = chapter["make_rope"](arm, 1.0 if arm == "none" else 8.0)
        got = float(chapter["token_losses"](base.eval(), rope, 1024).mean())
        for curve in by_seed.values():
            assert sorted(int(k) for k in curve) == list(range(0, table["steps"] + 1, 50))
            assert abs(got - curve["0"]) < 1e-4, arm
        assert len({curve[str(table["steps"])] for curve in by_seed.values()}) == 3, arm
