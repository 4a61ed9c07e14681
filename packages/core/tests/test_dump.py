"""``dump_config``: what each format writes reads back to the same data (``resolve`` prints it)."""

from __future__ import annotations

import enum
import types
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from regtree.config import DumpError, config_origins, dump_config, load_config

FORMATS = ["json", "toml", "yaml"]


def reloaded(folder: Path, cfg: dict[str, object], file_format: str) -> object:
    if file_format == "yaml":
        pytest.importorskip("yaml")
    path = folder / f"cfg.{file_format}"
    path.write_text(dump_config(cfg, file_format), encoding="utf-8")
    return load_config(path)


def test_a_key_of_two_less_than_signs_is_quoted_not_a_merge_key(tmp_path: Path) -> None:
    cfg = {"m": {"<<": {"a": 1}, "b": 2}, "v": "<<"}
    assert '"<<":' in dump_config(cfg, "yaml")
    assert reloaded(tmp_path, cfg, "yaml") == cfg


# Characters each format refuses raw, or reads as something else: C0 and C1 controls, DEL, the
# line breaks YAML folds (NEL, U+2028, U+2029), a byte-order mark, a noncharacter and a format
# character beyond the BMP.
AWKWARD = ["\x00", "\x1b[0m", "\x7f", "\x85", "\x9b", "\u2028", "\u2029", "\ufeff", "\ufffe"]
AWKWARD += ["\U000e0001", "\t", "a\r\nb", '"\\', "\xa0"]


@pytest.mark.parametrize("file_format", FORMATS)
@pytest.mark.parametrize("char", AWKWARD)
def test_control_and_break_characters_read_back_in_keys_and_values(
    tmp_path: Path, file_format: str, char: str
) -> None:
    text = f"x{char}y"
    cfg = {"s": text, text: [text, char], "t": {text: char}}
    assert reloaded(tmp_path, cfg, file_format) == cfg


@pytest.mark.parametrize("origins", [None, {"a": "here"}])
def test_a_key_longer_than_yaml_s_implicit_keys_is_written_explicitly(
    tmp_path: Path, origins: dict[str, str] | None
) -> None:
    pytest.importorskip("yaml")
    long = "k" * 1100
    cfg = {long: 1, "a": {long: {long: [1]}}, "l": [{long: 2, "b": 3}]}
    text = dump_config(cfg, "yaml", origins)
    assert f"? {long}\n" in text
    path = tmp_path / "cfg.yaml"
    path.write_text(text, encoding="utf-8")
    assert load_config(path) == cfg


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf")])
def test_json_has_no_nan_or_infinity_so_writing_one_is_a_dump_error(value: float) -> None:
    cfg = {"train": {"lrs": [0.1, value]}}
    with pytest.raises(DumpError, match=rf"'train\.lrs\.1' is {value!r}, and JSON has no NaN or "):
        dump_config(cfg, "json")
    with pytest.raises(DumpError, match=r"write the config as yaml or toml"):
        dump_config(cfg, "json", {"train.lrs.1": "cfg.yaml:3"})
    for file_format in ("toml", "yaml"):  # the formats the message names do hold it
        assert dump_config(cfg, file_format)


@pytest.mark.parametrize("file_format", FORMATS)
@pytest.mark.parametrize("cfg", [{"s": "a\ud800"}, {"m": {"\udcff": 1}}])
def test_a_lone_surrogate_is_a_dump_error_in_every_format(
    file_format: str, cfg: dict[str, object]
) -> None:
    with pytest.raises(DumpError, match=r"is not valid Unicode text"):
        dump_config(cfg, file_format)


# Keys and text that load_config reads as markers (`_base_`, `_delete_`, `{{_base_.x}}`) are
# not data to write back.
KEYS = st.text(max_size=30).filter(lambda key: key not in ("_base_", "_delete_"))
TEXTS = st.text(max_size=30).filter(lambda text: "{{" not in text)


@pytest.mark.parametrize("file_format", FORMATS)
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(key=KEYS, text=TEXTS)
def test_any_text_reads_back_as_written(
    tmp_path_factory: pytest.TempPathFactory, file_format: str, key: str, text: str
) -> None:
    cfg = {"s": text, key: {key: [text, text]}}
    assert reloaded(tmp_path_factory.mktemp(file_format), cfg, file_format) == cfg


@pytest.mark.parametrize("file_format", FORMATS)
def test_a_tuple_is_written_as_a_list(tmp_path: Path, file_format: str) -> None:
    # As SPEC 5.3 reads a Python config's tuples; YAML wrote '(1, 2)', which read back as text.
    cfg: dict[str, object] = {"size": (1333, 800), "nested": [("a", (1.5,))], "empty": ()}
    assert reloaded(tmp_path, cfg, file_format) == {
        "size": [1333, 800],
        "nested": [["a", [1.5]]],
        "empty": [],
    }


@pytest.mark.parametrize("file_format", FORMATS)
@pytest.mark.parametrize("value", [{1, 2}, b"raw", object(), 1j])
def test_a_value_that_is_not_plain_data_is_a_dump_error_naming_it(
    file_format: str, value: object
) -> None:
    # TOML and YAML wrote its str(), JSON raised its own TypeError without the path.
    kind = type(value).__name__
    with pytest.raises(DumpError, match=rf"'model\.opts\.1' is .* \({kind}\), which"):
        dump_config({"model": {"opts": [1, value]}}, file_format)


