"""OpenMMLab Python configs (SPEC 5.3), read with ``ast`` and never run.

The file is parsed, never executed, imported or compiled to code: each top-level assignment is
evaluated here, node by node, over plain data. What an OpenMMLab config is made of (literals,
``dict(...)``, lists, names assigned above, ``data_root + '...'``, comprehensions, a few pure
builtins and methods of the values) is understood; anything else (an import, another call or
attribute, ``def``, ``lambda``...) is refused with its line, because only running the file could
give its value. Results are bounded, so a small file cannot ask for a huge value. Values follow
Python's own rules while they are evaluated (a tuple is a tuple: ``str((1, 2))`` is
``'(1, 2)'``), and become config data (tuples as lists) as they leave the evaluator.
"""

from __future__ import annotations

import ast
import re
import string
from collections.abc import Iterator
from typing import TYPE_CHECKING

# Imported with the reader, not when an error is written: loading a config imports nothing.
from ..naming import closest
from ._bounds import MAX_DEPTH, not_unicode, too_deep
from ._errors import ConfigError
from ._scalars import BASE_REFERENCE, NOT_A_REFERENCE, REFERENCE_LIKE
from ._tree import Items, Leaf, Table, copy_containers, line_of

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence, Sized
    from typing import Any, TypeGuard

    from ._tree import Node

__all__ = ["parse_python"]

NOT_RUN = "Python configs are read without being run"
MAX_INT = 2**63
MAX_LENGTH = 10**6
MAX_EXPONENT = 64
_MAX_STEPS = 10**7  # evaluation steps: a loop over nothing still costs time
_MAX_NODES = 10**7  # values in the final config (shared lists are copied at the end)
# mmcv writes a reference as an expression (`backbone={{_base_.model.backbone}}`), which is not
# Python: each becomes a name, turned back into the reference text when evaluated.
_PLACEHOLDER = "__regtree_base_reference_{}__"
_PLACEHOLDER_NAME = re.compile(r"__regtree_base_reference_(\d+)__")

_PURE_BUILTINS: dict[str, Callable[..., object]] = {
    "range": range,
    "len": len,
    "min": min,
    "max": max,
    "sum": sum,
    "abs": abs,
    "round": round,
    "int": int,
    "float": float,
    "str": str,
    "bool": bool,
    "list": list,
    "tuple": tuple,
    "dict": dict,
    "zip": zip,
    "enumerate": enumerate,
    "sorted": sorted,
    "reversed": reversed,
}
_METHODS: dict[type, frozenset[str]] = {
    dict: frozenset({"copy", "get", "keys", "values", "items", "update"}),
    list: frozenset({"copy", "append", "extend", "index"}),
    tuple: frozenset({"index"}),
    str: frozenset(
        {
            "format",
            "join",
            "replace",
            "split",
            "strip",
            "lower",
            "upper",
            "startswith",
            "endswith",
        }
    ),
}
_BINARY: dict[type[ast.operator], str] = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.Div: "/",
    ast.FloorDiv: "//",
    ast.Mod: "%",
    ast.Pow: "**",
}
_COMPARE: dict[type[ast.cmpop], Callable[[object, object], bool]] = {
    ast.Eq: lambda a, b: a == b,
    ast.NotEq: lambda a, b: a != b,
    ast.Lt: lambda a, b: a < b,  # type: ignore[operator]
    ast.LtE: lambda a, b: a <= b,  # type: ignore[operator]
    ast.Gt: lambda a, b: a > b,  # type: ignore[operator]
    ast.GtE: lambda a, b: a >= b,  # type: ignore[operator]
    ast.In: lambda a, b: a in b,  # type: ignore[operator]
    ast.NotIn: lambda a, b: a not in b,  # type: ignore[operator]
    ast.Is: lambda a, b: a is b,
    ast.IsNot: lambda a, b: a is not b,
}
_STATEMENTS: dict[type[ast.AST], str] = {
    ast.Import: "an import",
    ast.ImportFrom: "an import",
    ast.FunctionDef: "a function definition (def)",
    ast.AsyncFunctionDef: "a function definition (async def)",
    ast.ClassDef: "a class definition",
    ast.With: "a 'with' block",
    ast.AsyncWith: "a 'with' block",
    ast.For: "a 'for' loop",
    ast.AsyncFor: "a 'for' loop",
    ast.While: "a 'while' loop",
    ast.If: "an 'if' statement",
    ast.Try: "a 'try' statement",
    ast.Delete: "a 'del' statement",
    ast.Global: "a 'global' statement",
    ast.Nonlocal: "a 'nonlocal' statement",
    ast.Assert: "an 'assert' statement",
    ast.Raise: "a 'raise' statement",
    ast.Return: "a 'return' statement",
    ast.Match: "a 'match' statement",
}


class _Tuple(Items):
    """A tuple while a config is evaluated: a list of nodes that Python's rules for tuples govern.

    ``str((1333, 800))`` is ``'(1333, 800)'``, ``(1, 2) == [1, 2]`` is False and ``endswith``
    takes a tuple, as in mmcv, which runs the file; a config holds lists, so each tuple becomes
    one as it leaves the evaluator (`_Result`). It cannot be changed in place.
    """

    __slots__ = ()


class _Refused(Exception):
    """A construct that only running the file would give a value to."""

    def __init__(self, node: ast.AST, construct: str) -> None:
        super().__init__(construct)
        self.node = node
        self.construct = construct


