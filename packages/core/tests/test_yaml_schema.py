"""YAML 1.2 core schema (SPEC 5.1): the same scalars in YAML files and in override values."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from regtree.config import load_config

# (as written, the value it means) for every scalar form of SPEC 5.1.
SCALARS: list[tuple[str, object]] = [
    ("1e-4", 1e-4),
    ("5e-2", 5e-2),
    ("-1E3", -1000.0),
    (".5", 0.5),
    ("+12.5", 12.5),
    ("1.", 1.0),
    (".inf", math.inf),
    ("-.Inf", -math.inf),
    ("0x1f", 31),
    ("0o17", 15),
    ("012", 12),  # decimal in YAML 1.2 (octal in 1.1)
    ("-3", -3),
    ("true", True),
    ("True", True),
    ("TRUE", True),
    ("false", False),
    ("False", False),
    ("FALSE", False),
    ("yes", "yes"),
    ("no", "no"),
    ("on", "on"),
    ("off", "off"),
    ("y", "y"),
    ("null", None),
    ("Null", None),
    ("NULL", None),
    ("~", None),
    ("2024-05-01", "2024-05-01"),  # a date stays a string
    ("1_000", "1_000"),  # no digit separators in YAML 1.2
    ("'1e-4'", "1e-4"),  # quoted: always a string
    ('"true"', "true"),
]


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(("written", "expected"), SCALARS)
def test_a_yaml_file_reads_each_scalar_by_the_core_schema(
    tmp_path: Path, written: str, expected: object
) -> None:
    pytest.importorskip("yaml")
    cfg = load_config(write(tmp_path, "cfg.yaml", f"value: {written}\nlisted: [{written}]\n"))
    assert cfg["value"] == expected
    assert cfg["listed"] == [expected]
    assert type(cfg["value"]) is type(expected)


def test_an_empty_value_is_null_and_nan_is_a_float(tmp_path: Path) -> None:
    pytest.importorskip("yaml")
    cfg = load_config(write(tmp_path, "cfg.yaml", "empty:\nnan: .nan\nlr: 1e-4\n"))
    assert cfg["empty"] is None
    assert math.isnan(cfg["nan"])
    assert cfg["lr"] == 1e-4


@pytest.mark.parametrize(("written", "expected"), SCALARS)
def test_an_override_value_reads_each_scalar_by_the_core_schema(
    tmp_path: Path, written: str, expected: object
) -> None:
    path = write(tmp_path, "cfg.json", '{"value": 0}')
    cfg = load_config(path, [f"value={written}", f"+listed=[{written}]"])
    assert cfg["value"] == expected
    assert cfg["listed"] == [expected]
    assert type(cfg["value"]) is type(expected)


def test_override_values_parse_without_pyyaml(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "yaml", None)  # makes `import yaml` fail
    path = write(tmp_path, "cfg.json", '{"lr": 0}')
    assert load_config(path, ["lr=1e-4"]) == {"lr": 1e-4}


def test_merge_keys_and_anchors_still_work(tmp_path: Path) -> None:
    pytest.importorskip("yaml")
    text = "defaults: &d {depth: 2, lr: 1e-3}\nmodel:\n  <<: *d\n  depth: 3\n"
    cfg = load_config(write(tmp_path, "cfg.yaml", text))
    assert cfg["model"] == {"depth": 3, "lr": 1e-3}


def test_a_self_referring_alias_is_an_error_not_a_hang(tmp_path: Path) -> None:
    pytest.importorskip("yaml")
    from regtree.config import ConfigError

    with pytest.raises(ConfigError, match=r"cfg\.yaml, line 1: the file nests deeper than 200"):
        load_config(write(tmp_path, "cfg.yaml", "a: &x [*x]\n"))


def test_a_non_string_key_is_refused_with_its_line(tmp_path: Path) -> None:
    pytest.importorskip("yaml")
    from regtree.config import ConfigError

    with pytest.raises(
        ConfigError, match=r"line 2, column 3: .*key 1 is not a string; config keys"
    ):
        load_config(write(tmp_path, "cfg.yaml", "model:\n  1: a\n"))


@pytest.mark.parametrize(
    "tag", ["!!int", "!!float", "!!bool", "!!null", "!!str", "!<tag:regtree:plain>"]
)
@pytest.mark.parametrize("collection", ["[1, 2]", "{b: 1}"])
def test_a_collection_tagged_as_a_scalar_is_invalid_yaml_with_its_line(
    tmp_path: Path, tag: str, collection: str
) -> None:
    pytest.importorskip("yaml")
    from regtree.config import ConfigError

    kind = "sequence" if collection.startswith("[") else "mapping"
    with pytest.raises(
        ConfigError,
        match=rf"line 2, column 6: invalid YAML: expected a scalar node, but found {kind}",
    ):
        load_config(write(tmp_path, "cfg.yaml", f"a: 1\nb:   {tag} {collection}\n"))


@pytest.mark.parametrize(
    ("value", "tag"),
    [
        ("!!set {a, b}", "!!set"),
        ("!!omap [k: 1, j: 2]", "!!omap"),
        ("!!pairs [k: 1]", "!!pairs"),
        ("!!timestamp 2001-12-14", "!!timestamp"),
        ("!!binary aGVsbG8=", "!!binary"),
        ("!local 1", "!local"),
    ],
)
def test_a_tag_outside_the_core_schema_is_refused_with_its_line(
    tmp_path: Path, value: str, tag: str
) -> None:
    # Their values are no plain data (a set, tuples, a datetime, bytes); load_config and
    # config_origins refuse them alike, so no override or reference reaches into one.
    pytest.importorskip("yaml")
    from regtree.config import ConfigError, config_origins

    path = write(tmp_path, "cfg.yaml", f"a: 1\nb: {value}\n")
    expected = rf"line 2, column 4: invalid YAML: the tag {tag} is not in the YAML 1.2 core schema"
    for read in (load_config, config_origins):
        with pytest.raises(ConfigError, match=expected):
            read(path)


def test_core_tags_on_their_own_kind_of_node_read_as_untagged(tmp_path: Path) -> None:
    pytest.importorskip("yaml")
    text = "i: !!int '3'\nf: !!float 1\nl: !!seq [1]\nm: !!map {a: !!str 1}\nn: !!null ''\n"
    assert load_config(write(tmp_path, "cfg.yaml", text)) == {
        "i": 3,
        "f": 1.0,
        "l": [1],
        "m": {"a": "1"},
        "n": None,
    }


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("!!int abc", r"!!int takes an integer such as 12, -3, 0o17 or 0x1f, not 'abc'"),
        ("!!int 1.5", r"!!int takes an integer .*, not '1\.5'"),
        ("!!float abc", r"!!float takes a number such as 0\.5, 1e-4, \.inf or \.nan, not 'abc'"),
        ("!!bool yes", r"!!bool takes true or false \(or True, TRUE, False, FALSE\), not 'yes'"),
        ("!!bool ''", r"!!bool takes true or false .*, not ''"),
        ("!!null foo", r"!!null takes null, Null, NULL, ~ or nothing, not 'foo'"),
    ],
)
def test_a_tagged_scalar_outside_its_tag_s_forms_is_refused_with_its_line(
    tmp_path: Path, value: str, message: str
) -> None:
    pytest.importorskip("yaml")
    from regtree.config import ConfigError, config_origins

    path = write(tmp_path, "cfg.yaml", f"a: 1\nb: {value}\n")
    for read in (load_config, config_origins):
        with pytest.raises(ConfigError, match=rf"line 2, column 4: invalid YAML: {message}$"):
            read(path)


def test_a_tagged_key_outside_its_tag_s_forms_is_refused_with_its_line(tmp_path: Path) -> None:
    pytest.importorskip("yaml")
    from regtree.config import ConfigError

    with pytest.raises(ConfigError, match=r"line 2, column 1: invalid YAML: !!int takes"):
        load_config(write(tmp_path, "cfg.yaml", "a: 1\n!!int abc: 1\n"))


def test_each_core_form_of_a_tagged_scalar_reads_by_the_core_schema(tmp_path: Path) -> None:
    pytest.importorskip("yaml")
    text = (
        "i: [!!int 0x1f, !!int 0o17, !!int -3]\nf: [!!float 1, !!float .5, !!float -.INF]\n"
        "b: [!!bool TRUE, !!bool False]\nn: [!!null ~, !!null NULL, !!null '']\n"
    )
    assert load_config(write(tmp_path, "cfg.yaml", text)) == {
        "i": [31, 15, -3],
        "f": [1.0, 0.5, -math.inf],
        "b": [True, False],
        "n": [None, None, None],
    }


def test_a_value_of_two_less_than_signs_is_a_string_not_a_merge(tmp_path: Path) -> None:
    # Only a key `<<` merges (a YAML 1.1 type every config writer knows); a value is plain text.
    pytest.importorskip("yaml")
    assert load_config(write(tmp_path, "cfg.yaml", "a: <<\nb: [<<, x]\n")) == {
        "a": "<<",
        "b": ["<<", "x"],
    }


@pytest.mark.parametrize(
    ("text", "key", "lines"),
    [
        ("a: 1\nb: 2\na: 3\n", "a", (1, 3)),
        ("m:\n  x: 1\n  'x': 2\n", "x", (2, 3)),
        ("m: {x: 1, y: 2, x: 3}\n", "x", (1, 1)),
        ("d: &d {k: 1}\nm:\n  <<: *d\n  j: 1\n  j: 2\n", "j", (4, 5)),
    ],
)
def test_a_key_twice_in_one_mapping_is_refused_with_both_lines(
    tmp_path: Path, text: str, key: str, lines: tuple[int, int]
) -> None:
    # YAML 1.2 requires unique keys; PyYAML keeps the last silently.
    pytest.importorskip("yaml")
    from regtree.config import ConfigError, config_origins

    path = write(tmp_path, "cfg.yaml", text)
    first, second = lines
    problem = rf"cfg\.yaml, line {second}, column \d+: .*the key '{key}' appears twice in one"
    problem += rf" mapping \(lines {first} and {second}\); YAML keys are unique"
    with pytest.raises(ConfigError, match=problem):
        load_config(path)
    with pytest.raises(ConfigError, match=problem):
        config_origins(path)


def test_a_merged_key_may_be_set_again_and_an_alias_of_a_merged_mapping_reads(
    tmp_path: Path,
) -> None:
    pytest.importorskip("yaml")
    text = "b: &b {a: 1, c: 2}\nx: &x\n  <<: *b\n  a: 3\ny: *x\nz: {<<: [{a: 4}, *b]}\n"
    assert load_config(write(tmp_path, "cfg.yaml", text)) == {
        "b": {"a": 1, "c": 2},
        "x": {"a": 3, "c": 2},
        "y": {"a": 3, "c": 2},
        "z": {"a": 4, "c": 2},
    }
