"""Compare regtree's reading of mmdetection's configs with mmcv's ``Config.fromfile`` (SPEC 5.3).

Usage: ``python tests/mmdet_configs_check.py [--json FILE]``, where mmcv 1.7.2 and an mmdet 2.x
wheel (``pip install --no-deps mmdet==2.28.2``: the wheel ships ``mmdet/.mim/configs``) are
installed; ``python3 -m nox -s compat`` does that and runs this. Every shipped config is loaded
by mmcv (which runs it) and by regtree (which reads it without running it) and the results are
compared, tuples read as lists and ``_delete_`` removed (SPEC 5.3). Nothing of the configs is
copied into this repository.

Exit status 1 unless: no file differs, every file regtree does not load is refused for a
construct SPEC 5.3 excludes (never another error), and at least 99% of the files mmcv loads are
equal.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import re
import sys
import time
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

GOAL = 0.99
# A refusal of SPEC 5.3 reads "FILE, line N: CONSTRUCT is not allowed: Python configs are read
# without being run, ..."; the construct is what is counted.
_REFUSAL = re.compile(r", line \d+: (?P<construct>.+?) is not allowed: Python configs are read")


def config_root() -> Path:
    """The configs the installed mmdet wheel ships."""
    spec = importlib.util.find_spec("mmdet")
    if spec is None or spec.origin is None:
        raise SystemExit("mmdet is not installed: pip install --no-deps mmdet==2.28.2")
    root = Path(spec.origin).parent / ".mim" / "configs"
    if not root.is_dir():
        raise SystemExit(f"the mmdet wheel ships no configs at {root}")
    return root


def plain(value: Any) -> Any:
    """Return mmcv's result as plain data: tuples as lists, ``_delete_`` removed (SPEC 5.3)."""
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items() if key != "_delete_"}
    if isinstance(value, list | tuple):
        return [plain(item) for item in value]
    return value


def first_difference(ours: Any, theirs: Any, path: str = "") -> str:
    """The first path where two configs differ, with both values."""
    if isinstance(ours, dict) and isinstance(theirs, dict):
        for key in list(ours) + [k for k in theirs if k not in ours]:
            if key not in ours or key not in theirs:
                return f"{path}.{key}: only in {'ours' if key in ours else 'mmcv'}"
            if ours[key] != theirs[key]:
                return first_difference(ours[key], theirs[key], f"{path}.{key}")
    if isinstance(ours, list) and isinstance(theirs, list) and len(ours) == len(theirs):
        for index, (mine, other) in enumerate(zip(ours, theirs, strict=True)):
            if mine != other:
                return first_difference(mine, other, f"{path}.{index}")
    return f"{path or '<config>'}: ours {ours!r:.80}, mmcv {theirs!r:.80}"


def main(argv: list[str] | None = None) -> int:
    """Compare every shipped config; print the counts; return the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="also write the report here")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    from regtree.config import ConfigError, load_config

    mmcv_config = importlib.import_module("mmcv").Config
    root = config_root()
    files = sorted(root.rglob("*.py"))
    counts: Counter[str] = Counter()
    refused: Counter[str] = Counter()
    details: dict[str, list[str]] = {"different": [], "other errors": [], "mmcv failures": []}
    seconds = {"regtree": 0.0, "mmcv": 0.0}
    for path in files:
        name = str(path.relative_to(root))
        started = time.process_time()
        try:
            theirs = plain(mmcv_config.fromfile(str(path), import_custom_modules=False).to_dict())
        except Exception as exc:  # mmcv raises whatever the config's code raises
            theirs = None
            counts["mmcv failures"] += 1
            details["mmcv failures"].append(f"{name}: {type(exc).__name__}: {exc}"[:200])
        seconds["mmcv"] += time.process_time() - started
        started = time.process_time()
        try:
            ours = load_config(path)
        except ConfigError as exc:
            ours = None
            found = _REFUSAL.search(str(exc))
            if found is not None:
                construct = re.sub(r"'[^']*'", "'...'", found.group("construct"), count=0)
                refused[construct if "call of" not in construct else found.group("construct")] += 1
                counts["refused"] += 1
            else:
                counts["other errors"] += 1
                details["other errors"].append(str(exc)[:300])
        seconds["regtree"] += time.process_time() - started
        if ours is None or theirs is None:
            continue
        if ours == theirs:
            counts["equal"] += 1
        else:
            counts["different"] += 1
            details["different"].append(f"{name}: {first_difference(ours, theirs)}")
    loaded_by_mmcv = len(files) - counts["mmcv failures"]
    share = counts["equal"] / loaded_by_mmcv if loaded_by_mmcv else 0.0
    report = {
        "files": len(files),
        "equal": counts["equal"],
        "refused": counts["refused"],
        "refused by construct": dict(refused.most_common()),
        "different": counts["different"],
        "other errors": counts["other errors"],
        "mmcv failures": counts["mmcv failures"],
        "equal share of the files mmcv loads": round(share, 4),
        "cpu seconds": {key: round(value, 2) for key, value in seconds.items()},
        "details": details,
    }
    text = json.dumps(report, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text + "\n")
    ok = counts["different"] == 0 and counts["other errors"] == 0 and share >= GOAL
    print(
        f"{len(files)} files: {counts['equal']} equal, {counts['refused']} refused, "
        f"{counts['different']} different, {counts['other errors']} other errors, "
        f"{counts['mmcv failures']} mmcv failures; {share:.1%} of mmcv's equal "
        f"(goal {GOAL:.0%}): {'ok' if ok else 'FAILED'}",
        file=sys.stderr,
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
