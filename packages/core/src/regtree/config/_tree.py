"""A config while it is composed: plain values that remember where each was set.

Reading a file gives a tree of `Table` (a dict), `Items` (a list) and `Leaf` (any other value),
each holding its origin (``'base.yaml:3'``, ``'cfg.toml'``, ``"override 'lr=0.1'"``).
Inheritance and overrides work on that tree, so the origin of every value travels with it;
`to_plain` and `origins_of` take the two apart at the end.

Where no origin is asked for (`load_config`), a file is read as plain data instead (dicts,
lists and values, no `Leaf`), and the same inheritance and overrides work on it: the functions
here that say so take either form, telling a value from a mapping or a list by its type.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import TypeAlias

__all__ = [
    "Items",
    "Leaf",
    "Node",
    "Path",
    "Table",
    "copy_containers",
    "copy_tree",
    "format_dotted",
    "from_plain",
    "origins_of",
    "split_dotted",
    "to_plain",
]


class Table(dict[str, "Node"]):
    """A mapping of the config; ``origin`` is where it was written (kept for an empty one)."""

    __slots__ = ("origin",)

    # dict.__new__ has made the empty mapping; not calling dict.__init__ (which would add
    # nothing) makes a Table in 0.10 us instead of 0.31 us (measured), and a config has many.
    def __init__(self, origin: str) -> None:
        self.origin = origin


class Items(list["Node"]):
    """A list of the config; ``origin`` is where it was written (kept for an empty one)."""

    __slots__ = ("origin",)

    def __init__(self, origin: str) -> None:  # list.__init__ skipped, as in Table
        self.origin = origin


class Leaf:
    """Any value that is not a mapping or a list, with where it was set."""

    __slots__ = ("origin", "value")

    def __init__(self, value: object, origin: str) -> None:
        self.value = value
        self.origin = origin

    def __repr__(self) -> str:
        return f"Leaf({self.value!r}, {self.origin!r})"


if TYPE_CHECKING:
    Node: TypeAlias = Table | Items | Leaf
    # Keys (str) and list indices (int) from the top of a config to one of its values.
    Path: TypeAlias = tuple[str | int, ...]


def from_plain(value: object, origin: str) -> Node:
    """Wrap plain data (as json or tomllib return it) into a tree, every node with ``origin``."""
    if isinstance(value, dict):
        table = Table(origin)
        for key, item in value.items():
            table[key] = from_plain(item, origin)
        return table
    # A tuple of types, not `list | tuple`: isinstance takes a slower path for a union in
    # Python 3.11; measured, the config benchmark's four TOML files become trees in 55 us, not 66.
    if isinstance(value, (list, tuple)):
        items = Items(origin)
        for item in value:  # a loop, not a comprehension: see to_plain
            items.append(from_plain(item, origin))
        return items
    return Leaf(value, origin)


def to_plain(node: object) -> object:
    """Return the plain data of a tree, or a copy of plain data: nothing shared with it."""
    # A leaf's value is taken in place, without a call for it (measured: 19 us instead of 28 us
    # for the config benchmark's merged config), and in loops, not comprehensions, which before
    # Python 3.12 are a function call each (15 us instead of 19 us).
    if isinstance(node, dict):
        table: dict[str, object] = {}
        for key, item in node.items():
            kind = type(item)
            if kind is Leaf:
                table[key] = item.value
            else:
                table[key] = to_plain(item) if kind in _CONTAINERS else item
        return table
    if isinstance(node, list):
        items: list[object] = []
        for item in node:
            kind = type(item)
            if kind is Leaf:
                items.append(item.value)
            else:
                items.append(to_plain(item) if kind in _CONTAINERS else item)
        return items
    return leaf_value(node)


# The types of the mappings and lists of both forms (a set of types: one lookup per value).
_CONTAINERS = frozenset((Table, Items, dict, list))


def leaf_value(node: object) -> object:
    """The value of a leaf of either form: a `Leaf`'s, or a plain value itself."""
    return node.value if isinstance(node, Leaf) else node