@pytest.mark.parametrize("file_format", FORMATS)
def test_a_key_that_is_not_a_str_is_a_dump_error_naming_it(file_format: str) -> None:
    # JSON wrote 1 as "1" and TOML raised a TypeError: neither reads back as given.
    with pytest.raises(DumpError, match=r"a key of 'a' is 1 \(int\); .* write it as '1'"):
        dump_config({"a": {1: "x"}}, file_format)
    with pytest.raises(DumpError, match=r"a key of the top level is None \(NoneType\)"):
        dump_config({None: 1}, file_format)


@pytest.mark.parametrize("file_format", FORMATS)
def test_a_config_that_is_not_a_mapping_is_a_type_error(file_format: str) -> None:
    with pytest.raises(TypeError, match="a dict at the top, got list"):
        dump_config([1, 2], file_format)  # type: ignore[arg-type]


@pytest.mark.parametrize("file_format", ["toml", "yaml"])
def test_an_origin_with_a_line_break_stays_in_its_comment(tmp_path: Path, file_format: str) -> None:
    # An origin is a path, which may hold any character: a raw line break started a line of data.
    cfg: dict[str, object] = {"a": 1, "l": [{"x": 2}, [3]]}
    origins = {"a": "dir\nb: 2/c.yaml:1", "l.0.x": "x\ny = 3", "l.1.0": "w\r\nz"}
    text = dump_config(cfg, file_format, origins)
    assert "dir\\nb: 2/c.yaml:1" in text
    if file_format == "yaml":
        pytest.importorskip("yaml")
    path = tmp_path / f"cfg.{file_format}"
    path.write_text(text, encoding="utf-8")
    assert load_config(path) == cfg


def test_yaml_output_reads_the_same_under_yaml_1_1_as_pyyaml_reads_it() -> None:
    # mmcv and mmengine read YAML with PyYAML (YAML 1.1): 1e-05 is text there, 'yes' True,
    # '1_000' 1000 and '2002-12-14' a date, so the writer picks forms both versions agree on.
    yaml = pytest.importorskip("yaml")
    cfg: dict[str, object] = {
        "lr": 1e-5,
        "big": 1e16,
        "small": -2e-7,
        "words": ["yes", "No", "on", "OFF", "y", "N", "="],
        "numbers": ["1_000", "0x1f", "0o17", "0b101", ".5", "190:20:30", "1.0.0"],
        "date": "2002-12-14",
        "times": [
            "1979-05-27T07:32:00+00:00",
            "2024-01-01 10:00:00",
            "2001-12-14t21:59:43.10-05:00",
        ],
        "n": "plain",
    }
    assert yaml.safe_load(dump_config(cfg, "yaml")) == cfg


@pytest.mark.parametrize("value", [2**63, -(2**63) - 1])
def test_an_int_beyond_64_bits_is_a_dump_error_in_toml_only(tmp_path: Path, value: int) -> None:
    with pytest.raises(DumpError, match=r"'a\.b' is -?\d+, beyond TOML's 64-bit integers"):
        dump_config({"a": {"b": value}}, "toml")
    for edge in (2**63 - 1, -(2**63)):
        assert reloaded(tmp_path, {"b": edge}, "toml") == {"b": edge}
    assert reloaded(tmp_path, {"b": value}, "json") == {"b": value}


def test_an_inline_table_s_comment_names_the_origins_of_keys_with_dots(tmp_path: Path) -> None:
    # Origins name a key with a dot in brackets ('l.1[a.b]'), which an inline table's comment
    # (an item of a TOML list that is not all tables) gathers as it gathers the others.
    path = tmp_path / "cfg.json"
    path.write_text('{"l": [1, {"a.b": 2, "c": 3}]}', encoding="utf-8")
    overrides = ["l.1[a.b]=4"]
    text = dump_config(load_config(path, overrides), "toml", config_origins(path, overrides))
    assert f"  {{\"a.b\" = 4, c = 3}},  # override 'l.1[a.b]=4', {path}\n" in text


@pytest.mark.parametrize("file_format", FORMATS)
def test_subclasses_of_plain_values_and_read_only_mappings_are_written_as_plain_data(
    tmp_path: Path, file_format: str
) -> None:
    # A str Enum was written as 'S.X' in YAML and TOML and as 'x' in JSON; a nested read-only
    # mapping was refused while one at the top was written.
    class Size(str, enum.Enum):  # noqa: UP042 (the mixin, whose str() is 'Size.SMALL')
        SMALL = "small"

    class Depth(enum.IntEnum):
        DEEP = 50

    cfg = {
        "size": Size.SMALL,
        "depth": Depth.DEEP,
        "m": types.MappingProxyType({"a": [Size.SMALL]}),
    }
    assert reloaded(tmp_path, cfg, file_format) == {
        "size": "small",
        "depth": 50,
        "m": {"a": ["small"]},
    }
