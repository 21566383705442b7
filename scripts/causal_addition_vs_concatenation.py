"""Train the tiny causal character models of notebook 03, section 7, and store their losses by position.

Three ways to give a causal Transformer its positions, each trained with several seeds on windows of
TRAIN_LEN characters of assets/corpus.txt and evaluated on windows four times as long:
  learned     a learned absolute table (max_len rows; the rows past TRAIN_LEN never receive a gradient);
  sinusoidal  Vaswani et al.'s fixed table, added to the token embeddings;
  none        no positional encoding (NoPE): the causal mask is the only source of order.
Writes assets/causal03_lengths.json: per variant and seed, the mean cross-entropy (nats per character) at
every position 0..EVAL_LEN-1 over EVAL_WINDOWS held-out windows (the last tenth of the corpus).

Deterministic: one CPU thread, float32, fixed seeds (seed s draws the same batches for every variant).
About 8 minutes of CPU time for 3 variants x 3 seeds (--time N times N steps of one model).

usage: python scripts/causal_addition_vs_concatenation.py [--seeds 3] [--time N]
"""
from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "assets" / "causal03_lengths.json"
VARIANTS = ("learned", "sinusoidal", "none")
VOCAB, D_MODEL, HEADS, LAYERS = 128, 64, 4, 2
TRAIN_LEN, EVAL_LEN, EVAL_WINDOWS = 64, 256, 64
STEPS, BATCH, LR = 1000, 32, 3e-3


def sinusoids(num_positions: int, d_model: int, base: float = 10000.0) -> torch.Tensor:
    """Notebook 02's table (interleaved sin/cos), (num_positions, d_model)."""
    pos = torch.arange(num_positions, dtype=torch.float64)[:, None]
    angles = pos * base ** (-torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    return torch.stack([torch.sin(angles), torch.cos(angles)], dim=-1).flatten(1).float()


class Block(torch.nn.Module):
    """Pre-LayerNorm causal self-attention and MLP, each with a residual."""

    def __init__(self):
        super().__init__()
        self.ln1, self.ln2 = torch.nn.LayerNorm(D_MODEL), torch.nn.LayerNorm(D_MODEL)
        self.qkv = torch.nn.Linear(D_MODEL, 3 * D_MODEL)
        self.out = torch.nn.Linear(D_MODEL, D_MODEL)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(D_MODEL, 4 * D_MODEL), torch.nn.GELU(),
                                       torch.nn.Linear(4 * D_MODEL, D_MODEL))

    def forward(self, x):
        b, t, _ = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, HEADS, D_MODEL // HEADS).permute(2, 0, 3, 1, 4)
        a = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)  # (b, heads, t, d_head)
        x = x + self.out(a.transpose(1, 2).reshape(b, t, D_MODEL))
        return x + self.mlp(self.ln2(x))


class TinyCausalLM(torch.nn.Module):
    """Characters -> embeddings (x sqrt(d_model)) + positions -> LAYERS blocks -> next-character logits."""

    def __init__(self, positions: str):
        super().__init__()
        self.positions = positions
        self.tok = torch.nn.Embedding(VOCAB, D_MODEL)
        torch.nn.init.normal_(self.tok.weight, std=D_MODEL ** -0.5)  # x sqrt(d_model): unit variance
        if positions == "learned":  # the same variance per coordinate as the sinusoids' 1/2
            self.pos = torch.nn.Parameter(torch.randn(EVAL_LEN, D_MODEL) * math.sqrt(0.5))
        elif positions == "sinusoidal":
            self.register_buffer("pos", sinusoids(EVAL_LEN, D_MODEL))
        self.blocks = torch.nn.ModuleList(Block() for _ in range(LAYERS))
        self.ln = torch.nn.LayerNorm(D_MODEL)
        self.head = torch.nn.Linear(D_MODEL, VOCAB)

    def forward(self, ids):
        x = self.tok(ids) * math.sqrt(D_MODEL)
        if self.positions != "none":
            x = x + self.pos[: ids.shape[1]]
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln(x))


def corpus() -> tuple[torch.Tensor, torch.Tensor]:
    """(training text, held-out text) as int64 character codes: the first nine tenths and the last tenth."""
    data = torch.tensor(list((ROOT / "assets" / "corpus.txt").read_bytes()), dtype=torch.int64).clamp(max=VOCAB - 1)
    cut = len(data) * 9 // 10
    return data[:cut], data[cut:]


def train(positions: str, seed: int, train_text: torch.Tensor, steps: int = STEPS) -> TinyCausalLM:
    torch.manual_seed(seed)
    model = TinyCausalLM(positions)
    optimizer = torch.optim.Adam(model.parameters(), lr=LR)
    batches = torch.Generator().manual_seed(1000 + seed)
    for _ in range(steps):
        starts = torch.randint(0, len(train_text) - TRAIN_LEN - 1, (BATCH,), generator=batches)
        window = torch.stack([train_text[s: s + TRAIN_LEN + 1] for s in starts.tolist()])
        logits = model(window[:, :-1])
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, VOCAB), window[:, 1:].reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return model


@torch.no_grad()
def loss_by_position(model: TinyCausalLM, held_out: torch.Tensor) -> list[float]:
    """Mean cross-entropy at each position 0..EVAL_LEN-1 over EVAL_WINDOWS evenly spaced held-out windows."""
    starts = torch.linspace(0, len(held_out) - EVAL_LEN - 2, EVAL_WINDOWS).long().tolist()
    window = torch.stack([held_out[s: s + EVAL_LEN + 1] for s in starts])
    logits = model(window[:, :-1])
    loss = torch.nn.functional.cross_entropy(logits.transpose(1, 2), window[:, 1:], reduction="none")
    return [round(v, 4) for v in loss.mean(0).tolist()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3, help="seeds per variant (default 3)")
    parser.add_argument("--time", type=int, default=0, metavar="N",
                        help="train one model for N steps, print its CPU seconds, write nothing")
    args = parser.parse_args()
    torch.set_num_threads(1)
    train_text, held_out = corpus()
    if args.time:
        start = time.process_time()
        train("learned", 0, train_text, steps=args.time)
        print(f"{args.time} steps: {time.process_time() - start:.1f} s of CPU")
        return
    curves = {}
    for positions in VARIANTS:
        curves[positions] = []
        for seed in range(args.seeds):
            start = time.process_time()
            curves[positions].append(loss_by_position(train(positions, seed, train_text), held_out))
            tail = sum(curves[positions][-1][TRAIN_LEN:]) / (EVAL_LEN - TRAIN_LEN)
            print(f"{positions:10} seed {seed}: loss within {TRAIN_LEN} {sum(curves[positions][-1][:TRAIN_LEN]) / TRAIN_LEN:.3f},"
                  f" beyond {tail:.3f} ({time.process_time() - start:.0f} s of CPU)", flush=True)
    OUT.write_text(json.dumps({"train_len": TRAIN_LEN, "eval_len": EVAL_LEN, "eval_windows": EVAL_WINDOWS,
                               "steps": STEPS, "batch": BATCH, "d_model": D_MODEL, "layers": LAYERS,
                               "heads": HEADS, "seeds": list(range(args.seeds)), "loss_by_position": curves}))
    print(f"wrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