def origin_of(node: object) -> str | None:
    """Where a node of a tree was written; None for plain data, which keeps no origins."""
    return node.origin if isinstance(node, Table | Items | Leaf) else None


def line_of(origin: str | None) -> int | None:
    """The line of an origin ``'file:line'``; None for an origin without one, or none."""
    if origin is None:
        return None
    head, _, tail = origin.rpartition(":")
    return int(tail) if head and tail.isdigit() else None


def origins_of(node: Node, path: Path = ()) -> dict[str, str]:
    """Map the dotted path of every leaf (and empty mapping or list) to its origin.

    Args:
        node: The tree.
        path: The path of ``node`` in its config.

    Returns:
        ``{'model.backbone.depth': 'base.yaml:4', 'model.widths.0': 'cfg.toml', ...}``, in the
        order of the config.
    """
    found: dict[str, str] = {}
    stack: list[tuple[Path, Node]] = [(path, node)]
    while stack:
        where, current = stack.pop()
        if isinstance(current, Table | Items) and len(current):
            children = current.items() if isinstance(current, Table) else enumerate(current)
            stack.extend(reversed([((*where, key), child) for key, child in children]))
        else:
            found[format_dotted(where)] = current.origin
    return found


def format_dotted(path: Path) -> str:
    """Join a path with dots, as overrides write it: ``('heads', 1, 'lr')`` -> ``'heads.1.lr'``.

    A key that holds a dot or a bracket (a custom key ``'backbone.layer1'``, as mmdetection's
    configs write them) is written in brackets: ``'custom_keys[backbone.layer1].lr_mult'``, as
    :func:`split_dotted` reads it back.
    """
    text = ""
    for part in path:
        key = str(part)
        if "." in key or "[" in key or "]" in key or not key:
            text += f"[{key}]"
        else:
            text += f".{key}" if text else key
    return text


def split_dotted(text: str) -> list[str]:
    """The parts of a dotted path, as :func:`format_dotted` writes it: ``a.b[c.d].e``.

    A part in brackets is one key, dots and brackets included: it ends at the first ``]`` that
    ends the path or comes before ``.`` or ``[`` (so ``[layers[0]]`` is the key ``layers[0]``).
    An empty part outside brackets or a bracket left open is a PathProblem.
    """
    if "[" not in text and "]" not in text:
        parts = text.split(".")
        if "" in parts:
            raise PathProblem(f"the path {text!r} has an empty key")
        return parts
    parts = []
    position = 0
    while position < len(text):
        if text[position] == "[":
            end = text.find("]", position)
            while end >= 0 and end + 1 < len(text) and text[end + 1] not in ".[":
                end = text.find("]", end + 1)
            if end < 0:
                raise PathProblem(
                    f"the path {text!r} opens a bracket that it does not close before a '.', "
                    "a '[' or its end: write a.b[c.d].e"
                )
            parts.append(text[position + 1 : end])
            position = end + 1
        else:
            end = min(
                (found for found in (text.find(c, position) for c in ".[") if found >= 0),
                default=len(text),
            )
            if end == position:
                raise PathProblem(f"the path {text!r} has an empty key")
            parts.append(text[position:end])
            position = end
        if position < len(text) and text[position] == ".":
            position += 1
            if position == len(text):
                raise PathProblem(f"the path {text!r} has an empty key")
    return parts


_MISSING = object()


class PathProblem(Exception):
    """A dotted path that does not lead where it should; the message names the closest path."""


def every_path(node: object, path: Path = ()) -> list[str]:
    """Return the dotted path of every node below ``node`` (mappings and lists included).

    ``node`` is a tree or plain data (as `descend` takes them).
    """
    found: list[str] = []
    stack: list[tuple[Path, Any]] = [(path, node)]
    while stack:
        where, current = stack.pop()
        if where:
            found.append(format_dotted(where))
        if isinstance(current, dict):
            stack.extend(((*where, key), child) for key, child in current.items())
        elif isinstance(current, list):
            stack.extend(((*where, index), child) for index, child in enumerate(current))
    return found


