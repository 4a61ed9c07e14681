"""YAML files, read with PyYAML's parser and safe constructor under YAML 1.2's core schema (5.1).

Why PyYAML with our own resolvers, rather than a YAML 1.2 library (ruamel.yaml): PyYAML is the
YAML library every deep-learning environment already has (mmengine, Hydra/OmegaConf, torch's
tooling depend on it), it is an optional extra that stays small and C-accelerated, and what it
gets wrong for configs is only the schema: which plain scalars are numbers, booleans and nulls.
A parser whose resolver hands every plain scalar to the core schema (`_scalars`) instead of
PyYAML's YAML 1.1 patterns fixes that, and keeps the safe constructor, which builds nothing but
plain data. PyYAML is imported when a YAML file is read, never at ``import regtree``.
"""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING

from ._bounds import MAX_DEPTH, too_deep
from ._scalars import resolve_plain, tagged_scalar
from ._tree import Items, Leaf, Table

if TYPE_CHECKING:
    from typing import Any

__all__ = ["parse_yaml"]

_CLASSES: tuple[Any, Any] | None = None
# Aliases share nodes; a tree copies them, so nested aliases (a "billion laughs") are capped.
_MAX_NODES = 10**6


class YamlProblem(Exception):
    """YAML that cannot be a config; ``line`` and ``column`` are 1-based (where given).

    ``invalid`` is False for a document that is valid YAML but not a config (nested too deeply).
    """

    def __init__(
        self,
        problem: str,
        line: int | None = None,
        column: int | None = None,
        *,
        invalid: bool = True,
    ) -> None:
        super().__init__(problem)
        self.problem = problem
        self.line = line
        self.column = column
        self.invalid = invalid


def core_schema_classes() -> tuple[Any, Any]:
    """Return PyYAML's parser with YAML 1.2 core resolvers, and its safe constructor likewise.

    The parser (libyaml's, where PyYAML was built with it) composes the document's nodes; the
    constructor is needed only for what `_Composer` does not build itself (merge keys, tags such
    as ``!!set``), so it is a separate object, made for a document that needs it. Measured on
    the config benchmark's four files: composing them with a parser alone takes 233 us, with
    PyYAML's whole safe loader (whose constructor and resolver each set up state) 245 us.

    Raises:
        ImportError: PyYAML is not installed.
    """
    global _CLASSES
    if _CLASSES is not None:
        return _CLASSES
    import yaml

    # Without libyaml, PyYAML's pure-Python safe loader; its constructor part is then unused.
    # (The stubs do not re-export CParser from yaml.cyaml, where PyYAML's own loaders take it.)
    cparser = yaml.cyaml.CParser if yaml.__with_libyaml__ else None  # type: ignore[attr-defined]
    parser_base = cparser or yaml.SafeLoader
    scalar_node, sequence_node = yaml.ScalarNode, yaml.SequenceNode

    class CoreSchemaParser(parser_base):  # type: ignore[misc, valid-type]
        """PyYAML's parser and composer, tagging nodes by the YAML 1.2 core schema."""

        # No path resolvers are ever added to this parser, so the composer's two calls per node
        # to these need not look for any: measured, composing the config benchmark's four files
        # takes 252 us instead of 275 us with PyYAML's versions. Both are C functions whose result
        # is dropped (`operator.is_` takes the two arguments, `tuple` none; a builtin is not
        # bound as a method): 224 us instead of 233 us with no-op Python methods.
        descend_resolver = operator.is_
        ascend_resolver = tuple

        def resolve(self, kind: Any, value: str, implicit: tuple[bool, bool]) -> str:
            # The composer calls this for every node. A plain scalar is only marked here, and
            # resolved once by the core schema as the tree is built (`resolve_plain`). Measured
            # on the config benchmark's four files: composing took 364 us with PyYAML's loop
            # over resolver patterns, 270 us this way; the whole read 12% less.
            if kind is scalar_node:
                if not implicit[0]:
                    return _STR
                # Not in the core schema, but every YAML config user writes `<<: *defaults`.
                return _MERGE if value == "<<" else _PLAIN
            return _SEQ if kind is sequence_node else _MAP

    class CoreSchemaConstructor(yaml.constructor.SafeConstructor):
        """PyYAML's safe constructor with the YAML 1.2 core schema instead of YAML 1.1's."""

        # `_Composer.scalar` converts every scalar itself; these are reached by a collection
        # tagged as a scalar (`!!int [1]`), whose construct_scalar refuses it with PyYAML's own
        # error, reported as invalid YAML.
        def construct_tagged(self, node: Any) -> object:
            return tagged_scalar(_TAGGED[node.tag], self.construct_scalar(node))

        def construct_plain(self, node: Any) -> object:
            return resolve_plain(self.construct_scalar(node))

    constructors = {
        **dict.fromkeys(_TAGGED, CoreSchemaConstructor.construct_tagged),
        _PLAIN: CoreSchemaConstructor.construct_plain,
    }
    for tag, method in constructors.items():
        # The stubs type a constructor's first argument as a whole loader, not a constructor.
        CoreSchemaConstructor.add_constructor(tag, method)  # type: ignore[type-var]
    _CLASSES = CoreSchemaParser, CoreSchemaConstructor
    return _CLASSES