class _Invalid(Exception):
    """An allowed construct that fails on its values (a bound, a wrong type, an unknown name)."""

    def __init__(self, node: ast.AST, problem: str) -> None:
        super().__init__(problem)
        self.node = node
        self.problem = problem


def parse_python(filename: str, text: str) -> Table:
    """Read an OpenMMLab-style Python config into a tree, without running any of it.

    Args:
        filename: The file, as origins and errors name it.
        text: The file's source.

    Returns:
        The top-level names (except those starting with ``__``) with their values, in the order
        of their first assignment; ``{{_base_.a.b}}`` references are left as their text, for the
        inheritance step to replace.

    Raises:
        ConfigError: The source is not valid Python, uses a construct that needs running (the
            message names the line and the construct and says that Python configs are read
            without being run), or asks for a value beyond the bounds.
    """
    references: list[str] = []

    def placeholder(found: re.Match[str]) -> str:
        references.append(found.group(0))
        return _PLACEHOLDER.format(len(references) - 1)

    source = BASE_REFERENCE.sub(placeholder, text)
    try:
        module = ast.parse(source, filename=filename)
    except SyntaxError as exc:
        raise ConfigError(
            filename, f"invalid Python: {exc.msg}", exc.lineno, exc.offset or None
        ) from None
    except (RecursionError, MemoryError, ValueError) as exc:
        problem = "nests too deeply" if isinstance(exc, RecursionError | MemoryError) else exc
        raise ConfigError(filename, f"invalid Python: {problem}") from None
    evaluator = _Evaluator(filename, references)
    try:
        return evaluator.module(module)
    except _Refused as exc:
        line = getattr(exc.node, "lineno", None)
        raise ConfigError(
            filename,
            f"{exc.construct} is not allowed: {NOT_RUN}, so a value may only be data (literals, "
            "dict(), lists, names assigned above, operators, comprehensions and a few pure "
            "builtins and methods)",
            line,
        ) from None
    except _Invalid as exc:
        raise ConfigError(filename, exc.problem, getattr(exc.node, "lineno", None)) from None
    except RecursionError:
        raise ConfigError(filename, "the config's expressions nest too deeply") from None


