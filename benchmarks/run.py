"""Run every benchmark in one process and write benchmarks/results.md and results.json.

Usage: ``python benchmarks/run.py [--budget SECONDS] [--install-notes FILE] [--out DIR]``.
``python3 -m nox -s bench`` installs regtree and the peers, then runs this.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
import time
from pathlib import Path

import _config_bench
import _import_bench
import _registry_bench
import _scale_bench
import torch
from _libs import load_libraries, versions
from _optim_bench import OPTIMIZER, PARAMWISE, OptimBench
from _report import Row, markdown, write_json
from _timing import UNROLL

HERE = Path(__file__).resolve().parent
SECTIONS = {
    "registry": "Registry",
    "import": "Import time (fresh interpreter)",
    "constructor": "Optimizer constructor (paramwise_cfg)",
    "groups": "Parameter groups built",
    "bypass": "bypass_duplicate on shared layers",
    "step": "step() on CPU",
    "cuda": "step() on CUDA",
    "scale": "At scale: explain on the meta device, RoutedOptimizer.step() (CPU)",
    "config": "Config files (CPU time of one load; mmdet: one pass over all its configs)",
}
METHOD = f"""\
How: every benchmark's cases, its floor included, run interleaved in one process, in a shuffled
order each round; values are medians of CPU time (`time.process_time`; for imports the child's
user+system time), which the other tenants of a shared machine do not stretch the way they
stretch wall time; CUDA rows are wall time closed by a synchronize. A **ratio** is the median
over rounds of value/floor, both samples taken in the same round, so drift cancels (it can differ
from the ratio of the two medians shown). One-line operations run under `timeit` unrolled
{UNROLL}x with their objects as locals; larger regions run with the garbage collector paused,
set-up untimed. Optimizer benchmarks run with one torch thread.
Floors: `dict.get` on a dict of the same size (get, miss), a direct call (build), a dict insert
(register), `python -c pass` (import), `torch.optim.SGD(model.parameters())` with the same options
(constructor, bypass), the same optimizer with one group holding everything (step).
Optimizer: `{OPTIMIZER}` with paramwise_cfg `{PARAMWISE}` for every library; models of plain
torch layers (conv+bias, BatchNorm, depthwise conv, LayerNorm, Linear per 10-tensor block).
bypass_duplicate models: N distinct tensors, all but the head's 10 reached twice through a second
container holding the same blocks. Growth exponent: least-squares slope of log(time) on log(N);
"linear" means at most 1.2. Rows named *reference* are not a library: a one-line Python method
around a dict (and a minimal build function), the least any pure-Python registry can cost here;
for the five-rules constructor, that paramwise_cfg written out by hand as one loop
(`_rules_reference.py`, checked to give every parameter regtree's settings).
The miss rows repeat one key (a lookup cache may absorb it); "distinct keys" rows never repeat.
mmengine's per-parameter INFO logging is silenced at the logger (its calls still run) and its
per-lookup `import <scope>.registry` finds the module already imported, as it would for a real
scope."""


def _machine() -> str:
    model = platform.processor() or "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    load = " / ".join(f"{x:.2f}" for x in os.getloadavg())
    return (
        f"{platform.system()} {platform.machine()}, {model}, {cores} cores usable,"
        f" load average {load} at start; optimizer benchmarks with 1 torch thread"
    )


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--budget",
        type=float,
        default=300.0,
        help="seconds for all benchmarks together (default 300)",
    )
    parser.add_argument(
        "--install-notes",
        type=Path,
        help="JSON list of notes from the installer (peers that did not install)",
    )
    parser.add_argument("--out", type=Path, default=HERE, help="folder for results.md/.json")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Run everything; print the Markdown and write both result files."""
    args = _parse(argv)
    started = time.perf_counter()
    date = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    machine = _machine()
    notes: list[str] = []
    if args.install_notes and args.install_notes.exists():
        notes += json.loads(args.install_notes.read_text())
    libraries, load_notes = load_libraries()
    notes += load_notes
    budget = args.budget
    rows: list[Row] = []

    print("registry ...", file=sys.stderr, flush=True)
    registry_rows, samples = _registry_bench.run(libraries, budget_s=0.12 * budget)
    rows += registry_rows
    print("import ...", file=sys.stderr, flush=True)
    import_rows, import_samples, heaviest = _import_bench.run(libraries)
    rows += import_rows
    samples |= {f"import.{key}": value for key, value in import_samples.items()}
    print("config files ...", file=sys.stderr, flush=True)
    config_rows, config_samples = _config_bench.run_composed(budget_s=0.05 * budget)
    rows += config_rows
    samples |= {f"config.{key}": value for key, value in config_samples.items()}
    mmdet_rows, mmdet_notes = _config_bench.run_mmdet()
    rows += mmdet_rows
    notes += mmdet_notes
    # One intra-op thread: on a shared 2-core machine a second OpenMP thread waits on the other
    # tenants' load, which swamps the step() differences being measured.
    torch.set_num_threads(1)

    left = budget - (time.perf_counter() - started)
    optim = OptimBench(libraries, budget_s=max(60.0, left))
    if optim.libraries:
        print("optimizer constructor ...", file=sys.stderr, flush=True)
        optim.constructor()
        print("optimizer constructor with rules and layer decay ...", file=sys.stderr, flush=True)
        optim.rules_constructor()
        print("bypass_duplicate ...", file=sys.stderr, flush=True)
        optim.bypass()
        print("step ...", file=sys.stderr, flush=True)
        optim.step_cpu()
        if torch.cuda.is_available():
            print("step on CUDA ...", file=sys.stderr, flush=True)
            optim.step_cuda()
        else:
            notes.append(
                "CUDA: torch.cuda.is_available() is False here; the CUDA step table"
                " (fused AdamW, ResNet-50-sized model) was skipped."
            )
    else:
        notes.append("No optimizer constructor could be loaded; optimizer benchmarks skipped.")
    rows += optim.rows
    notes += optim.notes
    print("scale: 7B explain on meta, RoutedOptimizer.step ...", file=sys.stderr, flush=True)
    scale_rows, scale_samples, scale_notes = _scale_bench.run(budget_s=0.05 * budget)
    rows += scale_rows
    notes += scale_notes
    samples |= scale_samples
    notes += [note for lib in libraries.values() for note in lib.notes]
    samples |= optim.samples
    if heaviest:
        top = ", ".join(f"{name} {seconds * 1e3:.1f} ms" for name, seconds in heaviest["regtree"])
        notes.append(
            "Modules `import regtree` loads beyond a bare interpreter, heaviest first"
            f" (-X importtime, cumulative, wall clock, one run): {top}"
        )

    meta = {
        "date": date,
        "machine": machine,
        "versions": ", ".join(f"{k} {v or 'not installed'}" for k, v in versions().items()),
        "command": "python3 -m nox -s bench"
        if args.install_notes
        else " ".join(["python benchmarks/run.py", *(argv if argv is not None else sys.argv[1:])]),
        "benchmark wall time": f"{time.perf_counter() - started:.0f} s",
    }
    notes = list(dict.fromkeys(notes))  # one library failing twice is one note
    page = markdown(rows, SECTIONS, meta, notes, METHOD)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.md").write_text(page)
    write_json(
        args.out / "results.json",
        rows,
        meta,
        notes,
        {key: found.by_round for key, found in samples.items()},
    )
    print(page)
    return 0


if __name__ == "__main__":
    sys.exit(main())