def parse_yaml(filename: str, text: str, *, plain: bool = False) -> object:
    """Parse YAML text into a tree whose every node knows its line (``'file:line'``), or plain data.

    Args:
        filename: The file, as its origins name it.
        text: The file's text.
        plain: Give plain data (dicts, lists, values) instead, without origins.

    Returns:
        The document's tree (or plain data), or None for an empty document.

    Raises:
        ImportError: PyYAML is not installed.
        YamlProblem: The text is not valid YAML, or holds more than one document.
    """
    import yaml

    parser_class, constructor_class = core_schema_classes()
    parser = parser_class(text)
    try:
        root = parser.get_single_node()
        if root is None:
            return None
        return _Composer(constructor_class, filename, text, plain).document(root)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = None if mark is None else mark.line + 1
        if "maximum nesting depth" in (exc.problem or ""):  # libyaml's own bound, at 1000 levels
            raise YamlProblem(too_deep("the file"), line, invalid=False) from None
        parts = [part for part in (exc.context, exc.problem) if part]
        raise YamlProblem(
            "; ".join(parts) or "syntax error", line, None if mark is None else mark.column + 1
        ) from None
    except RecursionError:  # PyYAML's Python composer, without libyaml: far past the bound
        raise YamlProblem(too_deep("the file"), invalid=False) from None
    except yaml.YAMLError as exc:
        raise YamlProblem(" ".join(str(exc).split())) from None
    finally:
        parser.dispose()


_STR = "tag:yaml.org,2002:str"
_SEQ = "tag:yaml.org,2002:seq"
_MAP = "tag:yaml.org,2002:map"
_MERGE = "tag:yaml.org,2002:merge"
# The tag `resolve` gives a plain scalar: what it means is decided by `resolve_plain`.
_PLAIN = "tag:regtree:plain"
# The tags of YAML 1.2's core schema (10.3), and the one `resolve` gives a plain scalar:
# anything else is refused (`_Composer.tagged`).
_KNOWN_TAGS = frozenset(
    f"tag:yaml.org,2002:{name}" for name in ("str", "seq", "map", "null", "bool", "int", "float")
) | {_PLAIN}
# Scalars of explicitly tagged nodes (`!!float 1`), by the tag's name: converted by the core
# schema's forms (`tagged_scalar`) rather than through the constructor's construct_object (its
# bookkeeping is half the time of reading a typical config).
_TAGGED: dict[str, str] = {
    f"tag:yaml.org,2002:{kind}": kind for kind in ("int", "float", "bool", "null")
}