class _Evaluator:
    """Evaluate a module's statements over tree nodes, as Python would bind the names."""

    def __init__(self, filename: str, references: list[str]) -> None:
        self.filename = filename
        self.references = references
        self.names: dict[str, Node] = {}
        self.steps = 0
        self.origins: dict[int, str] = {}  # line -> 'file:line', made once per line

    # --- statements ---------------------------------------------------------------------------

    def module(self, module: ast.Module) -> Table:
        for statement in module.body:
            self.statement(statement)
        table = Table(self.filename)
        result = _Result(self.filename)
        for name, value in self.names.items():
            if not name.startswith("__"):
                table[name] = result.value(name, value)
        return table

    def statement(self, statement: ast.stmt) -> None:
        if isinstance(statement, ast.Assign):
            value = self.expr(statement.value, self.names)
            for target in statement.targets:
                self.assign(target, value, self.names)
        elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
            self.assign(statement.target, self.expr(statement.value, self.names), self.names)
        elif isinstance(statement, ast.AugAssign):
            current = self.expr(_as_load(statement.target), self.names)
            operand = self.expr(statement.value, self.names)
            if _is_list(current) and isinstance(statement.op, ast.Add):
                # `x += ...` extends the list x itself, by any iterable, as list.__iadd__ does.
                extension = self.iterable(statement.value, operand)
                _check_size(statement, len(current) + len(extension), "list")
                current.extend(extension)
                value = current
            else:
                value = self.binary(statement, statement.op, current, operand)
            self.assign(statement.target, value, self.names)
        elif isinstance(statement, ast.Expr):
            if isinstance(statement.value, ast.Constant) and isinstance(statement.value.value, str):
                return  # a docstring or a comment written as a string
            if not isinstance(statement.value, ast.Call):
                raise _Refused(statement, f"the statement {_source(statement)!r}")
            self.expr(statement.value, self.names)  # a method such as cfg.update(...)
        elif isinstance(statement, ast.Pass):
            return
        else:
            construct = _STATEMENTS.get(type(statement), f"the statement {_source(statement)!r}")
            raise _Refused(statement, construct)

    def assign(self, target: ast.expr, value: Node, names: dict[str, Node]) -> None:
        if isinstance(target, ast.Name):
            names[target.id] = value
        elif isinstance(target, ast.Tuple | ast.List):
            if any(isinstance(part, ast.Starred) for part in target.elts):
                raise _Invalid(
                    target,
                    f"a starred assignment ('{_source(target).strip('()')} = ...') is not "
                    "supported; unpack "
                    "into one name per item, or take a slice (rest = items[1:])",
                )
            if not isinstance(value, Items) or len(value) != len(target.elts):
                raise _Invalid(
                    target,
                    f"cannot unpack {_show(value)} into {len(target.elts)} names",
                )
            for part, item in zip(target.elts, value, strict=True):
                self.assign(part, item, names)
        elif isinstance(target, ast.Subscript):
            container = self.expr(target.value, names)
            key = self.expr(target.slice, names)
            if isinstance(container, Table) and isinstance(key, Leaf):
                container[self.key(target.slice, key)] = value
            elif _is_list(container) and isinstance(key, Leaf):
                container[self.index(target, container, key)] = value
            elif isinstance(container, _Tuple):
                raise _Invalid(
                    target,
                    f"cannot assign an item of {_show(container)}: a tuple cannot be changed "
                    "(write a list, [...], to change it)",
                )
            else:
                raise _Invalid(target, f"cannot assign an item of {_show(container)}")
        else:
            raise _Refused(target, f"an assignment to {_source(target)!r}")

    # --- expressions --------------------------------------------------------------------------

    def expr(self, node: ast.expr, names: Mapping[str, Node]) -> Node:
        self.steps += 1
        if self.steps > _MAX_STEPS:
            raise _Invalid(node, f"evaluating the config takes more than {_MAX_STEPS:,} steps")
        method = _EXPRESSIONS.get(type(node))
        if method is None:
            if isinstance(node, ast.Set) and REFERENCE_LIKE.match(_source(node)):
                raise _Invalid(node, f"{_source(node)!r} {NOT_A_REFERENCE}")  # `{{_base_.l[0]}}`
            raise _Refused(node, _describe_expression(node))
        result: Node = method(self, node, names)
        return result

    def origin(self, node: ast.AST) -> str:
        line: int = getattr(node, "lineno", 1)
        found = self.origins.get(line)
        if found is None:
            found = self.origins[line] = f"{self.filename}:{line}"
        return found

    def leaf(self, node: ast.AST, value: object) -> Node:
        """Wrap a computed value, checking the bounds."""
        _check_bounds(node, value)
        return _to_node(value, self.origin(node))

    def expr_Constant(self, node: ast.Constant, names: Mapping[str, Node]) -> Node:
        value = node.value
        if value is Ellipsis or isinstance(value, bytes | complex):
            raise _Refused(node, f"the literal {_source(node)!r}")
        if isinstance(value, str):
            if "__regtree_base_reference_" in value:
                value = self.restore(value)
            _check_text(node, value)
        elif isinstance(value, int) and not -MAX_INT <= value <= MAX_INT:
            raise _Invalid(node, f"the int {value!r} is beyond 2**63 in magnitude")
        return Leaf(value, self.origin(node))

    def restore(self, text: str) -> str:
        """Put back the references that were written inside a string."""
        return _PLACEHOLDER_NAME.sub(lambda m: self.references[int(m.group(1))], text)

    def expr_Name(self, node: ast.Name, names: Mapping[str, Node]) -> Node:
        found = _PLACEHOLDER_NAME.fullmatch(node.id)
        if found is not None:
            return Leaf(self.references[int(found.group(1))], self.origin(node))
        if node.id in names:
            return names[node.id]
        if node.id in _PURE_BUILTINS:
            raise _Refused(node, f"the builtin {node.id!r} used as a value")
        near = closest(node.id, [name for name in names if not name.startswith("__")], count=1)
        hint = f"; did you mean {near[0]!r}?" if near else ""
        raise _Invalid(
            node,
            f"the name {node.id!r} is not assigned above{hint} (a base's names are not visible "
            "in the file: use {{_base_.name}}; and nothing is imported, because " + NOT_RUN + ")",
        )

    def expr_Dict(self, node: ast.Dict, names: Mapping[str, Node]) -> Node:
        table = Table(self.origin(node))
        for key_node, value_node in zip(node.keys, node.values, strict=True):
            if key_node is None:  # {**other}
                table.update(self.mapping(value_node, self.expr(value_node, names)))
            else:
                key = self.key(key_node, self.expr(key_node, names))
                table[key] = self.expr(value_node, names)
        return table

    def expr_List(self, node: ast.List | ast.Tuple, names: Mapping[str, Node]) -> Node:
        items = (_Tuple if isinstance(node, ast.Tuple) else Items)(self.origin(node))
        for element in node.elts:
            if isinstance(element, ast.Starred):
                items.extend(self.iterable(element, self.expr(element.value, names)))
            else:
                items.append(self.expr(element, names))
        _check_length(node, items)
        return items

    expr_Tuple = expr_List

    def expr_Subscript(self, node: ast.Subscript, names: Mapping[str, Node]) -> Node:
        container = self.expr(node.value, names)
        if isinstance(node.slice, ast.Slice):
            parts = [
                None if part is None else self.integer(part, self.expr(part, names))
                for part in (node.slice.lower, node.slice.upper, node.slice.step)
            ]
            chosen = slice(*parts)
            if isinstance(container, Items):
                items = type(container)(self.origin(node))  # a tuple's slice is a tuple
                items.extend(self.sliced(node, container, chosen))
                return items
            if isinstance(container, Leaf) and isinstance(container.value, str):
                return self.leaf(node, self.sliced(node, container.value, chosen))
            raise _Invalid(node, f"cannot slice {_show(container)}")
        key = self.expr(node.slice, names)
        if isinstance(container, Table):
            name = self.key(node.slice, key)
            if name not in container:
                near = closest(name, list(container), count=1)
                hint = f"; did you mean {near[0]!r}?" if near else ""
                raise _Invalid(node, f"the dict has no key {name!r}{hint}")
            return container[name]
        if isinstance(container, Items):
            return container[self.index(node, container, key)]
        if isinstance(container, Leaf) and isinstance(container.value, str):
            text = container.value
            position = self.integer(node.slice, key)
            if not -len(text) <= position < len(text):
                raise _Invalid(node, f"index {position} is out of range for {_show(container)}")
            return self.leaf(node, text[position])
        raise _Invalid(node, f"cannot index {_show(container)}")

    def sliced(self, node: ast.Subscript, sequence: Sequence[Any], chosen: slice) -> Any:
        try:
            return sequence[chosen]
        except ValueError as exc:  # a step of 0
            raise _Invalid(
                node,
                f"the slice {_source(node.slice)!r} cannot be taken: {exc} (use a step such "
                "as 1, or -1 to reverse)",
            ) from None

    def expr_IfExp(self, node: ast.IfExp, names: Mapping[str, Node]) -> Node:
        test = _truth(self.expr(node.test, names))
        return self.expr(node.body if test else node.orelse, names)

    def expr_UnaryOp(self, node: ast.UnaryOp, names: Mapping[str, Node]) -> Node:
        operand = _python(self.expr(node.operand, names))
        if isinstance(node.op, ast.Not):
            return self.leaf(node, not operand)
        if isinstance(node.op, ast.UAdd | ast.USub) and _is_number(operand):
            value = operand if isinstance(node.op, ast.UAdd) else -operand
            return self.leaf(node, value)
        symbol = {ast.UAdd: "+", ast.USub: "-", ast.Invert: "~"}[type(node.op)]
        if isinstance(node.op, ast.Invert):
            raise _Refused(node, "the operator '~'")
        raise _Invalid(node, f"unary {symbol} needs a number, got {_show_plain(operand)}")

    def expr_BoolOp(self, node: ast.BoolOp, names: Mapping[str, Node]) -> Node:
        result = self.expr(node.values[0], names)
        for value_node in node.values[1:]:
            truth = _truth(result)
            if truth if isinstance(node.op, ast.Or) else not truth:
                return result
            result = self.expr(value_node, names)
        return result

    def expr_Compare(self, node: ast.Compare, names: Mapping[str, Node]) -> Node:
        left = _python(self.expr(node.left, names))
        for operator, right_node in zip(node.ops, node.comparators, strict=True):
            right = _python(self.expr(right_node, names))
            if isinstance(operator, ast.Is | ast.IsNot) and not (left is None or right is None):
                # `is` between two computed values depends on object identity: only `is None`.
                raise _Refused(node, "'is' between two values other than None")
            try:
                holds = _COMPARE[type(operator)](left, right)
            except TypeError as exc:
                raise _Invalid(node, f"cannot compare: {exc}") from None
            if not holds:
                return self.leaf(node, False)
            left = right
        return self.leaf(node, True)

    def expr_BinOp(self, node: ast.BinOp, names: Mapping[str, Node]) -> Node:
        left = self.expr(node.left, names)
        right = self.expr(node.right, names)
        return self.binary(node, node.op, left, right)

    def binary(self, node: ast.AST, operator: ast.operator, left: Node, right: Node) -> Node:
        symbol = _BINARY.get(type(operator))
        if symbol is None:
            raise _Refused(node, f"the operator {_operator_text(operator)!r}")
        a, b = _python(left), _python(right)
        if _is_number(a) and _is_number(b):
            if symbol == "**" and b > MAX_EXPONENT:
                raise _Invalid(node, f"the exponent {b!r} is above {MAX_EXPONENT}")
            try:
                value = _arithmetic(symbol, a, b)
            except (ArithmeticError, ValueError) as exc:
                raise _Invalid(node, f"{_show_plain(a)} {symbol} {_show_plain(b)}: {exc}") from None
            return self.leaf(node, value)
        if symbol == "+" and type(a) is type(b) and isinstance(a, str):
            _check_size(node, len(a) + len(b), "str")
            return self.leaf(node, a + b)
        if symbol == "+" and isinstance(left, Items) and type(left) is type(right):
            _check_size(node, len(left) + len(right), _kind(left))
            items = type(left)(self.origin(node))
            items.extend([*left, *right])
            return items
        if symbol == "*":
            sequence, count = (left, b) if isinstance(b, int) else (right, a)
            if isinstance(count, int) and not isinstance(count, bool):
                if isinstance(sequence, Items):
                    _check_size(node, len(sequence) * max(count, 0), _kind(sequence))
                    items = type(sequence)(self.origin(node))
                    items.extend(list(sequence) * count)
                    return items
                if isinstance(sequence, Leaf) and isinstance(sequence.value, str):
                    _check_size(node, len(sequence.value) * max(count, 0), "str")
                    return self.leaf(node, sequence.value * count)
        raise _Invalid(
            node,
            f"the operator {symbol!r} is not defined for {_show_plain(a)} and {_show_plain(b)} "
            "here (numbers take + - * / // % **; str, lists and tuples take + of their own kind "
            "and * by an int)",
        )

    def expr_JoinedStr(self, node: ast.JoinedStr, names: Mapping[str, Node]) -> Node:
        parts: list[str] = []
        # Formatted as str.format formats, and counted there: many wide fields add up.
        formatter = _DataFormatter(node)
        for value in node.values:
            if isinstance(value, ast.Constant):
                parts.append(self.restore(str(value.value)))
                continue
            assert isinstance(value, ast.FormattedValue)
            plain = _python(self.expr(value.value, names))
            if value.conversion == ord("r"):
                plain = repr(plain)
            elif value.conversion == ord("s"):
                plain = str(plain)
            elif value.conversion == ord("a"):
                plain = ascii(plain)
            spec = ""
            if value.format_spec is not None:
                spec = _python(self.expr(value.format_spec, names))
            parts.append(formatter.formatted(value, plain, spec))
        return self.leaf(node, "".join(parts))

    def expr_ListComp(
        self, node: ast.ListComp | ast.GeneratorExp, names: Mapping[str, Node]
    ) -> Node:
        items = Items(self.origin(node))
        for scope in self.comprehension(node, node.generators, names):
            items.append(self.expr(node.elt, scope))
            _check_length(node, items)
        return items

    expr_GeneratorExp = expr_ListComp  # read as a list (the argument of sum(), tuple()...)

    def expr_DictComp(self, node: ast.DictComp, names: Mapping[str, Node]) -> Node:
        table = Table(self.origin(node))
        for scope in self.comprehension(node, node.generators, names):
            key = self.key(node.key, self.expr(node.key, scope))
            table[key] = self.expr(node.value, scope)
            _check_length(node, table)
        return table

    def comprehension(
        self,
        node: ast.expr,
        generators: list[ast.comprehension],
        names: Mapping[str, Node],
        depth: int = 0,
    ) -> Iterator[dict[str, Node]]:
        generator = generators[depth]
        if generator.is_async:
            raise _Refused(node, "an async comprehension")
        scope = dict(names)
        for item in self.iterable(generator.iter, self.expr(generator.iter, scope)):
            self.steps += 1
            if self.steps > _MAX_STEPS:
                raise _Invalid(node, f"evaluating the config takes more than {_MAX_STEPS:,} steps")
            self.assign(generator.target, item, scope)
            if all(_truth(self.expr(test, scope)) for test in generator.ifs):
                if depth + 1 == len(generators):
                    yield scope
                else:
                    yield from self.comprehension(node, generators, scope, depth + 1)

    def expr_Call(self, node: ast.Call, names: Mapping[str, Node]) -> Node:
        if isinstance(node.func, ast.Attribute):
            owner = node.func.value
            unknown = isinstance(owner, ast.Name) and owner.id not in names
            if unknown and not _PLACEHOLDER_NAME.fullmatch(owner.id):  # type: ignore[attr-defined]
                raise _Refused(node, f"a call of {_source(node.func)!r}")
            return self.method(node, self.expr(owner, names), node.func.attr, names)
        if not isinstance(node.func, ast.Name) or node.func.id not in _PURE_BUILTINS:
            raise _Refused(node, f"a call of {_source(node.func)!r}")
        if node.func.id in names:
            raise _Refused(node, f"a call of {node.func.id!r}, which the file assigned")
        name = node.func.id
        if name == "dict":
            return self.call_dict(node, names)
        args: list[object] = []
        for argument in node.args:
            if isinstance(argument, ast.Starred):
                spread = _python(self.expr(argument.value, names))
                if not isinstance(spread, list | tuple | str | dict):
                    raise _Invalid(argument, f"'*' needs a list, got {_show_plain(spread)}")
                args.extend(spread)
            else:
                args.append(_python(self.expr(argument, names)))
        kwargs: dict[str, object] = {}
        for keyword in node.keywords:
            if keyword.arg is None:
                raise _Refused(node, f"'**' in a call of {name!r}")
            kwargs[keyword.arg] = _python(self.expr(keyword.value, names))
        if name == "range":
            try:
                span = range(*args, **kwargs)  # type: ignore[call-overload]
            except (TypeError, ValueError) as exc:
                raise _Invalid(node, f"range(): {exc}") from None
            try:
                size = len(span)
            except OverflowError:
                size = MAX_LENGTH + 1
            _check_size(node, size, "list")
            return self.leaf(node, list(span))
        try:
            value = _PURE_BUILTINS[name](*args, **kwargs)
        except (TypeError, ValueError, ArithmeticError) as exc:
            raise _Invalid(node, f"{name}(): {exc}") from None
        if isinstance(value, Iterator):  # zip, enumerate, reversed of a list, a str or a range
            value = list(value)
        return self.leaf(node, value)

    def call_dict(self, node: ast.Call, names: Mapping[str, Node]) -> Node:
        table = Table(self.origin(node))
        if len(node.args) > 1:
            raise _Invalid(node, "dict() takes at most one positional argument")
        for argument in node.args:
            value = self.expr(argument, names)
            if isinstance(value, Items):
                for pair in value:
                    if not isinstance(pair, Items) or len(pair) != 2:
                        raise _Invalid(node, "dict() of a list needs pairs [key, value]")
                    table[self.key(argument, pair[0])] = pair[1]
            elif isinstance(value, Table):
                table.update(value)
            else:
                raise _Invalid(
                    node,
                    "dict() takes keyword arguments or one mapping (or a list of [key, value] "
                    f"pairs), got {_show(value)}",
                )
        for keyword in node.keywords:
            value = self.expr(keyword.value, names)
            if keyword.arg is None:
                table.update(self.mapping(keyword.value, value))
            else:
                table[keyword.arg] = value
        return table

    def method(self, node: ast.Call, target: Node, name: str, names: Mapping[str, Node]) -> Node:
        kind: type | None = None
        if isinstance(target, Table | Items):
            kind = (
                dict if isinstance(target, Table) else tuple if isinstance(target, _Tuple) else list
            )
        if kind is None and isinstance(target, Leaf) and isinstance(target.value, str):
            kind = str
        if kind is tuple and name in _METHODS[list] - _METHODS[tuple]:
            raise _Invalid(
                node,
                f"a tuple has no method {name!r}: a tuple cannot be changed (write a list, "
                "[...], to change it)",
            )
        if kind is None or name not in _METHODS[kind]:
            owner = f"a {kind.__name__}" if kind else _show(target)
            raise _Refused(node, f"the method {name!r} of {owner} (in {_source(node.func)!r})")
        if any(isinstance(argument, ast.Starred) for argument in node.args):
            raise _Refused(node, f"'*' in a call of {name!r}")
        if any(k.arg is None for k in node.keywords) and name != "update":
            raise _Refused(node, f"'**' in a call of {name!r}")
        args = [self.expr(argument, names) for argument in node.args]
        keywords = [(k.arg, self.expr(k.value, names)) for k in node.keywords]
        kwargs = {key: value for key, value in keywords if key is not None}
        if isinstance(target, Table):
            return self.dict_method(node, target, name, args, keywords)
        if isinstance(target, Items):
            return self.list_method(node, target, name, args)
        assert isinstance(target, Leaf)
        return self.str_method(node, target.value, name, args, kwargs)  # type: ignore[arg-type]

    def dict_method(
        self,
        node: ast.Call,
        target: Table,
        name: str,
        args: list[Node],
        keywords: list[tuple[str | None, Node]],
    ) -> Node:
        origin = self.origin(node)
        if name == "copy":
            copied = Table(origin)
            copied.update(target)
            return copied
        if name == "get":
            if not 1 <= len(args) <= 2:
                raise _Invalid(node, "get() takes a key and an optional default")
            key = _python(args[0])
            if not _hashable(key):  # as in Python, where a dict key must be hashable
                raise _Invalid(
                    node,
                    f"get(): a dict key cannot be {_show_plain(key)} (unhashable "
                    f"{type(key).__name__}); config keys are str, such as get('name')",
                )
            if isinstance(key, str) and key in target:
                return target[key]
            return args[1] if len(args) == 2 else Leaf(None, origin)
        if name == "keys":
            return _to_node(list(target), origin)
        if name == "values":
            items = Items(origin)
            items.extend(target.values())
            return items
        if name == "items":
            items = Items(origin)
            for key, value in target.items():
                pair = _Tuple(origin)
                pair.extend([Leaf(key, origin), value])
                items.append(pair)
            return items
        # update(other, **kwargs)
        if len(args) > 1:
            raise _Invalid(node, "update() takes at most one positional argument")
        for value in args:
            target.update(self.mapping(node, value))
        for key, value in keywords:
            if key is None:
                target.update(self.mapping(node, value))
            else:
                target[key] = value
        return Leaf(None, origin)

    def list_method(self, node: ast.Call, target: Items, name: str, args: list[Node]) -> Node:
        origin = self.origin(node)
        if name == "copy":
            copied = Items(origin)
            copied.extend(target)
            return copied
        if len(args) != 1:
            raise _Invalid(node, f"{name}() takes one argument")
        if name == "append":
            target.append(args[0])
        elif name == "extend":
            target.extend(self.iterable(node, args[0]))
        else:  # index
            wanted = _python(args[0])
            for position, item in enumerate(target):
                if _python(item) == wanted:
                    return Leaf(position, origin)
            raise _Invalid(node, f"index(): {_show_plain(wanted)} is not in the list")
        _check_length(node, target)
        return Leaf(None, origin)

    def str_method(
        self,
        node: ast.Call,
        text: str,
        name: str,
        args: list[Node],
        kwargs: dict[str, Node],
    ) -> Node:
        plain_args = [_python(argument) for argument in args]
        plain_kwargs = {str(key): _python(value) for key, value in kwargs.items()}
        if name == "format":
            try:
                return self.leaf(node, _DataFormatter(node).vformat(text, plain_args, plain_kwargs))
            except (TypeError, ValueError, KeyError, IndexError) as exc:
                raise _Invalid(node, f"str.format(): {exc}") from None
        if name == "replace" and len(plain_args) >= 2:
            old, new = plain_args[0], plain_args[1]
            if isinstance(old, str) and isinstance(new, str):
                count = text.count(old) if old else len(text) + 1
                _check_size(node, len(text) + count * max(len(new) - len(old), 0), "str")
        elif name == "join" and plain_args and isinstance(plain_args[0], list | tuple):
            pieces = plain_args[0]
            total = sum(len(p) for p in pieces if isinstance(p, str)) + len(text) * len(pieces)
            _check_size(node, total, "str")
        try:
            value = getattr(text, name)(*plain_args, **plain_kwargs)
        except (TypeError, ValueError, KeyError, IndexError, MemoryError, OverflowError) as exc:
            raise _Invalid(node, f"str.{name}(): {exc}") from None
        return self.leaf(node, value)

    # --- helpers ------------------------------------------------------------------------------

    def key(self, node: ast.AST, key: Node) -> str:
        if isinstance(key, Leaf) and isinstance(key.value, str):
            return key.value
        written = repr(str(key.value)) if isinstance(key, Leaf) else "'name'"
        raise _Invalid(
            node,
            f"a config key must be a str, got {_show(key)}: a config is plain data whose keys "
            "are names, as in JSON, TOML and YAML configs; write the key as a str "
            f"({written}) or use a list, where the position is the key",
        )

    def index(self, node: ast.AST, items: Items, key: Node) -> int:
        position = self.integer(node, key)
        if not -len(items) <= position < len(items):
            raise _Invalid(node, f"index {position} is out of range for a list of {len(items)}")
        return position

    def integer(self, node: ast.AST, value: Node) -> int:
        plain = _python(value)
        if isinstance(plain, int) and not isinstance(plain, bool):
            return plain
        raise _Invalid(node, f"an index must be an int, got {_show_plain(plain)}")

    def mapping(self, node: ast.AST, value: Node) -> Table:
        if isinstance(value, Table):
            return value
        raise _Invalid(node, f"'**' needs a dict, got {_show(value)}")

    def iterable(self, node: ast.AST, value: Node) -> list[Node]:
        if isinstance(value, Items):
            return list(value)
        if isinstance(value, Table):
            return [Leaf(key, value.origin) for key in value]
        if isinstance(value, Leaf) and isinstance(value.value, str):
            return [Leaf(char, value.origin) for char in value.value]
        raise _Invalid(node, f"cannot iterate over {_show(value)}")