def closest_path(root: object, dotted: str) -> str | None:
    """Return the existing path of ``root`` closest to ``dotted``, or None when none is close.

    A path that ``dotted`` goes on from (``model`` for ``model.xq``) is not offered: it is there,
    and what is missing is below it.
    """
    from ..naming import closest

    paths = [path for path in every_path(root) if not dotted.startswith((f"{path}.", f"{path}["))]
    near = closest(dotted, paths, count=1)
    return near[0] if near else None


# How many keys of a mapping a message lists where no existing path is close to the one given.
_LISTED_KEYS = 10


def missing_key(
    root: object,
    dotted: str,
    parent: object = None,
    parent_path: Sequence[str] = (),
    adds: str = "",
) -> str:
    """Say that ``dotted`` is not in the config, and what is there instead.

    ``parent`` is the deepest mapping the path reaches (at ``parent_path``), where known. A key
    of it that holds a dot and that the path spells part by part is written in brackets
    (``custom_keys.backbone.layer1.lr_mult`` -> ``custom_keys[backbone.layer1].lr_mult``);
    else the key the path lacks is matched against its keys (``model.dpth`` ->
    ``model.depth``), and where none is close its keys are listed. A path that leaves the config
    at the top, or without ``parent``, is also matched as a whole against every path (``depth``
    -> ``model.depth``); deeper down a whole path is close for its shared start alone
    (``optimizer.nothingclose`` -> ``optimizer.lr``), so the keys there say more.
    ``adds`` (what would add the key) ends the message, unless the key is there in brackets.
    """
    from ..naming import closest

    near: str | None = None
    if isinstance(parent, dict):
        unmet = split_dotted(dotted)[len(parent_path) :]
        for joined in range(len(unmet), 1, -1):  # the longest key with dots first
            key = ".".join(unmet[:joined])
            if key in parent:
                near = format_dotted((*parent_path, key, *unmet[joined:]))
                return f"the config has no key {dotted!r}; the key {key!r} is written {near!r}"
        found = closest(unmet[0], [str(key) for key in parent], count=1)
        if found:
            near = format_dotted((*parent_path, found[0], *unmet[1:]))
    if near is None and not parent_path:
        near = closest_path(root, dotted)
    if near is not None:
        return f"the config has no key {dotted!r} (did you mean {near!r}?){adds}"
    if not isinstance(parent, dict):
        return f"the config has no key {dotted!r}{adds}"
    where = repr(format_dotted(tuple(parent_path))) if parent_path else "the top level"
    keys = [str(key) for key in parent]
    shown = ", ".join(keys[:_LISTED_KEYS]) + (", ..." if len(keys) > _LISTED_KEYS else "")
    held = f"holds {shown}" if keys else "is empty"
    return f"the config has no key {dotted!r} ({where} {held}){adds}"


def index_of(items: list[Any], part: str, where: str, *, allow_end: bool = False) -> int:
    """Read a path part as an index of ``items`` (``-1`` counts from the end).

    Args:
        items: The list the part indexes.
        part: The part as written.
        where: The path of the list, for the message.
        allow_end: Accept ``len(items)`` (one past the last item: an append).

    Raises:
        PathProblem: The part is not an int, or is out of range.
    """
    try:
        index = int(part)
    except ValueError:
        raise PathProblem(
            f"{where!r} is a list, so the part after it is an index, not {part!r}"
        ) from None
    size = len(items)
    position = index + size if index < 0 else index
    if not 0 <= position < size + allow_end:
        valid = f"0 to {size - 1}, or -{size} to -1" if size else "none"
        raise PathProblem(
            f"index {index} of {where!r} is out of range: the list has {size} "
            f"{'item' if size == 1 else 'items'} (indices: {valid})"
        )
    return position


