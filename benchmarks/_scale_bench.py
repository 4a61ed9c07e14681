"""At scale (SPEC 3.6): explain of a 7B transformer on the meta device; RoutedOptimizer.step().

The explain row runs in a fresh interpreter (``python _scale_bench.py --meta-explain``), so its
resident memory is that of a process that did only this: import, build the model on the meta
device, explain it, render the table.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from _report import Row, Target
from _timing import Case, Samples, paired_ratio, region_case, run_interleaved
from torch import nn

# A LLaMA-7B-shaped decoder: 32 layers, 4096 wide, 11008 MLP, 32000 tokens, untied head.
LAYERS = 32
DIM = 4096
HIDDEN = 11008
VOCAB = 32000
EXPLAIN_TARGET_S = 10.0
EXPLAIN_TARGET_MB = 1024.0
ROUTED_TARGET = 1.05

OPTIMIZER_CFG: dict[str, Any] = {
    "type": "RoutedOptimizer",
    "optimizers": {
        "muon": {"type": "Muon", "lr": 0.02, "weight_decay": 0.01},
        "adamw": {"type": "AdamW", "lr": 3e-4, "weight_decay": 0.1, "betas": [0.9, 0.95]},
    },
    "default": "adamw",
    "paramwise_cfg": {
        "norm_decay_mult": 0.0,
        "rules": [
            {"match": "layers.*", "ndim": 2, "optimizer": "muon"},
            {"module": "embedding", "decay_mult": 0.0},
        ],
    },
}


class DecoderLayer(nn.Module):
    """Attention (q, k, v, o) and a SwiGLU MLP (gate, up, down), each after an RMSNorm."""

    def __init__(self, dim: int, hidden: int) -> None:
        super().__init__()
        self.attention_norm = nn.RMSNorm(dim)
        self.wq = nn.Linear(dim, dim, bias=False)
        self.wk = nn.Linear(dim, dim, bias=False)
        self.wv = nn.Linear(dim, dim, bias=False)
        self.wo = nn.Linear(dim, dim, bias=False)
        self.ffn_norm = nn.RMSNorm(dim)
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)


class Decoder(nn.Module):
    """Token embeddings, the layers, a final RMSNorm and an output projection."""

    def __init__(
        self, layers: int = LAYERS, dim: int = DIM, hidden: int = HIDDEN, vocab: int = VOCAB
    ) -> None:
        super().__init__()
        self.tok_embeddings = nn.Embedding(vocab, dim)
        self.layers = nn.ModuleList(DecoderLayer(dim, hidden) for _ in range(layers))
        self.norm = nn.RMSNorm(dim)
        self.output = nn.Linear(dim, vocab, bias=False)


def meta_explain() -> dict[str, float]:
    """Build the decoder from a config on the meta device, explain it, render the table."""
    from regtree import Registry
    from regtree_optim._registries import constructor_from_config

    wall, cpu = time.perf_counter(), time.process_time()
    models: Registry[Any] = Registry("model", scope="scale_bench")
    models.register_module(module=Decoder)
    with torch.device("meta"):
        model = models.build({"type": "Decoder"})
    _, constructor = constructor_from_config(OPTIMIZER_CFG)
    explanation = constructor.explain(model)  # type: ignore[attr-defined]
    table = str(explanation)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    # ru_maxrss is in KiB on Linux.
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {
        "wall_s": wall,
        "cpu_s": cpu,
        "rss_mb": rss_mb,
        "parameters": float(sum(p.numel() for p in model.parameters())),
        "rows": float(len(explanation)),
        "groups": float(len({row.group for row in explanation})),
        "table_lines": float(table.count("\n") + 1),
    }


def _meta_explain_rows() -> tuple[list[Row], list[str]]:
    table = "scale"
    child = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--meta-explain"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    label = f"explain, {LAYERS}-layer {DIM}-wide decoder on meta"
    if child.returncode != 0:
        reason = child.stderr.strip().splitlines()[-1:] or ["no output"]
        return [Row(table, label, "regtree", None, note=f"not measured: {reason[0]}")], []
    found = json.loads(child.stdout.strip().splitlines()[-1])
    billions = found["parameters"] / 1e9
    shape = f"{billions:.2f}B parameters, {found['rows']:.0f} rows, {found['groups']:.0f} groups"
    rows = [
        Row(
            table,
            f"{label} (CPU time: build, explain, render)",
            "regtree",
            found["cpu_s"],
            target=Target(EXPLAIN_TARGET_S, on="value"),
            # CPU time, as every row here: a shared machine's other tenants stretch wall time.
            note=f"{shape}; wall time {found['wall_s']:.2f} s at load average {_load()}",
        ),
        Row(
            table,
            f"{label} (peak resident memory, torch import included)",
            "regtree",
            found["rss_mb"],
            target=Target(EXPLAIN_TARGET_MB, on="value"),
            unit=" MB",
        ),
    ]
    return rows, []


def _load() -> str:
    return f"{os.getloadavg()[0]:.1f}" if hasattr(os, "getloadavg") else "unknown"


def _routed_model() -> nn.Module:
    torch.manual_seed(0)
    # Small enough for a shared CPU, with Muon's 2-D weights and AdamW's 1-D rest.
    return Decoder(layers=4, dim=128, hidden=344, vocab=512)


def _step_case(key: str, step: Callable[[], None], repeats: int) -> Case:
    def prepare() -> Callable[[], object]:
        def timed() -> None:
            for _ in range(repeats):
                step()

        return timed

    return region_case(key, prepare, ops=repeats)


def _routed_step_rows(budget_s: float) -> tuple[list[Row], dict[str, Samples]]:
    from regtree_optim import build_optimizer

    model = _routed_model()
    for param in model.parameters():
        param.grad = torch.randn_like(param) * 1e-3
    routed = build_optimizer(model, OPTIMIZER_CFG)
    subs = list(routed.optimizers.values())  # type: ignore[attr-defined]

    def by_hand() -> None:
        for sub in subs:
            sub.step()

    routed.step()  # states exist from here on
    start = time.process_time()
    routed.step()
    repeats = max(1, min(50, round(0.04 / max(time.process_time() - start, 1e-6))))
    cases = [
        _step_case("regtree.routed.step", routed.step, repeats),
        _step_case("floor.routed.step", by_hand, repeats),
    ]
    samples = run_interleaved(cases, rounds=30, budget_s=budget_s)
    value, floor = samples["regtree.routed.step"], samples["floor.routed.step"]
    groups = ", ".join(
        f"{name} {len(sub.param_groups)} groups / "
        f"{sum(len(g['params']) for g in sub.param_groups)} tensors"
        for name, sub in routed.optimizers.items()  # type: ignore[attr-defined]
    )
    row = Row(
        "scale",
        "RoutedOptimizer.step(), Muon + AdamW, 4-layer 128-wide decoder (CPU)",
        "regtree",
        value.median if value.ok else None,
        "the two optimizers stepped by hand",
        floor.median if floor.ok else None,
        paired_ratio(value, floor) if value.ok and floor.ok else None,
        target=Target(ROUTED_TARGET),
        note=groups,
        samples=value.values,
    )
    return [row], samples


def run(budget_s: float) -> tuple[list[Row], dict[str, Samples], list[str]]:
    """Both rows of the scale table, and their samples."""
    rows, notes = _meta_explain_rows()
    step_rows, samples = _routed_step_rows(budget_s)
    return rows + step_rows, samples, notes


if __name__ == "__main__" and sys.argv[1:] == ["--meta-explain"]:
    print(json.dumps(meta_explain()))