_EXPRESSIONS: dict[type[ast.AST], Callable[[_Evaluator, Any, Mapping[str, Node]], Node]] = {
    getattr(ast, name.removeprefix("expr_")): method
    for name, method in vars(_Evaluator).items()
    if name.startswith("expr_")
}


def _as_load(target: ast.expr) -> ast.expr:
    """The target of ``x += ...`` read as a value (the same node: evaluation ignores ctx)."""
    if not isinstance(target, ast.Name | ast.Subscript):
        raise _Refused(target, f"an assignment to {_source(target)!r}")
    return target


def _arithmetic(symbol: str, a: object, b: object) -> object:
    x, y = a, b
    if symbol == "+":
        return x + y  # type: ignore[operator]
    if symbol == "-":
        return x - y  # type: ignore[operator]
    if symbol == "*":
        return x * y  # type: ignore[operator]
    if symbol == "/":
        return x / y  # type: ignore[operator]
    if symbol == "//":
        return x // y  # type: ignore[operator]
    if symbol == "%":
        return x % y  # type: ignore[operator]
    return x**y  # type: ignore[operator]


def _python(node: Node) -> Any:
    """The value of a node as the file's own code sees it: dicts, lists, tuples, values."""
    if isinstance(node, Leaf):
        return node.value
    if isinstance(node, Table):
        return {key: _python(child) for key, child in node.items()}
    values = [_python(child) for child in node]
    return tuple(values) if isinstance(node, _Tuple) else values


