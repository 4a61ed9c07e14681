from __future__ import annotations

import json
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from regtree import load_config
from regtree.config import ConfigError, DumpError, config_origins, dump_config

CONFIG = {
    "model": {"type": "Detector", "num_classes": 3, "backbone": {"type": "Backbone", "depth": 2}},
    "train": {"epochs": 2, "lrs": [0.1, 0.01]},
}

TOML_TEXT = """\
[model]
type = "Detector"
num_classes = 3

[model.backbone]
type = "Backbone"
depth = 2

[train]
epochs = 2
lrs = [0.1, 0.01]
"""

YAML_TEXT = """\
model:
  type: Detector
  num_classes: 3
  backbone: {type: Backbone, depth: 2}
train:
  epochs: 2
  lrs: [0.1, 0.01]
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_json_is_read_with_the_standard_library(tmp_path: Path) -> None:
    path = write(tmp_path, "cfg.json", json.dumps(CONFIG))
    assert load_config(path) == CONFIG


def test_toml_is_read_with_the_standard_library(tmp_path: Path) -> None:
    assert load_config(write(tmp_path, "cfg.toml", TOML_TEXT)) == CONFIG


def test_toml_dates_and_times_are_read_as_their_iso_text(tmp_path: Path) -> None:
    # Plain data, as a YAML date stays a str: resolve must print it, in JSON too.
    text = (
        "day = 2024-01-01\nat = 07:32:00\nwhen = 1979-05-27 07:32:00Z\n"
        "nested = {times = [1979-05-27T00:32:00.5-07:00]}\nname = '2024-01-01'\n"
    )
    assert load_config(write(tmp_path, "cfg.toml", text)) == {
        "day": "2024-01-01",
        "at": "07:32:00",
        "when": "1979-05-27T07:32:00+00:00",
        "nested": {"times": ["1979-05-27T00:32:00.500000-07:00"]},
        "name": "2024-01-01",
    }


@pytest.mark.parametrize("suffix", [".yaml", ".yml", ".YAML"])
def test_yaml_is_read_where_pyyaml_is_installed(tmp_path: Path, suffix: str) -> None:
    pytest.importorskip("yaml")
    assert load_config(write(tmp_path, f"cfg{suffix}", YAML_TEXT)) == CONFIG


def test_a_str_path_works_and_a_byte_order_mark_is_ignored(tmp_path: Path) -> None:
    path = tmp_path / "cfg.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(CONFIG).encode())
    assert load_config(str(path)) == CONFIG


def test_yaml_without_pyyaml_says_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "yaml", None)  # makes `import yaml` fail
    path = write(tmp_path, "cfg.yaml", YAML_TEXT)
    with pytest.raises(ConfigError, match=r"cfg\.yaml: .*PyYAML.*pip install 'regtree\[yaml\]'"):
        load_config(path)


def test_a_python_config_that_needs_running_is_refused_and_not_run(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    path = write(tmp_path, "cfg.py", f"open({str(marker)!r}, 'w').close()\nmodel = dict()\n")
    with pytest.raises(ConfigError, match=r"cfg\.py, line 1: a call of 'open' .*read without"):
        load_config(path)
    assert not marker.exists()


@pytest.mark.parametrize("name", ["cfg.ini", "cfg.txt", "cfg"])
def test_an_unsupported_extension_names_the_supported_ones(tmp_path: Path, name: str) -> None:
    path = write(tmp_path, name, "[model]\n")
    with pytest.raises(ConfigError, match=r"unsupported config file extension .*\.json, \.toml"):
        load_config(path)


def test_a_missing_file_is_a_config_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"absent\.toml: cannot read the config file: No such"):
        load_config(tmp_path / "absent.toml")


def test_a_directory_is_a_config_error_saying_to_name_a_file_in_it(tmp_path: Path) -> None:
    (tmp_path / "x.yaml").mkdir()
    with pytest.raises(
        ConfigError, match=r"x\.yaml: cannot read the config file: .*name a config file in it"
    ):
        config_origins(tmp_path / "x.yaml")


@pytest.mark.parametrize("name", ["cfg.json", "cfg.toml", "cfg.yaml"])
@pytest.mark.parametrize("text", ["", "  \n\n"])
def test_an_empty_file_is_an_error(tmp_path: Path, name: str, text: str) -> None:
    path = write(tmp_path, name, text)
    with pytest.raises(ConfigError, match=rf"{name}: the file is empty"):
        load_config(path)


@pytest.mark.parametrize(("name", "text"), [("cfg.toml", "# nothing yet\n"), ("cfg.json", "{}")])
def test_a_file_without_settings_is_an_error(tmp_path: Path, name: str, text: str) -> None:
    with pytest.raises(ConfigError, match=rf"{name}: the file holds no settings"):
        load_config(write(tmp_path, name, text))


def test_malformed_json_names_file_line_and_column(tmp_path: Path) -> None:
    path = write(tmp_path, "cfg.json", '{\n  "model": {"type": "Net",}\n}\n')
    with pytest.raises(ConfigError, match=r"cfg\.json, line 2, column \d+: invalid JSON: ") as info:
        load_config(path)
    assert info.value.line == 2
    assert info.value.path == str(path)
    assert "\n" not in str(info.value)


def test_malformed_toml_names_file_line_and_column(tmp_path: Path) -> None:
    path = write(tmp_path, "cfg.toml", '[model]\ntype = "Net"\ndepth 3\n')
    with pytest.raises(ConfigError, match=r"cfg\.toml, line 3, column \d+: invalid TOML: ") as info:
        load_config(path)
    assert (info.value.line, info.value.problem.startswith("invalid TOML")) == (3, True)
    assert "(at line" not in str(info.value)


def test_malformed_yaml_names_file_and_line(tmp_path: Path) -> None:
    pytest.importorskip("yaml")
    path = write(tmp_path, "cfg.yaml", "model:\n  type: Net\n   depth: [1, 2\n")
    with pytest.raises(ConfigError, match=r"cfg\.yaml, line \d+, column \d+: invalid YAML: "):
        load_config(path)


@pytest.mark.parametrize(("name", "text"), [("cfg.json", "[1, 2]"), ("cfg.json", '"model"')])
def test_the_top_level_must_be_a_mapping(tmp_path: Path, name: str, text: str) -> None:
    with pytest.raises(ConfigError, match=r"top level of a config must be a mapping"):
        load_config(write(tmp_path, name, text))


def test_a_file_that_is_not_utf8_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "cfg.toml"
    path.write_bytes(b'[model]\ntype = "N\xffet"\n')
    with pytest.raises(ConfigError, match=r"cfg\.toml, line 2: the file is not UTF-8"):
        load_config(path)


def test_the_invalid_byte_is_counted_from_the_start_of_the_file(tmp_path: Path) -> None:
    path = tmp_path / "cfg.toml"
    path.write_bytes(b'\xef\xbb\xbfa = "\xff"\n')  # a byte-order mark, then byte 8 is invalid
    with pytest.raises(ConfigError, match=r"line 1: the file is not UTF-8 text \(byte 8 is"):
        load_config(path)


def test_config_error_is_a_value_error_that_pickles() -> None:
    error = ConfigError("cfg.toml", "invalid TOML: oops", 3, 7)
    copy: ConfigError = pickle.loads(pickle.dumps(error))
    assert isinstance(copy, ValueError)
    assert (str(copy), copy.line, copy.column) == (
        "cfg.toml, line 3, column 7: invalid TOML: oops",
        3,
        7,
    )


def test_import_regtree_loads_no_parser_or_cli_module() -> None:
    heavy = ["json", "tomllib", "yaml", "argparse", "inspect", "difflib"]
    script = (
        "import sys; before = set(sys.modules); import regtree; "
        f"print(sorted(set(sys.modules) - before & set({heavy!r})))"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"


def nested(suffix: str, levels: int) -> str:
    """A config whose key a holds ``levels`` lists, one in another, in the format of ``suffix``."""
    lists = "[" * levels + "]" * levels
    return {
        ".json": f'{{"a": {lists}}}',
        ".toml": f"a = {lists}\n",
        ".yaml": f"a: {lists}\n",
        # Python: each list a name, holding the one before (`l1 = [l0]`).
        ".py": "".join(f"l{i} = [{f'l{i - 1}' if i else ''}]\n" for i in range(levels))
        + f"a = l{levels - 1}\n",
    }[suffix]


DEEP = r"nests deeper than 200 levels of mappings and lists, the most a config may hold"


@pytest.mark.parametrize("suffix", [".json", ".toml", ".yaml", ".py"])
def test_two_hundred_levels_below_the_top_load(tmp_path: Path, suffix: str) -> None:
    if suffix == ".yaml":
        pytest.importorskip("yaml")
    cfg = load_config(write(tmp_path, f"cfg{suffix}", nested(suffix, 200)))
    depth, value = 0, cfg["a"]
    while value:
        depth, value = depth + 1, value[0]
    assert depth == 199  # the innermost of the 200 lists is empty


@pytest.mark.parametrize("suffix", [".json", ".toml", ".yaml", ".py"])
@pytest.mark.parametrize("levels", [201, 600, 2000])
def test_deeper_nesting_is_one_config_error_in_every_format(
    tmp_path: Path, suffix: str, levels: int
) -> None:
    if suffix == ".yaml":
        pytest.importorskip("yaml")
    path = write(tmp_path, f"cfg{suffix}", nested(suffix, levels))
    with pytest.raises(ConfigError, match=rf"cfg\{suffix}(, line \d+)?: .*{DEEP}"):
        load_config(path)
    with pytest.raises(ConfigError, match=DEEP):
        config_origins(path)


def test_toml_dotted_keys_count_as_levels(tmp_path: Path) -> None:
    path = write(tmp_path, "cfg.toml", ".".join(["a"] * 1500) + " = 1\n")
    with pytest.raises(ConfigError, match=rf"cfg\.toml: the file {DEEP}"):
        load_config(path)


def test_an_override_value_or_path_nests_no_deeper_than_a_file(tmp_path: Path) -> None:
    path = write(tmp_path, "cfg.json", '{"a": 1}')
    assert load_config(path, ["a=" + "[" * 201 + "]" * 201])  # 200 levels below the value's top
    for override in ["a=" + "[" * 202 + "]" * 202, "+" + ".".join(["b"] * 201) + "=1"]:
        with pytest.raises(ConfigError, match=rf"cfg\.json: override .*{DEEP}"):
            load_config(path, [override])


def test_references_that_nest_values_past_what_python_recurses_into_are_a_config_error(
    tmp_path: Path,
) -> None:
    # Each file nests 199 levels, within the bound, but each one's reference puts its base's
    # value at its own innermost level.
    inner = "[" * 199 + "1" + "]" * 199
    write(tmp_path, "f0.json", '{"v": ' + inner + "}")
    for index in range(1, 6):
        value = "[" * 199 + '"{{_base_.v}}"' + "]" * 199
        write(tmp_path, f"f{index}.json", f'{{"_base_": "f{index - 1}.json", "v": {value}}}')
    with pytest.raises(ConfigError, match=r"f5\.json: the merged config nests deeper than 200"):
        load_config(tmp_path / "f5.json")
    with pytest.raises(ConfigError, match=r"f5\.json: the merged config nests deeper than 200"):
        config_origins(tmp_path / "f5.json")


def test_a_config_nesting_too_deeply_to_write_is_a_dump_error() -> None:
    deep: object = 1
    for _ in range(5000):
        deep = [deep]
    for file_format in ("toml", "yaml"):  # written by recursive Python code of ours
        with pytest.raises(DumpError, match=f"nests too deeply to write as {file_format}"):
            dump_config({"v": deep}, file_format)
    # json's C encoder may go deeper than Python code (Python 3.13's does): it writes the
    # config, or refuses it as too deep, and never lets a RecursionError out.
    outcome: object
    try:
        outcome = dump_config({"v": deep}, "json").count("[")
    except DumpError as error:
        outcome = str(error)
    assert outcome in (
        5000,
        "the config nests too deeply to write as json (more levels of "
        "mappings and lists than Python can recurse into); flatten it",
    )


NOT_UNICODE = r"is not valid Unicode text: it holds U\+D800, half of a UTF-16 surrogate pair"


@pytest.mark.parametrize("text", ['{"s": "\\ud800"}', '{"\\ud800": 1}', '{"s": ["a\\ud800b"]}'])
def test_a_lone_surrogate_in_json_is_refused_at_load(tmp_path: Path, text: str) -> None:
    path = write(tmp_path, "cfg.json", text)
    with pytest.raises(ConfigError, match=rf"cfg\.json: .*{NOT_UNICODE}"):
        load_config(path)


def test_a_surrogate_pair_in_json_is_one_character(tmp_path: Path) -> None:
    path = write(tmp_path, "cfg.json", '{"s": "\\ud83d\\ude00"}')
    assert load_config(path) == {"s": "\U0001f600"}


@pytest.mark.parametrize(
    "source", ["s = '\\ud800'\n", "s = '{:c}'.format(0xd800)\n", "s = f'{0xd800:c}'\n"]
)
def test_a_lone_surrogate_in_a_python_config_is_refused_with_its_line(
    tmp_path: Path, source: str
) -> None:
    path = write(tmp_path, "cfg.py", "a = 1\n" + source)
    with pytest.raises(ConfigError, match=rf"cfg\.py, line 2: .*{NOT_UNICODE}"):
        load_config(path)


def test_a_lone_surrogate_in_yaml_is_refused_without_libyaml_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    yaml = pytest.importorskip("yaml")
    from regtree.config import _yaml

    path = write(tmp_path, "cfg.yaml", 'a: 1\ns: "\\ud800"\n')
    with pytest.raises(ConfigError, match=r"cfg\.yaml, line 2"):
        load_config(path)  # libyaml's own error, where PyYAML was built with it
    monkeypatch.setattr(yaml, "__with_libyaml__", False)
    monkeypatch.setattr(_yaml, "_CLASSES", None)  # PyYAML's Python parser from now on
    with pytest.raises(ConfigError, match=rf"cfg\.yaml, line 2: .*{NOT_UNICODE}"):
        config_origins(path)


@pytest.mark.parametrize("override", ['s="\\ud800"', "s=\udcff", "\udcff=1"])
def test_an_override_that_is_not_unicode_text_is_refused(tmp_path: Path, override: str) -> None:
    path = write(tmp_path, "cfg.json", '{"s": "x"}')
    with pytest.raises(ConfigError, match=r"cfg\.json: override .*(surrogate|not valid Unicode)"):
        load_config(path, [override])


@pytest.mark.parametrize("text", ['{"a": 1, "a": 2}', '{"m": [{"x": 1, "y": 2, "x": 1}]}'])
def test_a_key_twice_in_one_json_mapping_is_refused(tmp_path: Path, text: str) -> None:
    path = write(tmp_path, "cfg.json", text)
    with pytest.raises(
        ConfigError, match=r"cfg\.json: the key '[ax]' appears twice in one mapping"
    ):
        load_config(path)


def test_a_key_twice_in_toml_is_refused_by_tomllib(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"cfg\.toml, line 2.*invalid TOML"):
        load_config(write(tmp_path, "cfg.toml", "a = 1\na = 2\n"))
