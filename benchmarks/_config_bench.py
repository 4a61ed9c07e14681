"""Loading composed configs: regtree's loader beside mmengine's and mmcv's ``Config.fromfile``.

Two benchmarks. ``run_composed``: one config with three levels of ``_base_`` (a Faster R-CNN
style model, a dataset, a schedule, then the experiment) and 20 overrides, written as YAML and
TOML for regtree and as Python configs for mmengine (``Config.fromfile`` then
``merge_from_dict``, the path of ``--cfg-options``). ``run_mmdet``: every config shipped in the
mmdet 2.x wheel, loaded one after the other by regtree (read without running) and by mmcv 1.x
(which runs each); only where mmdet and mmcv are installed.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _report import Row, Target
from _timing import Samples, paired_ratio, region_case, run_interleaved

TABLE = "config"
COMPOSED = "3 levels of _base_ + 20 overrides"
MMDET = "all mmdet 2.28 configs"

_MODEL: dict[str, Any] = {
    "model": {
        "type": "FasterRCNN",
        "backbone": {
            "type": "ResNet",
            "depth": 50,
            "num_stages": 4,
            "out_indices": [0, 1, 2, 3],
            "frozen_stages": 1,
            "norm_cfg": {"type": "BN", "requires_grad": True},
            "norm_eval": True,
            "style": "pytorch",
            "init_cfg": {"type": "Pretrained", "checkpoint": "torchvision://resnet50"},
        },
        "neck": {
            "type": "FPN",
            "in_channels": [256, 512, 1024, 2048],
            "out_channels": 256,
            "num_outs": 5,
        },
        "rpn_head": {
            "type": "RPNHead",
            "in_channels": 256,
            "feat_channels": 256,
            "anchor_generator": {
                "type": "AnchorGenerator",
                "scales": [8],
                "ratios": [0.5, 1.0, 2.0],
                "strides": [4, 8, 16, 32, 64],
            },
            "bbox_coder": {
                "type": "DeltaXYWHBBoxCoder",
                "target_means": [0.0, 0.0, 0.0, 0.0],
                "target_stds": [1.0, 1.0, 1.0, 1.0],
            },
            "loss_cls": {"type": "CrossEntropyLoss", "use_sigmoid": True, "loss_weight": 1.0},
            "loss_bbox": {"type": "L1Loss", "loss_weight": 1.0},
        },
        "roi_head": {
            "type": "StandardRoIHead",
            "bbox_roi_extractor": {
                "type": "SingleRoIExtractor",
                "roi_layer": {"type": "RoIAlign", "output_size": 7, "sampling_ratio": 0},
                "out_channels": 256,
                "featmap_strides": [4, 8, 16, 32],
            },
            "bbox_head": {
                "type": "Shared2FCBBoxHead",
                "in_channels": 256,
                "fc_out_channels": 1024,
                "roi_feat_size": 7,
                "num_classes": 80,
                "reg_class_agnostic": False,
                "loss_cls": {"type": "CrossEntropyLoss", "use_sigmoid": False, "loss_weight": 1.0},
                "loss_bbox": {"type": "L1Loss", "loss_weight": 1.0},
            },
        },
        "train_cfg": {
            "rpn": {
                "assigner": {"type": "MaxIoUAssigner", "pos_iou_thr": 0.7, "neg_iou_thr": 0.3},
                "sampler": {"type": "RandomSampler", "num": 256, "pos_fraction": 0.5},
                "allowed_border": -1,
                "pos_weight": -1,
                "debug": False,
            },
            "rpn_proposal": {"nms_pre": 2000, "max_per_img": 1000, "min_bbox_size": 0},
        },
        "test_cfg": {
            "rpn": {"nms_pre": 1000, "max_per_img": 1000, "min_bbox_size": 0},
            "rcnn": {"score_thr": 0.05, "max_per_img": 100},
        },
    }
}
_PIPELINE = [
    {"type": "LoadImageFromFile"},
    {"type": "LoadAnnotations", "with_bbox": True},
    {"type": "Resize", "img_scale": [1333, 800], "keep_ratio": True},
    {"type": "RandomFlip", "flip_ratio": 0.5},
    {"type": "Normalize", "mean": [123.675, 116.28, 103.53], "std": [58.395, 57.12, 57.375]},
    {"type": "Pad", "size_divisor": 32},
    {"type": "DefaultFormatBundle"},
    {"type": "Collect", "keys": ["img", "gt_bboxes", "gt_labels"]},
]
_DATA: dict[str, Any] = {
    "dataset_type": "CocoDataset",
    "data_root": "data/coco/",
    "data": {
        "samples_per_gpu": 2,
        "workers_per_gpu": 2,
        "train": {
            "type": "CocoDataset",
            "ann_file": "data/coco/annotations/instances_train2017.json",
            "img_prefix": "data/coco/train2017/",
            "pipeline": _PIPELINE,
        },
        "val": {
            "type": "CocoDataset",
            "ann_file": "data/coco/annotations/instances_val2017.json",
            "img_prefix": "data/coco/val2017/",
            "pipeline": _PIPELINE[:1] + _PIPELINE[4:],
        },
    },
    "evaluation": {"interval": 1, "metric": "bbox"},
}
_SCHEDULE: dict[str, Any] = {
    "optimizer": {"type": "SGD", "lr": 0.02, "momentum": 0.9, "weight_decay": 0.0001},
    "optimizer_config": {"grad_clip": None},
    "lr_config": {
        "policy": "step",
        "warmup": "linear",
        "warmup_iters": 500,
        "warmup_ratio": 0.001,
        "step": [8, 11],
    },
    "runner": {"type": "EpochBasedRunner", "max_epochs": 12},
    "checkpoint_config": {"interval": 1},
    "log_config": {"interval": 50, "hooks": [{"type": "TextLoggerHook"}]},
    "dist_params": {"backend": "nccl"},
    "log_level": "INFO",
    "load_from": None,
    "workflow": [["train", 1]],
}
# Level 0 holds the model; each level above inherits the one below and adds or changes a part.
_LEVELS: list[dict[str, Any]] = [
    _MODEL,
    {**_DATA, "model": {"backbone": {"frozen_stages": 0}}},
    {**_SCHEDULE, "data": {"samples_per_gpu": 4}},
    {"model": {"roi_head": {"bbox_head": {"num_classes": 20}}}, "optimizer": {"lr": 0.01}},
]
# (dotted path, value): 20 overrides of existing values, as a command line would give them.
_OVERRIDES: list[tuple[str, Any]] = [
    ("model.backbone.depth", 101),
    ("model.backbone.frozen_stages", 2),
    ("model.backbone.norm_eval", False),
    ("model.backbone.init_cfg.checkpoint", "torchvision://resnet101"),
    ("model.neck.out_channels", 128),
    ("model.rpn_head.in_channels", 128),
    ("model.rpn_head.feat_channels", 128),
    ("model.rpn_head.anchor_generator.scales", [4, 8]),
    ("model.roi_head.bbox_roi_extractor.out_channels", 128),
    ("model.roi_head.bbox_head.in_channels", 128),
    ("model.roi_head.bbox_head.num_classes", 3),
    ("model.test_cfg.rcnn.score_thr", 0.1),
    ("data.samples_per_gpu", 8),
    ("data.workers_per_gpu", 4),
    ("data.train.ann_file", "data/voc/train.json"),
    ("optimizer.lr", 0.0001),
    ("optimizer.weight_decay", 0.05),
    ("lr_config.warmup_iters", 1000),
    ("runner.max_epochs", 24),
    ("log_config.interval", 10),
]


def write_composed(folder: Path) -> dict[str, Path]:
    """Write the four levels as YAML, TOML and Python configs; return each format's top file."""
    from regtree.config import dump_config

    tops: dict[str, Path] = {}
    for suffix in ("yaml", "toml", "py"):
        for level, content in enumerate(_LEVELS):
            path = folder / f"level{level}.{suffix}"
            data = dict(content)
            if level:
                data = {"_base_": f"level{level - 1}.{suffix}", **data}
            if suffix == "py":
                base = f"_base_ = ['./level{level - 1}.py']\n" if level else ""
                body = "".join(f"{key} = {value!r}\n" for key, value in content.items())
                path.write_text(base + body)
            else:
                if suffix == "toml":  # TOML has no null: the schedule's Nones stay out of it
                    data = _without_none(data)
                path.write_text(dump_config(data, suffix))
            tops[suffix] = path
    return tops


