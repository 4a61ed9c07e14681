"""A JSON Schema for the configs of a registry tree, so an editor completes and checks them.

The schema says what ``validate`` checks as far as JSON Schema can: the ``type`` values that
resolve from the registry (scoped as a config writes them), each one's keyword parameters with
their defaults and annotations (SPEC 5.4's forms), and its docstring's first line. What it
cannot say (closest names, a required argument that a builder passes itself, such as an
optimizer's ``params``) is left to ``regtree validate``.
"""

from __future__ import annotations

import argparse
import inspect
import types
import typing
from collections.abc import Mapping, Sequence
from typing import Any

from .._registry import Registry
from .._signatures import signature_of
from ..naming import origin, registry_label
from ._roots import iter_tree

__all__ = ["SCHEMA_DIALECT", "annotation_schema", "config_schema"]

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
_CONFIG = "#/$defs/config"
_UNIONS = (typing.Union, types.UnionType)
_SIMPLE: dict[object, str] = {bool: "boolean", int: "integer", float: "number", str: "string"}
# A nested mapping that names a ``type`` is a config of the tree; one without is plain data.
_NESTED_CONFIG: dict[str, object] = {
    "if": {"type": "object", "required": ["type"]},
    "then": {"$ref": _CONFIG},
}
# Keys every config may hold besides the callable's keywords (build_from_cfg and SPEC 5.2).
_RESERVED: dict[str, object] = {
    "type": {"description": "The registered name to build."},
    "_scope_": {"type": "string", "description": "The default scope of this build."},
    "_delete_": {"type": "boolean", "description": "Replace the base's mapping whole."},
}


def config_schema(registry: Registry[Any], section: str | None = "model") -> dict[str, Any]:
    """Return a JSON Schema (draft 2020-12) for config files built with ``registry``.

    Every name that resolves from ``registry`` is a ``type`` value: each entry of its tree as
    ``'scope.Name'``, and unscoped the entries of ``registry`` and of its ancestors. A config
    naming one may give that callable's keyword parameters (annotations as JSON types, defaults
    shown); other keys are errors unless it takes ``**kwargs``. A nested mapping with a ``type``
    is checked the same way. A file that inherits (``_base_``) may leave ``type`` out.

    Args:
        registry: The registry that builds the configs; the whole tree is described from there.
        section: The top-level key of a file that holds the config (``regtree validate``'s
            default, ``'model'``); a file with a ``type`` key of its own is a config itself.
            None: the schema of a config alone.

    Returns:
        The schema, as plain JSON-ready data.
    """
    entries: dict[str, Any] = {}  # $defs name -> schema of one callable's config
    names: dict[int, str] = {}  # id of a callable -> its $defs name
    branches: list[dict[str, Any]] = []
    for key, target in _type_values(registry):
        definition = names.get(id(target))
        if definition is None:
            # Named by where it is defined; two partials of one function need two names.
            definition = origin(target)
            while definition in entries:
                definition += "'"
            names[id(target)] = definition
            entries[definition] = _entry_schema(key, target)
        branches.append(
            {
                "if": {"properties": {"type": {"const": key}}, "required": ["type"]},
                "then": {"$ref": f"#/$defs/{_pointer(definition)}"},
            }
        )
    partial = {
        "type": "object",
        "properties": {"type": {"enum": [key for key, _ in _type_values(registry)]}},
        "allOf": branches,
    }
    defs: dict[str, Any] = {
        "config": {**partial, "required": ["type"]},
        "partial_config": partial,
        **entries,
    }
    label = registry_label(registry)
    schema: dict[str, Any] = {
        "$schema": SCHEMA_DIALECT,
        "title": f"regtree config for {label}",
        "description": f"A config that {label} builds: its 'type' and that callable's keywords.",
    }
    if section is None:
        return {**schema, "$ref": _CONFIG, "$defs": defs}
    # if/then rather than anyOf: a validator then reports the mistake, not "no branch matched".
    config_or_list = {
        "if": {"type": "array"},
        "then": {"items": {"$ref": _CONFIG}},
        "else": {"$ref": _CONFIG},
    }
    inherited = {"$ref": "#/$defs/partial_config"}
    return {
        **schema,
        "description": (
            f"A config file whose {section!r} section {label} builds (or that is such a config "
            "itself); other sections are not checked."
        ),
        "type": "object",
        "if": {"required": ["type"]},
        "then": {"$ref": _CONFIG},
        "else": {
            "if": {"required": ["_base_"]},
            "then": {"properties": {section: inherited}},
            "else": {"properties": {section: config_or_list}},
        },
        "$defs": defs,
    }