def _to_node(value: object, origin: str) -> Node:
    """Wrap a computed value (dicts, lists, tuples, values) into nodes, each with ``origin``."""
    if isinstance(value, dict):
        table = Table(origin)
        for key, item in value.items():
            table[key] = _to_node(item, origin)
        return table
    if isinstance(value, list | tuple):
        items = (_Tuple if isinstance(value, tuple) else Items)(origin)
        items.extend([_to_node(item, origin) for item in value])
        return items
    return Leaf(value, origin)


def _truth(node: Node) -> bool:
    """``bool`` of a node's value, without building the value."""
    return bool(node.value) if isinstance(node, Leaf) else bool(len(node))


def _is_list(node: Node) -> TypeGuard[Items]:
    return isinstance(node, Items) and not isinstance(node, _Tuple)


def _kind(node: Node) -> str:
    """How a message names a node's kind: ``'tuple'``, ``'list'``, ``'dict'``."""
    return "tuple" if isinstance(node, _Tuple) else "dict" if isinstance(node, Table) else "list"


def _hashable(value: object) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


def _is_number(value: object) -> bool:
    return isinstance(value, int | float)  # a bool too, as in Python


def _check_bounds(node: ast.AST, value: object) -> None:
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_INT:
        raise _Invalid(node, f"the int {value!r} is beyond 2**63 in magnitude")
    if isinstance(value, str):
        _check_text(node, value)
    elif isinstance(value, list | tuple | dict):
        _check_length(node, value)