def _without_none(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_none(v) for k, v in value.items() if v is not None}
    return value


def _override_texts() -> list[str]:
    import json

    # JSON is a YAML flow value, so an override text is the value written as JSON.
    return [f"{path}={json.dumps(value)}" for path, value in _OVERRIDES]


def _quiet_mmengine() -> None:
    logging.getLogger("mmengine").setLevel(logging.ERROR)
    warnings.filterwarnings("ignore", module="mmengine")


def run_composed(budget_s: float) -> tuple[list[Row], dict[str, Samples]]:
    """Time one load of the composed config with its overrides, per library and format."""
    from regtree.config import load_config

    folder = Path(tempfile.mkdtemp(prefix="regtree-config-bench-"))
    tops = write_composed(folder)
    texts = _override_texts()
    cases = []

    def ours(path: Path) -> Callable[[], Callable[[], object]]:
        # regtree keeps a composed file for the process while its content is unchanged; each
        # sample starts without it, as the one load of a training run does.
        composed = importlib.import_module("regtree.config._inherit")._COMPOSED

        def prepare() -> Callable[[], object]:
            composed.clear()
            return lambda: load_config(path, texts)

        return prepare

    cases.append(region_case("regtree yaml", ours(tops["yaml"])))
    cases.append(region_case("regtree toml", ours(tops["toml"])))
    peers: dict[str, str] = {}
    if importlib.util.find_spec("mmengine") is not None:
        _quiet_mmengine()
        Config = importlib.import_module("mmengine.config").Config
        options = dict(_OVERRIDES)

        def mmengine(**kwargs: Any) -> Callable[[], Callable[[], object]]:
            def load() -> object:
                cfg = Config.fromfile(str(tops["py"]), **kwargs)
                cfg.merge_from_dict(options)
                return cfg

            return lambda: load

        cases.append(region_case("mmengine", mmengine(), max_samples=200))
        cases.append(
            region_case("mmengine unformatted", mmengine(format_python_code=False), max_samples=200)
        )
        peers["mmengine"] = "mmengine Config.fromfile"
        peers["mmengine unformatted"] = "mmengine, format_python_code=False"
    samples = run_interleaved(cases, rounds=200, budget_s=budget_s)
    rows = _rows(COMPOSED, samples, peers)
    _check_same_result(tops, texts, rows)
    return rows, samples