def annotation_schema(annotation: object) -> dict[str, Any]:
    """Translate a parameter's annotation into JSON Schema, by the rules of SPEC 5.4.

    ``int``, ``float`` (which takes an int), ``bool``, ``str``, ``None``, unions and optionals,
    ``Literal[...]``, ``list[X]``, ``Sequence[X]``, ``tuple[X, ...]`` and ``tuple[X, Y]`` (its
    length fixed) have their JSON forms. A class (``dict`` or ``nn.Module`` alike) is an object,
    a generic mapping (``dict[str, Any]``) any value; a mapping there that names a ``type`` is a
    nested config of the tree. Anything else (``Any``, a ``Callable``, a
    ``TypeVar``, an annotation left as a string) accepts any value: ``{}``.

    Args:
        annotation: The annotation, as an object.

    Returns:
        The schema of the values that fit.
    """
    if annotation is None or annotation is type(None):
        return {"type": "null"}
    if annotation in _SIMPLE:
        return {"type": _SIMPLE[annotation]}
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin in _UNIONS:
        options = [annotation_schema(arg) for arg in args]
        if any(option == {} for option in options):
            return {}
        return {"anyOf": options}
    if origin is typing.Literal:
        return {"enum": list(args)}
    if annotation in (list, tuple, Sequence, typing.Sequence):
        return {"type": "array"}
    if origin in (list, Sequence):
        return {"type": "array", **({"items": annotation_schema(args[0])} if args else {})}
    if origin is tuple:
        if not args:
            return {"type": "array"}
        if len(args) == 2 and args[1] is Ellipsis:
            return {"type": "array", "items": annotation_schema(args[0])}
        if args == ((),):
            return {"type": "array", "maxItems": 0}
        return {
            "type": "array",
            "prefixItems": [annotation_schema(arg) for arg in args],
            "minItems": len(args),
            "maxItems": len(args),
        }
    if annotation is Any:  # a class since Python 3.11, but it accepts anything
        return {}
    if origin is None and isinstance(annotation, type):  # its instances or a mapping
        return {"type": "object", **_NESTED_CONFIG}
    if origin in (dict, Mapping):  # generics accept anything, a nested config checked
        return dict(_NESTED_CONFIG)
    return {}


def _type_values(registry: Registry[Any]) -> list[tuple[str, Any]]:
    """Every ``type`` value that resolves from ``registry``, with what it names."""
    values: list[tuple[str, Any]] = []
    seen: set[str] = set()
    member: Registry[Any] | None = registry
    while member is not None:  # unscoped: this registry, then its ancestors, nearest first
        for name in member:
            if name not in seen:
                seen.add(name)
                values.append((name, member.module_dict[name]))
        member = member.parent
    for member in iter_tree(registry.root):
        values.extend((f"{member.scope}.{name}", member.module_dict[name]) for name in member)
    return values