def descend(
    root: Table | dict[str, Any],
    parts: list[str],
    *,
    create: Callable[[Any], Table | dict[str, Any]] | None = None,
    whole: str | None = None,
    fresh: set[int] | None = None,
    adds: str = "",
) -> Any:
    """Follow ``parts`` from ``root`` and return the mapping or list they lead to.

    ``root`` is a tree, or plain data as `to_plain` gives it (mappings and lists the same way,
    any other value a leaf).

    Args:
        root: The config's tree.
        parts: The keys and indices, as written (indices as digits).
        create: For each missing key, makes the empty mapping to add there from the mapping it
            goes in (``+`` and ``++`` overrides); None: a missing key is a problem.
        whole: The whole path being followed (``parts`` may lead to its parent), for messages.
        fresh: The ids of the containers that belong to this tree alone (``root`` among them);
            a container on the path that is not is copied first, so that the one returned can
            be changed (composed trees share their nodes).
        adds: Ends the message of a missing key: what would add it (see `missing_key`).

    Returns:
        The mapping or list (a `Table` or `Items` of a tree, a dict or list of plain data).

    Raises:
        PathProblem: A key is missing (and ``create`` is None), an index is wrong, or the path
            goes through a value that is not a mapping or a list.
    """
    whole = whole or format_dotted(tuple(parts))
    current: Any = root
    for depth, part in enumerate(parts):
        key: str | int = part
        child: Any
        if isinstance(current, dict):
            child = current.get(part, _MISSING)
            if child is _MISSING:
                if create is None:
                    raise PathProblem(missing_key(root, whole, current, parts[:depth], adds))
                child = current[part] = create(current)
                if fresh is not None:
                    fresh.add(id(child))
        else:
            key = index_of(current, part, format_dotted(tuple(parts[:depth])))
            child = current[key]
        # A tuple, not a union (see from_plain): the 20 overrides descend in 7.5 us, not 8.7 us.
        if not isinstance(child, (dict, list)):
            here = format_dotted(tuple(parts[: depth + 1]))
            raise PathProblem(
                f"{here!r} holds {leaf_value(child)!r}, not a mapping or a list, so {whole!r} "
                "does not exist"
            )
        if fresh is not None and id(child) not in fresh:
            child = shallow_copy(child)
            current[key] = child
            fresh.add(id(child))
        current = child
    return current


def shallow_copy(node: dict[str, Any] | list[Any]) -> Any:
    """A new mapping or list of the same kind (and origin) holding the same children."""
    copied: Any
    if isinstance(node, Table):
        copied = Table(node.origin)
        copied.update(node)
    elif isinstance(node, Items):
        copied = Items(node.origin)
        copied.extend(node)
    else:  # plain data
        copied = node.copy()
    return copied


def copy_containers(node: Node) -> Node:
    """Copy the mappings and lists of a tree; its leaves, which never change, are shared."""
    if isinstance(node, Table):
        table = Table(node.origin)
        for key, child in node.items():
            table[key] = copy_containers(child)
        return table
    if isinstance(node, Items):
        items = Items(node.origin)
        items.extend([copy_containers(child) for child in node])
        return items
    return node


def copy_tree(node: object, origin: str | None = None) -> Any:
    """Copy a tree, or plain data; with ``origin``, every node of a tree's copy gets that origin."""
    if isinstance(node, Table):
        table = Table(origin or node.origin)
        for key, child in node.items():
            table[key] = copy_tree(child, origin)
        return table
    if isinstance(node, Items):
        items = Items(origin or node.origin)
        items.extend(copy_tree(child, origin) for child in node)
        return items
    if isinstance(node, Leaf):
        return Leaf(node.value, origin or node.origin)
    return to_plain(node)  # plain data
