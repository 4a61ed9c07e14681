"""Overrides in Hydra's grammar (SPEC 5.2): every form, list indexes and each error."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from regtree.config import ConfigError, config_origins, load_config

CONFIG = {
    "model": {
        "type": "Det",
        "depth": 50,
        "heads": [{"num_classes": 1}, {"num_classes": 2}],
        "backbone": {"type": "Net"},
    },
    "optimizer": {"lr": 0.1},
}


@pytest.fixture
def path(tmp_path: Path) -> Path:
    file = tmp_path / "cfg.json"
    file.write_text(json.dumps(CONFIG), encoding="utf-8")
    return file


def test_path_equals_value_replaces(path: Path) -> None:
    cfg = load_config(path, ["optimizer.lr=1e-4", "model.backbone={type: demo_cls.NetB}"])
    assert cfg["optimizer"]["lr"] == 1e-4
    assert cfg["model"]["backbone"] == {"type": "demo_cls.NetB"}


def test_values_are_flow_values(path: Path) -> None:
    cfg = load_config(
        path,
        [
            "+a=[16,32]",
            "+b=foo",
            "+c=null",
            "+d={x: [1, {y: 'q'}], z: \"s t\"}",
            "+e=foo bar",
            "+f=",
            "+g='it''s'",
        ],
    )
    assert [cfg[k] for k in "abcdefg"] == [
        [16, 32],
        "foo",
        None,
        {"x": [1, {"y": "q"}], "z": "s t"},
        "foo bar",
        None,
        "it's",
    ]


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("[ ]", []),
        ("[1.5, yes, null, ~, 0x1f]", [1.5, "yes", None, None, 31]),
        ("[1, 2,]", [1, 2]),
        ("[a: 1]", [{"a": 1}]),
        ("[http://x, 'b']", ["http://x", "b"]),
        ('"a\\"b"', 'a"b'),
        ('"[1, 2]"', "[1, 2]"),
        ("'a \\ b'", "a \\ b"),
        ("  'q'  ", "q"),
    ],
)
def test_quoted_strings_and_lists_read_as_flow_values(path: Path, text: str, value: object) -> None:
    assert load_config(path, [f"+v={text}"])["v"] == value


def test_an_integer_part_indexes_a_list(path: Path) -> None:
    cfg = load_config(path, ["model.heads.1.num_classes=3", "model.heads.-2.num_classes=9"])
    assert cfg["model"]["heads"] == [{"num_classes": 9}, {"num_classes": 3}]


def test_plus_adds_a_new_key_and_its_parents(path: Path) -> None:
    cfg = load_config(path, ["+model.neck.type=FPN", "+model.heads.2={num_classes: 4}"])
    assert cfg["model"]["neck"] == {"type": "FPN"}
    assert cfg["model"]["heads"][2] == {"num_classes": 4}


def test_plus_plus_adds_or_replaces(path: Path) -> None:
    cfg = load_config(path, ["++optimizer.lr=0.5", "++optimizer.momentum=0.9"])
    assert cfg["optimizer"] == {"lr": 0.5, "momentum": 0.9}


def test_tilde_deletes_a_key_or_a_list_item(path: Path) -> None:
    cfg = load_config(path, ["~model.backbone", "~model.heads.0", "~optimizer.lr=0.1"])
    assert cfg["model"] == {"type": "Det", "depth": 50, "heads": [{"num_classes": 2}]}
    assert cfg["optimizer"] == {}


def test_overrides_apply_in_order(path: Path) -> None:
    assert load_config(path, ["optimizer.lr=1", "optimizer.lr=2"])["optimizer"]["lr"] == 2


def test_a_misspelt_path_names_the_closest_existing_one(path: Path) -> None:
    with pytest.raises(
        ConfigError,
        match=r"cfg\.json: override 'model\.dpth=3': the config has no key 'model\.dpth' "
        r"\(did you mean 'model\.depth'\?\); '\+model\.dpth=\.\.\.' would add it",
    ):
        load_config(path, ["model.dpth=3"])
    with pytest.raises(ConfigError, match=r"no key 'modle\.depth' \(did you mean 'model\.depth'"):
        load_config(path, ["modle.depth=3"])


def test_plus_on_an_existing_key_is_an_error(path: Path) -> None:
    with pytest.raises(
        ConfigError, match=r"'model\.depth' already exists \(it is 50\); '\+' adds a new key only"
    ):
        load_config(path, ["+model.depth=3"])


def test_tilde_on_a_missing_key_is_an_error(path: Path) -> None:
    with pytest.raises(ConfigError, match=r"override '~model\.nek': .*no key 'model\.nek'"):
        load_config(path, ["~model.nek"])


def test_a_path_with_nothing_close_lists_the_keys_where_it_leaves_the_config(path: Path) -> None:
    # What would work: the keys the path could go on with, and '+' for one that goes on.
    # Deeper down, only the key that is missing is matched: not a path close for its start.
    with pytest.raises(ConfigError, match=r"no key 'model\.xq\.q' \('model' holds type, depth, "):
        load_config(path, ["model.xq.q=2"])
    with pytest.raises(ConfigError, match=r"\); '\+model\.xq\.q=\.\.\.' would add it$"):
        load_config(path, ["model.xq.q=2"])
    with pytest.raises(ConfigError, match=r"no key 'optimizer\.zz' \('optimizer' holds lr\)$"):
        load_config(path, ["~optimizer.zz"])
    with pytest.raises(ConfigError, match=r"no key 'optimizer\.nesterov' \('optimizer' holds lr"):
        load_config(path, ["optimizer.nesterov=true"])
    # At the top, the closest whole path, never one the path goes on from.
    with pytest.raises(ConfigError, match=r"no key 'zz' \(the top level holds model, optimizer"):
        load_config(path, ["~zz"])
    with pytest.raises(ConfigError, match=r"no key 'depth' \(did you mean 'model\.depth'\?\)"):
        load_config(path, ["depth=18"])


@pytest.mark.parametrize("overrides", [None, 5])
def test_overrides_that_are_not_a_list_are_a_type_error(path: Path, overrides: object) -> None:
    with pytest.raises(
        TypeError, match=r"overrides is a list of str such as .*, not (NoneType|int)"
    ):
        load_config(path, overrides)  # type: ignore[arg-type]


def test_a_path_that_is_not_a_str_or_path_is_a_type_error() -> None:
    with pytest.raises(TypeError, match=r"a str or os\.PathLike .*, got 3 \(int\)"):
        load_config(3)  # type: ignore[arg-type]


def test_a_key_with_a_dot_is_addressed_in_brackets(tmp_path: Path) -> None:
    # mmdetection's custom_keys hold keys such as 'backbone.layer1'; a dotted path cannot name
    # one, and its error names the bracketed path, not a '+' that would add a nested key.
    file = tmp_path / "cfg.json"
    custom = {"backbone.layer1": {"lr_mult": 0.1}, "head": {"lr_mult": 2}}
    file.write_text(json.dumps({"opt": {"custom_keys": custom, "l": [{"a.b": 1}]}}))
    cfg = load_config(file, ["opt.custom_keys[backbone.layer1].lr_mult=0.5", "opt.l[0][a.b]=2"])
    assert cfg["opt"]["custom_keys"]["backbone.layer1"] == {"lr_mult": 0.5}
    assert cfg["opt"]["l"] == [{"a.b": 2}]
    assert load_config(file, ["~opt.custom_keys[backbone.layer1]"])["opt"]["custom_keys"] == {
        "head": {"lr_mult": 2}
    }
    origins = config_origins(file, ["opt.custom_keys[backbone.layer1].lr_mult=0.5"])
    assert origins["opt.custom_keys[backbone.layer1].lr_mult"].startswith("override ")
    with pytest.raises(
        ConfigError,
        match=r"no key 'opt\.custom_keys\.backbone\.layer1\.lr_mult'; the key 'backbone\.layer1' "
        r"is written 'opt\.custom_keys\[backbone\.layer1\]\.lr_mult'$",
    ):
        load_config(file, ["opt.custom_keys.backbone.layer1.lr_mult=0.5"])


@pytest.mark.parametrize(
    ("override", "problem"),
    [
        ("a[b.c=1", "opens a bracket that it does not close before a '.', a '[' or its end"),
        ("a[b]c=1", "opens a bracket that it does not close before a '.', a '[' or its end"),
        ("a..b=1", "has an empty key"),
    ],
)
def test_a_malformed_path_is_an_error_saying_how_paths_are_written(
    path: Path, override: str, problem: str
) -> None:
    with pytest.raises(ConfigError, match=re.escape(problem)):
        load_config(path, [override])


@pytest.mark.parametrize(
    "key", ["backbone.layer1", "layers[0]", "a]b", "x.y[z]", "", "[]", "b]c.d"], ids=repr
)
def test_every_key_is_addressed_by_the_path_its_origin_is_written_with(
    tmp_path: Path, key: str
) -> None:
    # What config_origins writes reads back as the same key: a key with dots or brackets in
    # brackets, which end at the ']' before a '.', a '[' or the path's end.
    file = tmp_path / "cfg.json"
    file.write_text(json.dumps({"m": {key: {"v": 1}}}))
    (written,) = config_origins(file)
    assert load_config(file, [f"{written}=2"]) == {"m": {key: {"v": 2}}}


def test_tilde_with_a_value_that_differs_is_an_error(path: Path) -> None:
    with pytest.raises(ConfigError, match=r"'optimizer\.lr' is 0\.1, not 0\.2, so it is not"):
        load_config(path, ["~optimizer.lr=0.2"])


TYPED = {"x": 1, "f": 1.0, "b": True, "n": None, "s": "1", "l": [1, 0], "m": {"a": [True]}}


@pytest.mark.parametrize(
    "override",
    [
        "~x=true",
        "~x='1'",
        "~b=1",
        "~s=1",
        "~n=false",
        "~l=[true, false]",
        "~l=[1, 0, 0]",
        "~m={a: [1]}",
        "~m={a: [true], b: 1}",
    ],
)
def test_tilde_with_a_value_deletes_only_the_same_type_a_bool_is_no_number(
    tmp_path: Path, override: str
) -> None:
    path = tmp_path / "cfg.json"
    path.write_text(json.dumps(TYPED), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"so it is not deleted"):
        load_config(path, [override])


@pytest.mark.parametrize(
    ("override", "key"),
    [
        ("~x=1", "x"),
        ("~x=1.0", "x"),  # the same number: YAML writes a float 1.0 as an int only by its dot
        ("~f=1", "f"),
        ("~b=true", "b"),
        ("~n=null", "n"),
        ("~s='1'", "s"),
        ("~l=[1, 0.0]", "l"),
        ("~m={a: [true]}", "m"),
    ],
)
def test_tilde_with_the_same_value_deletes(tmp_path: Path, override: str, key: str) -> None:
    path = tmp_path / "cfg.json"
    path.write_text(json.dumps(TYPED), encoding="utf-8")
    assert load_config(path, [override]) == {k: v for k, v in TYPED.items() if k != key}


def test_tilde_with_nan_deletes_a_nan(tmp_path: Path) -> None:
    path = tmp_path / "cfg.yaml"
    path.write_text("a: .nan\nb: 1\n", encoding="utf-8")
    pytest.importorskip("yaml")
    assert load_config(path, ["~a=.nan"]) == {"b": 1}


@pytest.mark.parametrize("override", ["model.heads.2.num_classes=1", "~model.heads.-3"])
def test_an_index_out_of_range_is_an_error(path: Path, override: str) -> None:
    with pytest.raises(
        ConfigError,
        match=r"index -?\d of 'model\.heads' is out of range: the "
        r"list has 2 items \(indices: 0 to 1, or -2 to -1\)",
    ):
        load_config(path, [override])


def test_a_key_where_a_list_is_is_an_error(path: Path) -> None:
    with pytest.raises(
        ConfigError,
        match=r"'model\.heads' is a list, so the part after it is "
        r"an index, not 'first'",
    ):
        load_config(path, ["model.heads.first.num_classes=1"])


def test_a_path_through_a_scalar_is_an_error(path: Path) -> None:
    with pytest.raises(ConfigError, match=r"'model\.depth' holds 50, not a mapping or a list"):
        load_config(path, ["model.depth.x=1"])


@pytest.mark.parametrize(
    ("override", "problem"),
    [
        ("model.depth", r"no '=' in it; an override is PATH=VALUE"),
        ("=3", r"the path '' has an empty key"),
        ("model..depth=3", r"the path 'model\.\.depth' has an empty key"),
        ("model.depth=[1, 2", r"'\]' is missing"),
        ("model.depth={a: 1", r"'\}' is missing"),
        ("model.depth='x", r"the string has no closing '"),
        ("model.depth=[1] 2", r"unexpected '2' after the value"),
    ],
)
def test_a_malformed_override_says_what_would_work(path: Path, override: str, problem: str) -> None:
    with pytest.raises(ConfigError, match=problem):
        load_config(path, [override])


def test_a_failed_override_changes_no_file_and_a_str_is_not_a_list(path: Path) -> None:
    before = path.read_text()
    with pytest.raises(ConfigError):
        load_config(path, ["optimizer.lr=1", "nope=1"])
    assert path.read_text() == before
    with pytest.raises(TypeError, match=r"overrides is a list of str"):
        load_config(path, "optimizer.lr=1")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "override",
    ["model.backbone={_delete_: true, depth: 1}", "++model.backbone={depth: 1, _delete_: false}"],
)
def test_delete_in_an_override_value_is_dropped_an_override_replaces_anyway(
    path: Path, override: str
) -> None:
    assert load_config(path, [override])["model"]["backbone"] == {"depth": 1}


def test_delete_is_dropped_at_any_depth_of_an_override_value(path: Path) -> None:
    cfg = load_config(path, ["+extra=[{a: {_delete_: true, b: 1}}]"])
    assert cfg["extra"] == [{"a": {"b": 1}}]


@pytest.mark.parametrize("override", ["+_base_=x.yaml", "++_base_=[x.yaml]", "~_base_"])
def test_an_override_of_base_is_refused_bases_are_set_in_files(path: Path, override: str) -> None:
    with pytest.raises(ConfigError, match=r"cfg\.json: override .*bases are set in the config"):
        load_config(path, [override])


@pytest.mark.parametrize("value", ["1", "yes", "[true]"])
def test_a_delete_in_an_override_value_must_be_a_bool_as_in_a_file(path: Path, value: str) -> None:
    with pytest.raises(ConfigError, match=r"override .*_delete_ must be true or false, not "):
        load_config(path, [f"model.backbone={{_delete_: {value}, depth: 1}}"])


@pytest.mark.parametrize("override", ["+model._delete_=true", "++model.backbone._delete_=true"])
def test_an_override_of_delete_is_refused_an_override_replaces(path: Path, override: str) -> None:
    with pytest.raises(ConfigError, match=r"override .*'_delete_' marks a mapping in a file"):
        load_config(path, [override])


@pytest.mark.parametrize("override", ["model={a: 1, a: 2}", "+x=[{b: 1, 'b': 2}]"])
def test_a_key_twice_in_an_override_mapping_is_refused(path: Path, override: str) -> None:
    with pytest.raises(
        ConfigError, match=r"override .*the key '[ab]' appears twice in the mapping"
    ):
        load_config(path, [override])