def _check_text(node: ast.AST, text: str) -> None:
    """A str literal or result: bounded, and Unicode text (`'{:c}'.format(0xd800)` is not)."""
    _check_length(node, text)
    problem = not_unicode(text)
    if problem is not None:
        raise _Invalid(node, problem)


def _check_length(node: ast.AST, value: Sized) -> None:
    kind = "str" if isinstance(value, str) else "dict" if isinstance(value, dict) else "list"
    if isinstance(value, tuple | _Tuple):
        kind = "tuple"
    _check_size(node, len(value), kind)


def _check_size(node: ast.AST, size: int, kind: str) -> None:
    if size > MAX_LENGTH:
        raise _Invalid(node, f"the {kind} would be longer than {MAX_LENGTH:,}")


class _DataFormatter(string.Formatter):
    """``str.format`` over config values, formatting data and nothing more.

    A field names an argument, never an attribute or item of one. A nested field
    (``'{:>{w}}'``) is substituted first, as in an f-string, and each width and precision is then
    checked, like the length of the whole result, against ``MAX_LENGTH``.
    """

    def __init__(self, node: ast.AST) -> None:
        self.node = node
        self.length = 0

    def get_field(self, field_name: str, args: Sequence[Any], kwargs: Mapping[str, Any]) -> Any:
        if "." in field_name or "[" in field_name:
            raise _Refused(
                self.node, f"the format field {{{field_name}}} (attribute or item access)"
            )
        return super().get_field(field_name, args, kwargs)

    def get_value(self, key: int | str, args: Sequence[Any], kwargs: Mapping[str, Any]) -> Any:
        if isinstance(key, int) and not key < len(args):
            raise _Invalid(
                self.node,
                f"str.format(): the field {{{key}}} needs positional argument {key}, but "
                f"format() got {len(args)} positional argument(s) (fields without a name count "
                "from 0)",
            )
        if isinstance(key, str) and key not in kwargs:
            raise _Invalid(
                self.node,
                f"str.format(): the field {{{key}}} needs a keyword argument {key}=..., which "
                f"was not given",
            )
        return super().get_value(key, args, kwargs)

    def format_field(self, value: object, format_spec: str) -> str:
        return self.formatted(self.node, value, format_spec)

    def formatted(self, where: ast.AST, value: object, format_spec: str) -> str:
        """``value`` formatted, an error located at ``where`` (an f-string's own field)."""
        text = _format(where, value, format_spec)
        self.length += len(text)  # many wide fields could add up to any size
        _check_size(self.node, self.length, "str")
        return text


