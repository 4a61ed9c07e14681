"""OpenMMLab Python configs (SPEC 5.3): every allowed construct, inheritance, origins, refusals."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import pytest

from regtree.cli import main
from regtree.config import ConfigError, config_origins, load_config

FIXTURES = Path(__file__).parent / "pyconfigs"
EXPERIMENT = FIXTURES / "retinanet_r101_fpn_2x_coco.py"
PIPELINE = [
    {"type": "LoadImageFromFile"},
    {"type": "Resize", "img_scale": [1333, 800], "keep_ratio": True},
    {"type": "RandomFlip", "flip_ratio": 0.5},
    {
        "type": "Normalize",
        "mean": [123.675, 116.28, 103.53],
        "std": [58.395, 57.12, 57.375],
        "to_rgb": True,
    },
    {"type": "Pad", "size_divisor": 32},
]


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def experiment() -> dict[str, object]:
    pytest.importorskip("yaml")  # one of its bases is YAML
    return load_config(EXPERIMENT)


def test_bases_of_three_formats_merge_under_a_python_config(experiment: dict[str, object]) -> None:
    model = experiment["model"]
    assert isinstance(model, dict)
    assert model["backbone"]["depth"] == 101  # the file over its Python base
    assert model["backbone"]["num_stages"] == 4  # kept from the base
    assert model["backbone"]["out_indices"] == [0, 1, 2, 3]  # a tuple, read as a list
    assert model["neck"] == {  # _delete_=True replaced the base's neck
        "type": "PAFPN",
        "in_channels": [256, 512, 1024, 2048],
        "out_channels": 256,
    }
    assert experiment["dataset_type"] == "CocoDataset"  # from the TOML base
    assert experiment["data"]["workers_per_gpu"] == 2  # type: ignore[index]
    assert experiment["optimizer"] == {  # from the YAML base, lr computed in the file
        "type": "SGD",
        "lr": 0.005,
        "momentum": 0.9,
        "weight_decay": 1e-4,
    }
    assert experiment["workflow"] == [["train", 1]]  # from the second Python base
    assert "_base_" not in experiment
    assert "__version__" not in experiment


def test_a_base_reference_works_as_an_expression_and_as_a_string(
    experiment: dict[str, object],
) -> None:
    head = experiment["model"]["bbox_head"]  # type: ignore[index]
    assert head["anchor_generator"]["strides"] == [8, 16, 32, 64, 128]  # written bare
    assert experiment["model"]["base_norm"] == {"type": "BN", "requires_grad": True}  # type: ignore[index]
    assert experiment["optimizer"]["weight_decay"] == 1e-4  # type: ignore[index]


def test_names_dicts_lists_and_string_concatenation(experiment: dict[str, object]) -> None:
    assert experiment["train_pipeline"] == PIPELINE  # dict(**img_norm_cfg) in a list
    assert experiment["test_pipeline"] == [PIPELINE[0], PIPELINE[1], PIPELINE[3]]  # slices, +
    train = experiment["data"]["train"]  # type: ignore[index]
    assert train["ann_file"] == "data/voc/VOC2007/ImageSets/Main/trainval.txt"  # data_root + '...'
    assert train["img_prefix"] == "data/voc/VOC2007/"  # an f-string
    assert experiment["data"]["test"]["classes"] == ["aeroplane", "bicycle"]  # type: ignore[index]


def test_operators_comprehensions_and_builtins(experiment: dict[str, object]) -> None:
    assert experiment["num_levels"] == 4
    assert experiment["scales"] == [1, 2, 4, 8]
    assert experiment["names"] == {"a": 0, "c": 2}
    assert experiment["widths"] == [256, 128, 64]
    assert experiment["steps"] == [0, 3, 6, 9]
    assert experiment["flags"] == {
        "small": False,
        "big": False,
        "both": True,
        "either": "fallback",
        "mode": "large",
        "neg": -800,
        "pos": 1333,
        "member": True,
        "pairs": {"x": 1333, "y": 800},
        "total": 2,
        "ratio": 0.67,
        "cast": [3, 1.5, "7", False, [1, 2]],
        "backwards": [9, 6, 3, 0],
    }
    assert experiment["repeated"] == [0, 0, 0, "x", "x"]
    assert (experiment["banner"], experiment["sliced"]) == ("=====", "reti")


def test_methods_of_values_as_values_and_as_statements(experiment: dict[str, object]) -> None:
    assert experiment["work_dir"] == "./work_dirs/retinanet_2x"
    assert experiment["tag"] == "r101_fpn"
    assert experiment["parts"] == ["a", " b"]
    assert experiment["clean"] == "x"
    assert experiment["checks"] == [True, True, 1]
    assert experiment["cfg_copy"]["to_rgb"] is False  # type: ignore[index]
    assert experiment["img_norm_cfg"]["to_rgb"] is True  # copy() left the original alone  # type: ignore[index]
    assert experiment["keys"] == ["mean", "std", "to_rgb"]
    assert experiment["first_mean"] == 123.675
    assert experiment["missing"] == "default"
    assert experiment["values_count"] == 3
    assert experiment["items"] == ["mean", "std", "to_rgb"]
    assert experiment["extra_pipeline"] == [
        *PIPELINE,
        {"type": "Collect", "keys": ["img"]},
        {"type": "DefaultFormatBundle"},
    ]


def test_origins_give_the_line_of_each_python_value() -> None:
    pytest.importorskip("yaml")
    origins = config_origins(EXPERIMENT)
    base = FIXTURES / "_base_"
    assert origins["model.backbone.depth"] == f"{EXPERIMENT}:21"
    assert origins["model.backbone.style"] == f"{base / 'models' / 'retinanet_r50_fpn.py'}:13"
    assert origins["optimizer.momentum"] == f"{base / 'schedules' / 'schedule_1x.yaml'}:5"
    assert origins["dataset_type"] == str(base / "datasets" / "coco_detection.toml")
    assert origins["model.bbox_head.anchor_generator.strides.0"] == f"{EXPERIMENT}:23"


def test_names_in_a_python_base_and_a_yaml_file_on_top(tmp_path: Path) -> None:
    pytest.importorskip("yaml")
    write(tmp_path, "base.py", "lr = 0.1\noptimizer = dict(type='SGD', lr=lr * 2)\n")
    path = write(tmp_path, "cfg.yaml", "_base_: base.py\noptimizer:\n  momentum: 0.9\n")
    assert load_config(path) == {
        "lr": 0.1,
        "optimizer": {"type": "SGD", "lr": 0.2, "momentum": 0.9},
    }


def test_a_base_name_is_not_visible_in_the_file(tmp_path: Path) -> None:
    write(tmp_path, "base.py", "data_root = 'data/'\n")
    path = write(tmp_path, "cfg.py", "_base_ = './base.py'\nann = data_root + 'a.json'\n")
    with pytest.raises(
        ConfigError,
        match=r"cfg\.py, line 2: the name 'data_root' is not assigned above .*a base's names "
        r"are not visible in the file: use \{\{_base_\.name\}\}",
    ):
        load_config(path)


def test_resolve_converts_a_python_config_to_toml(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write(
        tmp_path,
        "cfg.py",
        "norm = dict(type='BN')\nmodel = dict(type='Net', depths=(2, 2), norm=norm)\n",
    )
    status = main(["resolve", str(path), "--format", "toml"], roots=[])
    out, err = capsys.readouterr()
    assert (status, err) == (0, "")
    assert tomllib.loads(out) == {
        "norm": {"type": "BN"},
        "model": {"type": "Net", "depths": [2, 2], "norm": {"type": "BN"}},
    }


REFUSED = [
    ("import os\n", 1, "an import"),
    ("x = 1\nfrom os import path\n", 2, "an import"),
    ("model = dict(type=print('hi'))\n", 1, "a call of 'print'"),
    ("x = __import__('os')\n", 1, "a call of '__import__'"),
    ("x = open('f', 'w')\n", 1, "a call of 'open'"),
    ("exec('x = 1')\n", 1, "a call of 'exec'"),
    ("x = eval('1')\n", 1, "a call of 'eval'"),
    ("d = dict()\nx = d.__class__\n", 2, "the attribute 'd.__class__'"),
    ("import_path = 'os'\nx = os.path.join('a')\n", 2, "the attribute 'os.path'"),
    ("x = os.getcwd()\n", 1, "a call of 'os.getcwd'"),
    ("x = 'a'.encode()\n", 1, "the method 'encode' of a str"),
    ("x = [1].pop()\n", 1, "the method 'pop' of a list"),
    ("x = {}.setdefault('a', 1)\n", 1, "the method 'setdefault' of a dict"),
    ("f = lambda: 1\n", 1, "a lambda"),
    ("def f():\n    return 1\n", 1, "a function definition"),
    ("class A:\n    pass\n", 1, "a class definition"),
    ("with read_base():\n    x = 1\n", 1, "a 'with' block"),
    ("for i in range(3):\n    x = i\n", 1, "a 'for' loop"),
    ("while False:\n    pass\n", 1, "a 'while' loop"),
    ("if True:\n    x = 1\n", 1, "an 'if' statement"),
    ("try:\n    x = 1\nexcept Exception:\n    pass\n", 1, "a 'try' statement"),
    ("x = 1\ndel x\n", 2, "a 'del' statement"),
    ("assert True\n", 1, "an 'assert' statement"),
    ("x = {1, 2}\n", 1, "a set"),
    ("x = (y := 1)\n", 1, "an assignment expression"),
    ("x = 1 << 2\n", 1, "the operator '<<'"),
    ("x = ~1\n", 1, "the operator '~'"),
    ("x = b'bytes'\n", 1, "the literal"),
    ("x = '{0.__class__}'.format(1)\n", 1, "the format field"),
    ("x = '{:>{w.real}}'.format(1, w=3)\n", 1, "the format field {w.real}"),
    ("x = [1] is [1]\n", 1, "'is' between two values other than None"),
    ("len = 3\nx = len([])\n", 2, "a call of 'len', which the file assigned"),
    ("x = dict\n", 1, "the builtin 'dict' used as a value"),
    ("x = 1\nx\n", 2, "the statement 'x'"),
]


@pytest.mark.parametrize(("source", "line", "construct"), REFUSED)
def test_each_construct_that_needs_running_is_refused_with_file_line_and_construct(
    tmp_path: Path, source: str, line: int, construct: str
) -> None:
    path = write(tmp_path, "cfg.py", source)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    message = str(info.value)
    assert message.startswith(f"{path}, line {line}: {construct}")
    assert "Python configs are read without being run" in message
    assert (info.value.line, info.value.path) == (line, str(path))


@pytest.mark.parametrize(
    ("source", "problem"),
    [
        ("x = 2**63 + 1\n", r"the int 9223372036854775809 is beyond 2\*\*63"),
        ("x = -(2**63) - 1\n", r"beyond 2\*\*63 in magnitude"),
        ("x = 2 ** 65\n", r"the exponent 65 is above 64"),
        ("x = 'a' * (10**6 + 1)\n", r"the str would be longer than 1,000,000"),
        ("x = [0] * 1000001\n", r"the list would be longer than 1,000,000"),
        ("x = (0,) * 1000001\n", r"the tuple would be longer than 1,000,000"),
        ("x = (0,) * 1000000\nx += (1,)\n", r"the tuple would be longer than 1,000,000"),
        ("x = [0] * 1000000\nx += (1,)\n", r"the list would be longer than 1,000,000"),
        ("x = tuple(range(10**7))\n", r"the list would be longer than 1,000,000"),
        ("x = ((0,) * 1000, (1,) * 1000)\ny = x[0] + x[1] * 1000\n", r"the tuple would be longer"),
        ("x = list(range(10**7))\n", r"the list would be longer than 1,000,000"),
        ("x = ['a' * 1000] * 1000\ny = ''.join(x) + 'b'\n", r"the str would be longer"),
        ("x = f'{1:>2000000}'\n", r"the format width 2000000 is above 1,000,000"),
        ("x = '{:>{w}}'.format(1, w=2000000)\n", r"the format width 2000000 is above 1,000,000"),
        ("x = '{:.2000000f}'.format(1.0)\n", r"the format precision 2000000 is above 1,000,000"),
        ("x = f'{1:.{2000000}f}'\n", r"the format precision 2000000 is above 1,000,000"),
        ("x = '{0:999999}{0:999999}'.format(1)\n", r"the str would be longer than 1,000,000"),
        ("x = f'{1:999999}{1:999999}'\n", r"the str would be longer than 1,000,000"),
        ("x = 'ab'.replace('', 'c' * 600000)\n", r"the str would be longer"),
        ("x = 1 / 0\n", r"int 1 / int 0: division by zero"),
    ],
)
def test_results_are_bounded(tmp_path: Path, source: str, problem: str) -> None:
    with pytest.raises(ConfigError, match=rf"cfg\.py, line \d+: .*{problem}"):
        load_config(write(tmp_path, "cfg.py", source))


def test_a_syntax_error_names_the_line(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"cfg\.py, line 2, column \d+: invalid Python: "):
        load_config(write(tmp_path, "cfg.py", "x = 1\ny = (\n"))


def test_a_config_names_classes_without_importing_them(tmp_path: Path) -> None:
    import sys

    path = write(tmp_path, "cfg.py", "model = dict(type='regtree_test_never_imported.Net')\n")
    assert load_config(path) == {"model": {"type": "regtree_test_never_imported.Net"}}
    assert "regtree_test_never_imported" not in sys.modules


def test_shared_values_are_independent_after_loading(tmp_path: Path) -> None:
    write(tmp_path, "base.py", "a = dict(x=1)\nb = a\n")
    path = write(tmp_path, "cfg.py", "_base_ = 'base.py'\na = dict(y=2)\n")
    assert load_config(path) == {"a": {"x": 1, "y": 2}, "b": {"x": 1}}


def test_unpacking_subscript_and_augmented_assignments(tmp_path: Path) -> None:
    source = (
        "a, b = 1, 2\n"
        "cfg = dict(lr=0.1, steps=[1])\n"
        "cfg['lr'] = 0.2\n"
        "cfg['steps'] += [2]\n"
        "count = 1\n"
        "count += 1\n"
        "x: int = 3\n"
    )
    assert load_config(write(tmp_path, "cfg.py", source)) == {
        "a": 1,
        "b": 2,
        "cfg": {"lr": 0.2, "steps": [1, 2]},
        "count": 2,
        "x": 3,
    }


def test_tuples_stay_tuples_while_evaluating_and_become_lists_in_the_result(
    tmp_path: Path,
) -> None:
    # As mmcv's Config.fromfile, which runs the file, gives them (SPEC 5.3: "tuples as lists").
    source = (
        "size = (1333, 800)\n"
        "shown = [f'{size}', str(size), '{}'.format(size), '%s' if size else '', f'{size!r}']\n"
        "equal = [(1, 2) == [1, 2], (1, 2) == (1, 2), [1] == [1], (1,) in [(1,)], [1] in [(1,)]]\n"
        "ext = ['x.py'.endswith(('.py', '.yaml')), 'a.b'.startswith(('b', 'a'))]\n"
        "grown = size + (3,)\n"
        "twice = str(size * 2)\n"
        "sliced = str(size[1:])\n"
        "alias = size\n"
        "alias += (1,)\n"
        "still = str(size)\n"
        "l = [1]\n"
        "l += (2, 3)\n"
        "pairs = str(list(dict(a=1).items())) + str(list(zip([1], 'a')))\n"
        "pairs += str(list(enumerate('b')))\n"
        "made = [str(tuple([1, 2])), str(tuple()), str(max((1, 2), (1, 3))), (1, 2).index(2)]\n"
        "nested = dict(scales=[(1333, 640), (1333, 800)])\n"
    )
    assert load_config(write(tmp_path, "cfg.py", source)) == {
        "size": [1333, 800],
        "shown": ["(1333, 800)", "(1333, 800)", "(1333, 800)", "%s", "(1333, 800)"],
        "equal": [False, True, True, True, False],
        "ext": [True, True],
        "grown": [1333, 800, 3],
        "twice": "(1333, 800, 1333, 800)",
        "sliced": "(800,)",
        "alias": [1333, 800, 1],
        "still": "(1333, 800)",
        "l": [1, 2, 3],
        "pairs": "[('a', 1)][(1, 'a')][(0, 'b')]",
        "made": ["(1, 2)", "()", "(1, 3)", 1],
        "nested": {"scales": [[1333, 640], [1333, 800]]},
    }


@pytest.mark.parametrize(
    ("source", "problem"),
    [
        ("t = (1, 2)\nt[0] = 3\n", r"line 2: cannot assign an item of tuple \(1, 2\): a tuple"),
        ("t = (1, 2)\nt.append(3)\n", r"line 2: a tuple has no method 'append': a tuple cannot"),
        ("x = [1] + (2,)\n", r"line 1: the operator '\+' is not defined for list \[1\] and tuple"),
    ],
)
def test_a_tuple_is_not_a_list(tmp_path: Path, source: str, problem: str) -> None:
    with pytest.raises(ConfigError, match=rf"cfg\.py, {problem}"):
        load_config(write(tmp_path, "cfg.py", source))


def test_every_iterator_a_builtin_returns_becomes_a_list(tmp_path: Path) -> None:
    source = (
        "a = reversed([1, 2])\n"
        "b = reversed(range(3))\n"
        "c = reversed(dict(x=1, y=2))\n"
        "d = reversed('ab')\n"
        "e = zip([1, 2], 'ab')\n"
        "f = enumerate(reversed([5]))\n"
    )
    assert load_config(write(tmp_path, "cfg.py", source)) == {
        "a": [2, 1],
        "b": [2, 1, 0],
        "c": ["y", "x"],
        "d": ["b", "a"],
        "e": [[1, "a"], [2, "b"]],
        "f": [[0, 5]],
    }


@pytest.mark.parametrize("value", ["[1, 2]", "'ab'"])
def test_a_slice_step_of_zero_is_a_config_error_naming_file_and_line(
    tmp_path: Path, value: str
) -> None:
    path = write(tmp_path, "cfg.py", f"x = 1\ny = {value}[::0]\n")
    with pytest.raises(
        ConfigError,
        match=r"cfg\.py, line 2: the slice '::0' cannot be taken: slice step cannot be zero "
        r"\(use a step such as 1, or -1 to reverse\)",
    ):
        load_config(path)


def test_str_format_takes_nested_fields_as_f_strings_do(tmp_path: Path) -> None:
    source = (
        "w = 3\n"
        "a = '{:>{w}}'.format(1, w=w)\n"
        "b = f'{1:>{w}}'\n"
        "c = '{:.{p}f}|{:{}}'.format(3.14159, 7, 4, p=2)\n"
        "d = '{!r:{fill}^{w}}'.format('a', fill='*', w=7)\n"
    )
    assert load_config(write(tmp_path, "cfg.py", source)) == {
        "w": 3,
        "a": "  1",
        "b": "  1",
        "c": "3.14|   7",
        "d": "**'a'**",
    }


def test_an_f_string_field_that_cannot_be_formatted_is_located_at_the_field(
    tmp_path: Path,
) -> None:
    # Python 3.12 gives each field of a multi-line f-string its own line (3.11 the f-string's).
    source = 'x = 5\ny = f"""first\n{x:q}"""\n'
    field = ast.parse(source).body[1].value.values[1]  # type: ignore[attr-defined]
    with pytest.raises(ConfigError, match=rf"cfg\.py, line {field.lineno}: cannot format int 5"):
        load_config(write(tmp_path, "cfg.py", source))


@pytest.mark.parametrize(
    ("source", "problem"),
    [
        (
            "x = '{}{}'.format(1)\n",
            r"the field \{1\} needs positional argument 1, but format\(\) got 1",
        ),
        (
            "x = '{w}'.format(1)\n",
            r"the field \{w\} needs a keyword argument w=\.\.\., which was not",
        ),
    ],
)
def test_a_format_field_without_its_argument_says_which(
    tmp_path: Path, source: str, problem: str
) -> None:
    with pytest.raises(ConfigError, match=rf"cfg\.py, line 1: str\.format\(\): {problem}"):
        load_config(write(tmp_path, "cfg.py", source))


def test_get_with_an_unhashable_key_is_a_config_error(tmp_path: Path) -> None:
    path = write(tmp_path, "cfg.py", "d = dict(x=1)\nmissing = d.get(0)\nx = d.get([])\n")
    with pytest.raises(
        ConfigError,
        match=r"cfg\.py, line 3: get\(\): a dict key cannot be list \[\] \(unhashable list\); "
        r"config keys are str, such as get\('name'\)",
    ):
        load_config(path)
    assert load_config(write(tmp_path, "ok.py", "d = dict(x=1)\nx = d.get(0)\n"))["x"] is None


@pytest.mark.parametrize(
    "source", ["palette = {0: 'bg', 1: 'fg'}\n", "palette = dict([[0, 'bg']])\n"]
)
def test_an_int_key_is_refused_saying_why_and_what_to_write(tmp_path: Path, source: str) -> None:
    with pytest.raises(
        ConfigError,
        match=r"cfg\.py, line 1: a config key must be a str, got int 0: a config is plain data "
        r"whose keys are names, as in JSON, TOML and YAML configs; write the key as a str "
        r"\('0'\) or use a list, where the position is the key",
    ):
        load_config(write(tmp_path, "cfg.py", source))


@pytest.mark.parametrize(
    ("source", "problem"),
    [
        ("a, *b = [1, 2, 3]\n", r"line 1: a starred assignment \('a, \*b = \.\.\.'\) is not"),
        ("x = [y for y, *z in [[1, 2]]]\n", r"line 1: a starred assignment \('y, \*z = \.\.\.'\)"),
        ("x = dict(1)\n", r"line 1: dict\(\) takes keyword arguments or one mapping .*got int 1"),
        ("x = 1\na = [1]\na.append(a)\n", r"line 2: the value of 'a' contains itself"),
        ("d = dict(k=1)\nd['me'] = d\n", r"line 1: the value of 'd' contains itself"),
        ("a = [1]\nb = (a,)\na.append(b)\n", r"line 1: the value of 'a' contains itself"),
    ],
)
def test_what_python_allows_but_a_config_cannot_hold_says_why(
    tmp_path: Path, source: str, problem: str
) -> None:
    with pytest.raises(ConfigError, match=rf"cfg\.py, {problem}"):
        load_config(write(tmp_path, "cfg.py", source))