def _entry_schema(key: str, target: Any) -> dict[str, Any]:
    schema: dict[str, Any] = {"title": key, "type": "object"}
    summary = _summary(target)
    if summary:
        schema["description"] = summary
    properties: dict[str, Any] = dict(_RESERVED)
    signature = signature_of(target)
    takes_any = signature is None
    for parameter in signature.parameters.values() if signature is not None else ():
        if parameter.kind is inspect.Parameter.VAR_KEYWORD:
            takes_any = True
            continue
        if parameter.kind not in (
            inspect.Parameter.POSITIONAL_OR_KEYWORD,
            inspect.Parameter.KEYWORD_ONLY,
        ):
            continue
        annotation = parameter.annotation
        prop = {} if annotation is inspect.Parameter.empty else annotation_schema(annotation)
        if parameter.default is not inspect.Parameter.empty:
            default = _json_value(parameter.default)
            if default is not _NOT_JSON:
                prop = {**prop, "default": default}
        properties[parameter.name] = prop
    schema["properties"] = properties
    if not takes_any:
        schema["additionalProperties"] = False
    return schema


_NOT_JSON = object()


def _json_value(value: object) -> object:
    """``value`` as JSON data (tuples as lists), or ``_NOT_JSON`` where JSON has no such value."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if value == value and abs(value) != float("inf") else _NOT_JSON
    if isinstance(value, list | tuple):
        items = [_json_value(item) for item in value]
        return _NOT_JSON if any(item is _NOT_JSON for item in items) else items
    if isinstance(value, Mapping) and all(isinstance(k, str) for k in value):
        converted = {k: _json_value(v) for k, v in value.items()}
        return _NOT_JSON if any(v is _NOT_JSON for v in converted.values()) else converted
    return _NOT_JSON


def _summary(target: object) -> str:
    """The first line of the target's own docstring (a class's, never one it inherits)."""
    if isinstance(target, type):
        doc = target.__dict__.get("__doc__")
    elif inspect.isfunction(target) or inspect.ismethod(target):
        doc = target.__doc__
    else:  # a partial or another callable object: its class's docstring says nothing of it
        doc = None
    if not isinstance(doc, str):
        return ""
    lines = inspect.cleandoc(doc).strip().splitlines()
    return lines[0].strip() if lines else ""


def _pointer(name: str) -> str:
    """Escape a ``$defs`` name for a JSON pointer (RFC 6901)."""
    return name.replace("~", "~0").replace("/", "~1")


# --- the command --------------------------------------------------------------------------------


def add_schema_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``regtree schema`` to the subcommands of the ``regtree`` parser."""
    from ._commands import DEFAULT_SECTION

    schema = commands.add_parser(
        "schema",
        help="a JSON Schema for config files, so an editor completes and checks them",
        description=(
            "Print a JSON Schema (draft 2020-12) for config files of a registry tree: every "
            "'type' a config can name, each one's keywords with their types and defaults, and "
            "its summary. Point an editor at it (YAML and JSON) to complete and check configs. "
            f"It describes the file's {DEFAULT_SECTION!r} section, or a file that is a config "
            "itself."
        ),
    )
    schema.add_argument(
        "--registry",
        metavar="NAME",
        default="model",
        help="root name of the registry tree (default: 'model')",
    )
    schema.add_argument(
        "--scope",
        metavar="SCOPE",
        help="the registry of this scope builds the configs, so its names need no scope "
        "(default: the root)",
    )
    schema.add_argument(
        "--section",
        metavar="KEY",
        default=DEFAULT_SECTION,
        help=f"top-level key of a file that holds the config (default: {DEFAULT_SECTION!r})",
    )
    schema.set_defaults(handler=run_schema)


def run_schema(options: argparse.Namespace, roots: Sequence[Registry[Any]]) -> int:
    """Print the JSON Schema of the configs of the chosen registry.

    Args:
        options: The parsed ``schema`` options.
        roots: The root registries.

    Returns:
        The exit status: 0.

    Raises:
        UsageError: ``--registry`` or ``--scope`` names nothing.
    """
    import json

    from ._commands import select_registry

    registry = select_registry(roots, options.registry, options.scope)
    print(json.dumps(config_schema(registry, options.section), indent=2))
    return 0