# A width, or a precision after its '.', in a format spec.
_SPEC_NUMBER = re.compile(r"(\.?)(\d+)")


def _check_spec(node: ast.AST, spec: str) -> None:
    for found in _SPEC_NUMBER.finditer(spec):
        if int(found.group(2)) > MAX_LENGTH:
            what = "precision" if found.group(1) else "width"
            raise _Invalid(
                node,
                f"the format {what} {found.group(2)} is above {MAX_LENGTH:,}, the longest str "
                "a config may hold",
            )


def _format(node: ast.AST, value: object, spec: str) -> str:
    _check_spec(node, spec)
    try:
        return format(value, spec)
    except (TypeError, ValueError) as exc:
        raise _Invalid(node, f"cannot format {_show_plain(value)} with {spec!r}: {exc}") from None


class _Result:
    """The config's values as they leave the evaluator: plain data, each mapping and list once.

    Each tuple becomes a list. Two names bound to one dict (``b = a``) are one object in Python;
    merging changes mappings in place, so each later occurrence becomes a copy (a copy holds
    lists only). Leaves never change and stay shared.
    The walk also counts the values, which shared lists could multiply past any bound, and
    measures how deep they nest, which names assigned in turn (``b = [a]``) take past any
    bound too.
    """

    def __init__(self, filename: str) -> None:
        self.filename = filename
        self.seen: set[int] = set()
        self.budget = _MAX_NODES
        self.name = ""
        self.origin: str | None = None
        self.enclosing: set[int] = set()  # the containers the walk is inside of

    def value(self, name: str, node: Node) -> Node:
        """The value of the top-level name ``name``, ready to leave the evaluator."""
        self.name, self.origin = name, node.origin
        return self.unshared(node, 1)  # one level below the top mapping, as in any file

    def unshared(self, node: Node, depth: int) -> Node:
        self.budget -= 1
        if self.budget < 0:
            raise ConfigError(self.filename, f"the config holds more than {_MAX_NODES:,} values")
        if not isinstance(node, Table | Items):
            return node
        if id(node) in self.enclosing:  # `a.append(a)`: as plain data, it would never end
            raise ConfigError(
                self.filename,
                f"the value of {self.name!r} contains itself (a list or dict that holds itself "
                "has no plain value; to hold what it holds, add a copy: a.append(a.copy()))",
                line_of(self.origin),
            )
        if depth > MAX_DEPTH:
            what = f"the value of {self.name!r}"
            raise ConfigError(self.filename, too_deep(what), line_of(self.origin))
        container: Table | Items = node
        if id(node) in self.seen:
            container = copy_containers(node)  # type: ignore[assignment]
        elif isinstance(node, _Tuple):
            container = Items(node.origin)
            container.extend(node)
        self.seen.add(id(node))
        self.enclosing.add(id(node))
        if isinstance(container, Table):
            for key, child in container.items():
                if not isinstance(child, Leaf):
                    container[key] = self.unshared(child, depth + 1)
                else:
                    self.budget -= 1
        else:
            for index, child in enumerate(container):
                if not isinstance(child, Leaf):
                    container[index] = self.unshared(child, depth + 1)
                else:
                    self.budget -= 1
        self.enclosing.discard(id(node))
        return container


def _source(node: ast.AST) -> str:
    text = ast.unparse(node)
    return text if len(text) <= 60 else text[:57] + "..."


def _show(node: Node) -> str:
    return _show_plain(_python(node))


def _show_plain(value: object) -> str:
    kind = type(value).__name__
    text = repr(value)
    return f"{kind} {text if len(text) <= 40 else text[:37] + '...'}"


def _operator_text(operator: ast.operator) -> str:
    return {
        ast.LShift: "<<",
        ast.RShift: ">>",
        ast.BitOr: "|",
        ast.BitXor: "^",
        ast.BitAnd: "&",
        ast.MatMult: "@",
    }.get(type(operator), type(operator).__name__)


def _describe_expression(node: ast.expr) -> str:
    if isinstance(node, ast.Attribute):
        return f"the attribute {_source(node)!r}"
    if isinstance(node, ast.Lambda):
        return "a lambda"
    if isinstance(node, ast.NamedExpr):
        return "an assignment expression (:=)"
    if isinstance(node, ast.Await | ast.Yield | ast.YieldFrom):
        return f"{type(node).__name__.lower()}"
    if isinstance(node, ast.SetComp | ast.Set):
        return "a set"
    return f"the expression {_source(node)!r}"
