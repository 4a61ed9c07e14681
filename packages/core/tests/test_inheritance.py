"""Inheritance (SPEC 5.2): ``_base_`` across JSON, TOML and YAML, ``_delete_``, ``{{_base_.x}}``."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from regtree.config import ConfigError, config_origins, load_config


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def three_formats(tmp_path: Path) -> Path:
    """A YAML file on a JSON file on a TOML file, the bases in a sub-folder."""
    pytest.importorskip("yaml")
    write(
        tmp_path,
        "bases/model.toml",
        '[model]\ntype = "Det"\ndepth = 50\n[model.backbone]\ntype = "Net"\nwidths = [8, 16]\n',
    )
    write(
        tmp_path,
        "bases/schedule.json",
        json.dumps({"_base_": "model.toml", "model": {"depth": 18}, "train": {"epochs": 12}}),
    )
    return write(
        tmp_path,
        "cfg.yaml",
        "_base_: [bases/schedule.json]\nmodel:\n  backbone:\n    widths: [4]\ntrain:\n  lr: 1e-4\n",
    )


def test_bases_merge_under_the_file_across_formats(three_formats: Path) -> None:
    assert load_config(three_formats) == {
        "model": {"type": "Det", "depth": 18, "backbone": {"type": "Net", "widths": [4]}},
        "train": {"epochs": 12, "lr": 1e-4},
    }


def test_a_list_of_bases_merges_in_order(tmp_path: Path) -> None:
    write(tmp_path, "model.toml", '[model]\ntype = "Det"\n')
    write(tmp_path, "data.json", '{"data": {"root": "/data"}}')
    path = write(tmp_path, "cfg.json", '{"_base_": ["model.toml", "data.json"], "seed": 1}')
    cfg = load_config(path)
    assert cfg == {"model": {"type": "Det"}, "data": {"root": "/data"}, "seed": 1}
    assert list(cfg) == ["model", "data", "seed"]


def test_two_bases_with_one_top_level_key_name_both_files(tmp_path: Path) -> None:
    write(tmp_path, "a.toml", "[model]\ndepth = 1\n")
    write(tmp_path, "b.json", '{"model": {"width": 2}}')
    path = write(tmp_path, "cfg.json", '{"_base_": ["a.toml", "b.json"]}')
    with pytest.raises(
        ConfigError,
        match=r"cfg\.json: its bases .*a\.toml and .*b\.json both "
        r"define the top-level key 'model'",
    ):
        load_config(path)


def test_a_cycle_names_the_chain(tmp_path: Path) -> None:
    write(tmp_path, "a.json", '{"_base_": "b.json", "x": 1}')
    write(tmp_path, "b.json", '{"_base_": "c.json", "y": 1}')
    write(tmp_path, "c.json", '{"_base_": "a.json", "z": 1}')
    with pytest.raises(
        ConfigError, match=r"cycle: .*a\.json -> .*b\.json -> .*c\.json -> .*a\.json"
    ):
        load_config(tmp_path / "a.json")


def test_a_file_that_is_its_own_base_is_a_cycle(tmp_path: Path) -> None:
    path = write(tmp_path, "a.json", '{"_base_": "a.json", "x": 1}')
    with pytest.raises(ConfigError, match=r"cycle: .*a\.json -> .*a\.json"):
        load_config(path)


def write_chain(tmp_path: Path, levels: int) -> list[Path]:
    """Files ch0.yaml to ch{levels}.yaml, each the base of the next: ``levels`` levels of _base_."""
    pytest.importorskip("yaml")
    return [
        write(tmp_path, f"ch{i}.yaml", (f"_base_: ch{i - 1}.yaml\n" if i else "") + f"k{i}: {i}\n")
        for i in range(levels + 1)
    ]


def test_a_chain_of_a_hundred_levels_of_base_loads(tmp_path: Path) -> None:
    chain = write_chain(tmp_path, 100)
    assert load_config(chain[-1]) == {f"k{i}": i for i in range(101)}


@pytest.mark.parametrize(("levels", "warm"), [(101, None), (101, 40), (101, 99), (130, 60)])
def test_a_deeper_chain_is_too_deep_not_a_cycle_whatever_was_loaded_before(
    tmp_path: Path, levels: int, warm: int | None
) -> None:
    chain = write_chain(tmp_path, levels)
    if warm is not None:  # a composed file is kept: the levels below it must still count
        load_config(chain[warm])
    with pytest.raises(ConfigError, match=r"more than 100 levels of _base_") as caught:
        load_config(chain[-1])
    message = str(caught.value)
    assert "cycle" not in message
    # From the file loaded to the first base past the bound, whatever was kept composed.
    first_past = chain[levels - 101]
    assert message.startswith(f"{chain[-1]}: more than 100 levels of _base_: {chain[-1]} -> ")
    assert f"-> ... 92 more ... -> {chain[levels - 97]} -> " in message
    assert f"-> {first_past}; a config inherits through 100 at most" in message
    with pytest.raises(ConfigError) as with_origins:
        config_origins(chain[-1])
    assert str(with_origins.value) == message
    with pytest.raises(ConfigError, match=r"more than 100 levels of _base_"):
        config_origins(chain[-1])


def test_a_missing_base_names_the_file_that_names_it(tmp_path: Path) -> None:
    path = write(tmp_path, "cfg.json", '{"_base_": "absent.toml", "x": 1}')
    with pytest.raises(
        ConfigError,
        match=r"cfg\.json: cannot read its base 'absent\.toml'.*"
        r"relative to the file",
    ):
        load_config(path)


@pytest.mark.parametrize("base", ["3", '[""]', '{"a": 1}'])
def test_a_malformed_base_list_is_an_error(tmp_path: Path, base: str) -> None:
    path = write(tmp_path, "cfg.json", f'{{"_base_": {base}, "x": 1}}')
    with pytest.raises(ConfigError, match=r"_base_ must be a path or a list of paths"):
        load_config(path)


def test_delete_replaces_the_base_mapping_and_is_removed(tmp_path: Path) -> None:
    write(tmp_path, "base.toml", '[model.backbone]\ntype = "ResNet"\ndepth = 50\n')
    path = write(
        tmp_path,
        "cfg.json",
        '{"_base_": "base.toml", "model": {"backbone": {"_delete_": true, "type": "ViT"}}}',
    )
    assert load_config(path) == {"model": {"backbone": {"type": "ViT"}}}


def test_delete_false_merges_and_delete_without_a_base_is_removed(tmp_path: Path) -> None:
    write(tmp_path, "base.toml", '[model.backbone]\ntype = "ResNet"\n')
    path = write(
        tmp_path,
        "cfg.json",
        json.dumps(
            {
                "_base_": "base.toml",
                "model": {"backbone": {"_delete_": False, "depth": 18}},
                "neck": {"_delete_": True, "type": "FPN", "cfg": [{"_delete_": True, "a": 1}]},
            }
        ),
    )
    assert load_config(path) == {
        "model": {"backbone": {"type": "ResNet", "depth": 18}},
        "neck": {"type": "FPN", "cfg": [{"a": 1}]},
    }


def test_delete_must_be_a_bool(tmp_path: Path) -> None:
    path = write(tmp_path, "cfg.json", '{"model": {"_delete_": "yes"}}')
    with pytest.raises(ConfigError, match=r"_delete_ must be true or false, not 'yes'"):
        load_config(path)


def test_delete_and_references_spelt_with_escapes_still_work(tmp_path: Path) -> None:
    # JSON, TOML and YAML can write `_delete_` and `{{` with escapes; they mean the same.
    write(tmp_path, "base.toml", '[model]\ntype = "ResNet"\ndepth = 50\n')
    cases = {
        "cfg.json": '{"_base_": "base.toml", "model": {"\\u005fdelete_": true, "depth": 18},'
        ' "d": "{\\u007b_base_.model.depth}}"}',
        "cfg.toml": '_base_ = "base.toml"\nd = "{\\u007b_base_.model.depth}}"\n'
        '[model]\n"\\u005fdelete_" = true\ndepth = 18\n',
    }
    if importlib.util.find_spec("yaml") is not None:
        cases["cfg.yaml"] = (
            '_base_: base.toml\nmodel:\n  "\\x5fdelete_": true\n  depth: 18\n'
            'd: "\\x7b{_base_.model.depth}}"\n'
        )
    for name, text in cases.items():
        assert load_config(write(tmp_path, name, text)) == {"model": {"depth": 18}, "d": 50}, name


def test_a_list_replaces_the_base_list(tmp_path: Path) -> None:
    write(tmp_path, "base.json", '{"widths": [1, 2, 3]}')
    assert load_config(write(tmp_path, "cfg.json", '{"_base_": "base.json", "widths": [4]}')) == {
        "widths": [4]
    }


def test_a_base_reference_is_the_value_of_the_merged_bases(tmp_path: Path) -> None:
    pytest.importorskip("yaml")
    write(
        tmp_path, "base.toml", '[model]\nnum_classes = 80\nwidths = [8, 16]\n[data]\nroot = "/d"\n'
    )
    path = write(
        tmp_path,
        "cfg.yaml",
        "_base_: base.toml\n"
        "head:\n"
        "  num_classes: '{{_base_.model.num_classes}}'\n"
        "  width: '{{ _base_.model.widths.1 }}'\n"
        "  data: '{{_base_.data}}'\n",
    )
    cfg = load_config(path)
    assert cfg["head"] == {"num_classes": 80, "width": 16, "data": {"root": "/d"}}


def test_a_reference_to_a_missing_value_names_the_closest(tmp_path: Path) -> None:
    write(tmp_path, "base.json", '{"model": {"num_classes": 80}}')
    path = write(tmp_path, "cfg.json", '{"_base_": "base.json", "n": "{{_base_.model.num_class}}"}')
    with pytest.raises(
        ConfigError,
        match=r"names no value of its bases: .*'model\.num_class' "
        r"\(did you mean 'model\.num_classes'\?\)",
    ):
        load_config(path)


def test_a_reference_without_bases_or_inside_a_string_is_an_error(tmp_path: Path) -> None:
    alone = write(tmp_path, "alone.json", '{"n": "{{_base_.a}}"}')
    with pytest.raises(ConfigError, match=r"alone\.json: .*has no _base_"):
        load_config(alone)
    write(tmp_path, "base.json", '{"a": 1}')
    inside = write(tmp_path, "inside.json", '{"_base_": "base.json", "n": "x{{_base_.a}}"}')
    with pytest.raises(ConfigError, match=r"must be the whole value"):
        load_config(inside)


REFERENCES_FROM_THE_END = {
    "cfg.json": '{"_base_": "base.json", "last": "{{_base_.l.-1}}", "n": "{{ _base_.h.-2.n }}"}',
    "cfg.toml": '_base_ = "base.json"\nlast = "{{_base_.l.-1}}"\nn = "{{ _base_.h.-2.n }}"\n',
    "cfg.yaml": "_base_: base.json\nlast: '{{_base_.l.-1}}'\nn: '{{ _base_.h.-2.n }}'\n",
    "cfg.py": "_base_ = 'base.json'\nlast = {{_base_.l.-1}}\nn = '{{ _base_.h.-2.n }}'\n",
}


@pytest.mark.parametrize("name", list(REFERENCES_FROM_THE_END))
def test_a_reference_may_index_a_list_from_its_end(tmp_path: Path, name: str) -> None:
    if name.endswith(".yaml"):
        pytest.importorskip("yaml")
    write(tmp_path, "base.json", '{"l": [1, 2], "h": [{"n": 3}, {"n": 4}]}')
    path = write(tmp_path, name, REFERENCES_FROM_THE_END[name])
    assert load_config(path) == {"l": [1, 2], "h": [{"n": 3}, {"n": 4}], "last": 2, "n": 3}


@pytest.mark.parametrize(
    "text",
    ["{{_base_.l[0]x}}", "{{_base_ .l}}", "{{_base_}}", "{{ _base_.a..b }}", "{{_base_.a b}}"],
)
@pytest.mark.parametrize("bases", [True, False])
def test_a_string_that_looks_like_a_reference_but_is_none_is_refused(
    tmp_path: Path, text: str, bases: bool
) -> None:
    write(tmp_path, "base.json", '{"l": [1, 2]}')
    data = {"x": text, **({"_base_": "base.json"} if bases else {})}
    path = write(tmp_path, "cfg.json", json.dumps(data))
    with pytest.raises(ConfigError, match=r"cfg\.json: .* is not a reference, which is written"):
        load_config(path)


def test_a_python_expression_that_looks_like_a_reference_but_is_none_is_refused(
    tmp_path: Path,
) -> None:
    write(tmp_path, "base.json", '{"l": [1, 2]}')
    path = write(tmp_path, "cfg.py", "_base_ = 'base.json'\nx = 1\ny = {{_base_.l[0] + 1}}\n")
    with pytest.raises(
        ConfigError, match=r"cfg\.py, line 3: '\{\{_base_\.l\[0\] \+ 1\}\}' is not a reference"
    ):
        load_config(path)


@pytest.mark.parametrize("name", ["cfg.json", "cfg.py"])
def test_a_reference_writes_a_key_with_a_dot_or_an_index_in_brackets(
    tmp_path: Path, name: str
) -> None:
    # As overrides and origins write them: mmdetection's custom keys hold dots.
    base = {"l": [1, 2], "m": {"custom_keys": {"backbone.layer1": {"lr_mult": 0.1}}}}
    write(tmp_path, "base.json", json.dumps(base))
    refs = {
        "first": "{{_base_.l[0]}}",
        "mult": "{{ _base_.m.custom_keys[backbone.layer1].lr_mult }}",
    }
    if name == "cfg.json":
        text = json.dumps({"_base_": "base.json", **refs})
    else:  # written as expressions, as mmcv's Python configs write references
        text = "_base_ = 'base.json'\n" + "".join(f"{k} = {v}\n" for k, v in refs.items())
    assert load_config(write(tmp_path, name, text)) == {**base, "first": 1, "mult": 0.1}
    # A reference that spells such a key part by part is told the bracketed form.
    wrong = json.dumps({"_base_": "base.json", "x": "{{_base_.m.custom_keys.backbone.layer1}}"})
    with pytest.raises(ConfigError, match=r"is written 'm\.custom_keys\[backbone\.layer1\]'"):
        load_config(write(tmp_path, "wrong.json", wrong))


def test_an_error_in_a_base_names_the_base(tmp_path: Path) -> None:
    write(tmp_path, "base.toml", "[model\n")
    path = write(tmp_path, "cfg.json", '{"_base_": "base.toml"}')
    with pytest.raises(ConfigError, match=r"base\.toml, line 1.*invalid TOML"):
        load_config(path)


def test_a_file_with_only_a_base_takes_the_base(tmp_path: Path) -> None:
    write(tmp_path, "base.json", '{"a": 1}')
    assert load_config(write(tmp_path, "cfg.json", '{"_base_": "base.json"}')) == {"a": 1}


def test_an_edited_base_is_read_again_and_loads_do_not_share_values(tmp_path: Path) -> None:
    base = write(tmp_path, "base.json", '{"model": {"depth": 1, "widths": [1]}}')
    path = write(tmp_path, "cfg.json", '{"_base_": "base.json", "seed": 0}')
    first = load_config(path, ["model.depth=5", "model.widths.0=7"])
    first["model"]["widths"].append(9)
    assert load_config(path) == {"model": {"depth": 1, "widths": [1]}, "seed": 0}
    load_config(path, ["~model.widths.0", "+model.new.x=1", "++model.widths.0=2"])
    assert load_config(path) == {"model": {"depth": 1, "widths": [1]}, "seed": 0}
    base.write_text('{"model": {"depth": 2, "widths": [1]}}', encoding="utf-8")
    assert load_config(path)["model"]["depth"] == 2
    other = write(tmp_path, "other.json", '{"_base_": "base.json", "model": {"extra": 1}}')
    assert load_config(other)["model"] == {"depth": 2, "widths": [1], "extra": 1}
    assert load_config(path)["model"] == {"depth": 2, "widths": [1]}


@pytest.mark.parametrize(
    ("text", "line", "problem"),
    [
        ("x: 1\n_base_:\n", 2, r"_base_ must be a path"),
        ("x: 1\n_base_: [base.yaml, 3]\n", 2, r"_base_ must be a path"),
        ("_base_:\n  - absent.yaml\n", 2, r"cannot read its base 'absent\.yaml'"),
        ("x:\n  _delete_:\n", 2, r"_delete_ must be true or false, not None"),
        ("_base_: base.yaml\nx:\n  y: '{{_base_.z}}'\n", 3, r"names no value of its bases"),
        ("x: 'a {{_base_.y}}'\n", 1, r"must be the whole value"),
    ],
)
def test_a_yaml_inheritance_problem_names_its_line(
    tmp_path: Path, text: str, line: int, problem: str
) -> None:
    # load_config composes plain data, which keeps no lines; the problem still names its line.
    pytest.importorskip("yaml")
    write(tmp_path, "base.yaml", "y: 1\n")
    path = write(tmp_path, "cfg.yaml", text)
    with pytest.raises(ConfigError, match=rf"cfg\.yaml, line {line}: .*{problem}") as raised:
        load_config(path)
    # One problem, shown once: not chained to the same problem found without its line.
    assert not isinstance(raised.value.__context__, ConfigError)