class _Composer:
    """Turn PyYAML's nodes into a tree (or plain data); its constructor builds what they do not."""

    def __init__(self, constructor_class: Any, filename: str, text: str, plain: bool) -> None:
        import yaml

        self.constructor_class = constructor_class
        self.constructor: Any = None
        self.prefix = f"{filename}:"
        # Mappings are searched for merge keys only where the text may hold one: `<<`, or a
        # tag naming merge (`!!merge`). Measured on the config benchmark's four files: their
        # trees are built in 191 us instead of 209 us, and the text test takes 5 us.
        self.merges = "<<" in text or "merge" in text
        self.count = 0
        self.scalar_node = yaml.ScalarNode
        self.mapping_node = yaml.MappingNode
        self.sequence_node = yaml.SequenceNode
        # 0-based line -> 'file:line', for every line up front: measured on the config
        # benchmark's four files, their trees are built in 175 us, not 197 us making each on the
        # first node of its line. Plain data has no origins.
        self.plain = plain
        self.origins: list[str] = []
        if not plain:
            self.origins = [self.prefix + str(number) for number in range(1, text.count("\n") + 2)]

    def document(self, root: Any) -> Any:
        """The tree (or plain data) of the document whose top node is ``root``."""
        if self.merges:
            # Merging adds a merged mapping's pairs to a mapping's own, which may set them again,
            # and changes the nodes, which aliases share: each mapping's own keys are checked
            # first, all at once. Without merges they are checked as the tree is built.
            self.check_unique_keys(root)
        return self.node(root, 0)

    def check_unique_keys(self, root: Any) -> None:
        """Refuse a key written twice in one mapping, in any mapping under ``root``.

        Raises:
            YamlProblem: Naming the key and both lines.
        """
        stack, seen = [root], {id(root)}
        while stack:
            node = stack.pop()
            if type(node) is self.scalar_node:
                continue
            pairs = (
                node.value if type(node) is self.mapping_node else [(None, v) for v in node.value]
            )
            own: set[str] = set()
            for key_node, value_node in pairs:
                if key_node is not None and key_node.tag != _MERGE:
                    key = self.key(key_node)
                    if key in own:
                        raise self.duplicate(node, key, key_node)
                    own.add(key)
                if id(value_node) not in seen:
                    seen.add(id(value_node))
                    stack.append(value_node)

    def duplicate(self, mapping: Any, key: str, again: Any) -> YamlProblem:
        """The problem of ``key`` written again (by the key node ``again``) in ``mapping``."""
        first = next(k for k, _ in mapping.value if k.tag != _MERGE and self.key(k) == key)
        lines = f"lines {first.start_mark.line + 1} and {again.start_mark.line + 1}"
        return YamlProblem(
            f"the key {key!r} appears twice in one mapping ({lines}); YAML keys are unique (a "
            "parser that takes the last one hides the first): keep one",
            again.start_mark.line + 1,
            again.start_mark.column + 1,
        )

    def node(self, node: Any, depth: int) -> Any:
        """The tree (or plain data) of a node."""
        self.count += 1
        kind = type(node)
        if kind is self.scalar_node:
            value = self.scalar(node)
            return value if self.plain else Leaf(value, self.origin(node))
        if self.count > _MAX_NODES:
            raise YamlProblem(
                f"the document expands to more than {_MAX_NODES:,} values (nested aliases?)"
            )
        if depth > MAX_DEPTH:
            # An alias that contains itself (`a: &x [*x]`) is infinite as plain data.
            raise YamlProblem(
                too_deep("the file", "flatten it, or look for an alias that refers to itself"),
                node.start_mark.line + 1,
                invalid=False,
            )
        if kind is self.mapping_node and node.tag == _MAP:
            if self.merges and any(key_node.tag == _MERGE for key_node, _ in node.value):
                self.safe_constructor().flatten_mapping(node)  # merge keys (`<<: *defaults`)
            table: dict[str, Any] = {} if self.plain else Table(self.origin(node))
            for key_node, value_node in node.value:
                # A plain key that is a string (nearly every key) is taken without the call to
                # `key`, which refuses any other: measured on the config benchmark's four files,
                # their trees are built in 146 us instead of 152 us.
                key = resolve_plain(key_node.value) if key_node.tag == _PLAIN else None
                if type(key) is not str:
                    key = self.key(key_node)
                if key in table and not self.merges:  # with merges, `document` checked them
                    raise self.duplicate(node, key, key_node)
                table[key] = self.node(value_node, depth + 1)
            return table
        if kind is self.sequence_node and node.tag == _SEQ:
            items: list[Any] = [] if self.plain else Items(self.origin(node))
            # A loop, not a comprehension (a function call of its own before Python 3.12):
            # measured, the config benchmark's four files are read in 376 us, not 386 us.
            for item in node.value:
                items.append(self.node(item, depth + 1))
            return items
        value = self.tagged(node)
        return value if self.plain else Leaf(value, self.origin(node))

    def tagged(self, node: Any) -> object:
        """A node whose tag the tree does not take: refused, or left to PyYAML's constructor.

        A tag outside the core schema (`!!set`, `!!omap`, `!!timestamp`, `!!binary`, `!local`)
        would give a value that is not plain data (a set, tuples, a datetime, bytes), so it is
        refused; what reaches the constructor is a core tag on the wrong kind of node
        (`!!int [1]`), which it refuses with its own error.

        Raises:
            YamlProblem: the tag is not one of the core schema's.
        """
        if node.tag not in _KNOWN_TAGS:
            tag = node.tag.replace("tag:yaml.org,2002:", "!!", 1)
            raise YamlProblem(
                f"the tag {tag} is not in the YAML 1.2 core schema; a config holds mappings, "
                "lists, strings, numbers, booleans and null (drop the tag, quote the value as "
                "a string, or write a list)",
                node.start_mark.line + 1,
                node.start_mark.column + 1,
            )
        return self.safe_constructor().construct_object(node, deep=True)

    def origin(self, node: Any) -> str:
        """Where a node starts: ``'file:line'``."""
        line: int = node.start_mark.line
        try:
            return self.origins[line]
        except IndexError:  # after the last "\n": PyYAML also breaks lines at "\r" and U+2028
            return self.prefix + str(line + 1)

    def safe_constructor(self) -> Any:
        """The document's constructor, made on first use; it keeps what aliases share shared."""
        if self.constructor is None:
            self.constructor = self.constructor_class()
        return self.constructor

    def scalar(self, node: Any) -> object:
        """A scalar's value by the core schema, plain or tagged.

        Raises:
            YamlProblem: a tagged scalar's text is none of its tag's forms (`!!int abc`), or its
                tag is not in the core schema.
        """
        tag = node.tag
        if tag == _PLAIN:
            return resolve_plain(node.value)
        if tag in (_STR, _MERGE):  # `<<` merges as a key only; a value is the string
            return node.value
        kind = _TAGGED.get(tag)
        if kind is None:
            return self.tagged(node)
        try:
            return tagged_scalar(kind, node.value)
        except ValueError as exc:
            raise YamlProblem(
                str(exc), node.start_mark.line + 1, node.start_mark.column + 1
            ) from None

    def key(self, node: Any) -> str:
        key = self.scalar(node) if type(node) is self.scalar_node else self.tagged(node)
        if not isinstance(key, str):
            raise YamlProblem(
                f"the key {key!r} is not a string; config keys are strings (quote it)",
                node.start_mark.line + 1,
                node.start_mark.column + 1,
            )
        return key