def _check_same_result(tops: dict[str, Path], texts: list[str], rows: list[Row]) -> None:
    """The benchmark compares like with like only if every library loads the same config."""
    from regtree.config import load_config

    ours = load_config(tops["yaml"], texts)
    if importlib.util.find_spec("mmengine") is not None:
        Config = importlib.import_module("mmengine.config").Config
        cfg = Config.fromfile(str(tops["py"]))
        cfg.merge_from_dict(dict(_OVERRIDES))
        theirs = _lists(cfg.to_dict())
        if theirs != ours:
            for row in rows:
                row.note = (row.note + "; " if row.note else "") + "results differ from mmengine's"


def _lists(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _lists(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_lists(v) for v in value]
    return value


def _rows(benchmark: str, samples: dict[str, Samples], peers: dict[str, str]) -> list[Row]:
    rows: list[Row] = []
    reference = next((key for key in peers if samples[key].ok), None)
    for key, found in samples.items():
        if not found.ok:
            rows.append(Row(TABLE, benchmark, key, None, note=f"failed: {found.error}"))
            continue
        if key in peers:
            rows.append(Row(TABLE, benchmark, peers[key], found.median, samples=found.values))
            continue
        row = Row(TABLE, benchmark, key, found.median, samples=found.values)
        if reference is not None:
            row.floor_label = peers[reference]
            row.floor = samples[reference].median
            row.ratio = paired_ratio(found, samples[reference])
            row.target = Target(0.1)
        rows.append(row)
    return rows


def mmdet_configs() -> list[Path]:
    """Every config the installed mmdet wheel ships (``mmdet/.mim/configs``), or none."""
    spec = importlib.util.find_spec("mmdet")
    if spec is None or spec.origin is None:
        return []
    root = Path(spec.origin).parent / ".mim" / "configs"
    return sorted(path for path in root.rglob("*.py") if "_base_" not in path.parts) + sorted(
        path for path in root.rglob("*.py") if "_base_" in path.parts
    )


def run_mmdet() -> tuple[list[Row], list[str]]:
    """Time loading every shipped mmdet config once, ours then mmcv's, each whole pass."""
    configs = mmdet_configs()
    if not configs:
        return [], ["mmdet is not installed: the mmdet-configs row is skipped."]
    from regtree.config import ConfigError, load_config

    def ours() -> int:
        loaded = 0
        for path in configs:
            try:
                load_config(path)
                loaded += 1
            except ConfigError:
                pass
        return loaded

    notes = []
    started = time.process_time()
    loaded = ours()
    ours_s = time.process_time() - started
    rows = [
        Row(
            TABLE,
            MMDET,
            "regtree",
            ours_s,
            note=f"{loaded} of {len(configs)} files loaded (the rest refused: need running); "
            "a base shared by several configs is composed once per process",
        )
    ]
    if importlib.util.find_spec("mmcv") is None:
        notes.append("mmcv is not installed: the mmdet configs were not loaded with mmcv.")
        return rows, notes
    Config = importlib.import_module("mmcv").Config
    started = time.process_time()
    failures = 0
    for path in configs:
        try:
            # Config data only: mmcv would also import a config's custom_imports.
            Config.fromfile(str(path), import_custom_modules=False)
        except Exception:  # mmcv raises anything a config's code raises
            failures += 1
    theirs_s = time.process_time() - started
    rows.append(
        Row(TABLE, MMDET, "mmcv Config.fromfile", theirs_s, note=f"{failures} files failed")
    )
    rows[0].floor_label, rows[0].floor = "mmcv Config.fromfile", theirs_s
    rows[0].ratio, rows[0].target = ours_s / theirs_s, Target(0.1)
    return rows, notes
