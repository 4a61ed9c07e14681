"""The ``regtree`` command: look inside the registry trees and check a config before a run."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from functools import partial

from ._config import ConfigError, load_config
from ._registry import Registry
from ._validate import format_path

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Sequence
    from typing import Any

__all__ = ["find_root_registries", "main"]

PROG = "regtree"
COMMANDS = ("tree", "list", "show", "validate", "build")
DEFAULT_TREE = "model"
DEFAULT_SECTION = "model"

_SECTION_HELP = (
    f"top-level key of the config to use (default: its {DEFAULT_SECTION!r} section when it has "
    "one, otherwise the whole file)"
)


class UsageError(Exception):
    """A command line or input file that cannot be acted on: exit status 2, one line, no trace."""


def main(argv: Sequence[str] | None = None, *, roots: Sequence[Registry[Any]] | None = None) -> int:
    """Run the ``regtree`` command.

    Args:
        argv: The arguments, without the program name; ``sys.argv[1:]`` when None.
        roots: The root registries to show; when None, every installed plugin is imported and the
            roots are found in ``regtree`` and the plugins' modules.

    Returns:
        The exit status: 0 on success, 1 when a config has problems or a build fails, 2 for a bad
        command line or an unreadable config file.
    """
    arguments = list(sys.argv[1:] if argv is None else argv)
    options = parse_command_line(PROG, build_parser(), arguments, COMMANDS)
    if isinstance(options, int):
        return options
    if getattr(options, "config", None) is not None:
        # Read the file before importing plugins: a bad file fails at once, before torch loads.
        try:
            options.cfg, options.section = load_section(options.config, options.section)
        except UsageError as exc:
            print(f"{PROG}: error: {exc}", file=sys.stderr)
            return 2
    try:
        if roots is None:
            from ._plugins import load_plugins

            roots = find_root_registries(load_plugins())
        for root in roots:
            _import_locations(root)
    except Exception as exc:
        # A broken plugin is an installation problem: say which one, without a traceback.
        _print_exception(f"{PROG}: error: importing a plugin or a registry location failed:", exc)
        return 1
    handler: Callable[[argparse.Namespace, Sequence[Registry[Any]]], int] = options.handler
    return run_command(PROG, partial(handler, options, roots))


def parse_command_line(
    prog: str,
    parser: argparse.ArgumentParser,
    arguments: Sequence[str],
    commands: Sequence[str],
    *,
    hint_cutoff: float = 0.6,
) -> argparse.Namespace | int:
    """Parse a command line whose first word names one of ``commands``.

    An unknown command is reported in one line with the closest command, before argparse sees it.

    Args:
        prog: The program name, which starts the error line.
        parser: The program's argument parser.
        arguments: The arguments, without the program name.
        commands: The subcommands ``parser`` knows.
        hint_cutoff: How similar (0 to 1) an unknown command must be to a known one to be
            suggested.

    Returns:
        The parsed options, or the exit status when there is nothing to run: 0 after ``--help``,
        2 after a usage error (already printed).
    """
    try:
        _check_command(arguments, commands, hint_cutoff)
        return parser.parse_args(arguments)
    except UsageError as exc:
        parser.print_usage(sys.stderr)
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    except SystemExit as exc:  # argparse has printed the help or the error
        return exc.code if isinstance(exc.code, int) else 2


def run_command(prog: str, command: Callable[[], int]) -> int:
    """Run a parsed command and turn the failures every command shares into exit statuses.

    Args:
        prog: The program name, which starts the error line.
        command: Runs the command and returns its exit status; raises ``UsageError`` for an input
            it cannot act on.

    Returns:
        The command's exit status; 2 after a ``UsageError`` (printed in one line), 1 when the
        reader of stdout went away.
    """
    try:
        return command()
    except UsageError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # The reader went away (`| head`): stop quietly, as other command-line tools do.
        _detach_stdout()
        return 1


def build_parser() -> argparse.ArgumentParser:
    """Return the argument parser of ``regtree``, one subcommand per action."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description=(
            "Look inside the regtree registry trees and check config files before a run. "
            "Installed plugins are loaded first. validate and build act on a config file's "
            f"{DEFAULT_SECTION!r} section when it has one, otherwise on the whole file."
        ),
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    tree = commands.add_parser("tree", help="every registry tree: name, scope, entry count")
    tree.add_argument(
        "--registry", metavar="NAME", help="only the tree with this root name (default: all)"
    )
    tree.add_argument("--json", action="store_true", help="print JSON")
    tree.set_defaults(handler=_run_tree)

    listing = commands.add_parser(
        "list", help="registered names matching a glob, with where each is defined"
    )
    listing.add_argument(
        "pattern", nargs="?", metavar="PATTERN", help="a glob such as '*Net*' (default: all)"
    )
    _add_registry_options(listing)
    listing.add_argument("--json", action="store_true", help="print JSON")
    listing.set_defaults(handler=_run_list)

    show = commands.add_parser(
        "show", help="where a key is defined (file and line), its signature and summary"
    )
    show.add_argument("key", metavar="KEY", help="a registered name, scoped or not")
    _add_registry_options(show)
    show.add_argument("--json", action="store_true", help="print JSON")
    show.set_defaults(handler=_run_show)

    validate = commands.add_parser(
        "validate",
        help="every problem in a config without building it (exit status 1 if any)",
        description=(
            "Report every problem a build of CONFIG would meet, without building anything. "
            f"Acts on the config's {DEFAULT_SECTION!r} section when it has one, otherwise on the "
            "whole file."
        ),
    )
    _add_config_options(validate)
    validate.add_argument("--json", action="store_true", help="print JSON")
    validate.set_defaults(handler=_run_validate)

    build = commands.add_parser(
        "build",
        help="build a config and print the object",
        description=(
            f"Build CONFIG and print the object. Acts on the config's {DEFAULT_SECTION!r} section "
            "when it has one, otherwise on the whole file."
        ),
    )
    _add_config_options(build)
    build.set_defaults(handler=_run_build)
    return parser


def _add_registry_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--registry",
        metavar="NAME",
        default=DEFAULT_TREE,
        help=f"root name of the registry tree (default: {DEFAULT_TREE!r})",
    )
    parser.add_argument(
        "--scope",
        metavar="SCOPE",
        help="the registry of this scope in the tree (default: the root)",
    )


def _add_config_options(parser: argparse.ArgumentParser) -> None:
    """Add what a command acting on a config file takes: the file, the tree and the section."""
    parser.add_argument("config", metavar="CONFIG", help="a .toml, .json, .yaml or .yml file")
    _add_registry_options(parser)
    parser.add_argument("--section", metavar="KEY", help=_SECTION_HELP)


def _check_command(arguments: Sequence[str], commands: Sequence[str], hint_cutoff: float) -> None:
    for argument in arguments:
        if argument.startswith("-"):
            continue  # the top-level parser has only flags (-h)
        if argument not in commands:
            raise UsageError(
                f"unknown command {argument!r}{_did_you_mean(argument, commands, hint_cutoff)} "
                f"(commands: {', '.join(commands)})"
            )
        return


def find_root_registries(scopes: Iterable[str]) -> list[Registry[Any]]:
    """Return the roots of the registries defined in ``regtree`` and in the given scopes' modules.

    Registries live in module globals (``regtree.MODELS``, ``demo_cls.MODELS``), so the modules
    of ``regtree`` and of each loaded plugin scope are scanned, and each registry found gives its
    tree's root. Nothing is imported.

    Args:
        scopes: Top-level package names to scan besides ``regtree`` (the loaded plugin scopes).

    Returns:
        Each root once: those of ``regtree`` first, then the others by scope and name.
    """
    own = _roots_in_package("regtree", {})
    others = _roots_in_package(set(scopes) - {"regtree"}, own)
    return [*own.values(), *sorted(others.values(), key=lambda root: (root.scope, root.name))]


def _roots_in_package(
    packages: str | Iterable[str], seen: dict[int, Registry[Any]]
) -> dict[int, Registry[Any]]:
    wanted = {packages} if isinstance(packages, str) else set(packages)
    roots: dict[int, Registry[Any]] = {}
    for module_name, module in sorted(sys.modules.items(), key=lambda item: item[0]):
        if module_name.partition(".")[0] not in wanted:
            continue
        for value in list(getattr(module, "__dict__", {}).values()):
            if isinstance(value, Registry) and id(value.root) not in seen:
                roots.setdefault(id(value.root), value.root)
    return roots


def _import_locations(root: Registry[Any]) -> None:
    """Fill every registry of the tree that is filled lazily, so counts and listings are whole."""
    for member in iter_tree(root):
        if getattr(member, "locations", ()):
            member.get("")  # a registry imports its locations on its first lookup


def _select_registry(roots: Sequence[Registry[Any]], name: str, scope: str | None) -> Registry[Any]:
    by_name: dict[str, Registry[Any]] = {}
    for candidate in roots:
        by_name.setdefault(candidate.name, candidate)
    root = by_name.get(name)
    if root is None:
        raise UsageError(
            f"no registry tree named {name!r}{_did_you_mean(name, by_name)} "
            f"(trees: {', '.join(repr(n) for n in by_name) or 'none'})"
        )
    if scope is None:
        return root
    scopes = [member.scope for member in iter_tree(root)]
    for member in iter_tree(root):
        if member.scope == scope:
            return member
    raise UsageError(
        f"the {name!r} tree has no registry with scope {scope!r}"
        f"{_did_you_mean(scope, scopes)} (scopes: {', '.join(scopes)})"
    )


def iter_tree(root: Registry[Any]) -> Iterator[Registry[Any]]:
    """Yield ``root`` and every registry below it, depth first, children in scope order."""
    yield root
    for scope in sorted(root.children):
        yield from iter_tree(root.children[scope])


def _did_you_mean(word: str, choices: Iterable[str], cutoff: float = 0.6) -> str:
    from difflib import get_close_matches

    close = get_close_matches(word, list(choices), n=1, cutoff=cutoff)
    return f"; did you mean {close[0]!r}?" if close else ""


# --- tree -------------------------------------------------------------------------------------


def _run_tree(options: argparse.Namespace, roots: Sequence[Registry[Any]]) -> int:
    chosen = list(roots)
    if options.registry is not None:
        chosen = [_select_registry(roots, options.registry, None)]
    if options.json:
        print(json.dumps([_tree_as_dict(root) for root in chosen], indent=2))
        return 0
    for root in chosen:
        print(_tree_label(root))
        _print_children(root, "")
    return 0


def _tree_label(registry: Registry[Any]) -> str:
    count = len(registry)
    return (
        f"{registry.name} [scope {registry.scope}, {count} {'entry' if count == 1 else 'entries'}]"
    )


def _print_children(registry: Registry[Any], indent: str) -> None:
    children = [registry.children[scope] for scope in sorted(registry.children)]
    for position, child in enumerate(children):
        last = position == len(children) - 1
        print(f"{indent}{'`-- ' if last else '|-- '}{_tree_label(child)}")
        _print_children(child, indent + ("    " if last else "|   "))


def _tree_as_dict(registry: Registry[Any]) -> dict[str, object]:
    return {
        "name": registry.name,
        "scope": registry.scope,
        "entries": len(registry),
        "children": [_tree_as_dict(registry.children[s]) for s in sorted(registry.children)],
    }


# --- list -------------------------------------------------------------------------------------


def _run_list(options: argparse.Namespace, roots: Sequence[Registry[Any]]) -> int:
    from fnmatch import fnmatchcase

    selected = _select_registry(roots, options.registry, options.scope)
    members = [selected] if options.scope is not None else list(iter_tree(selected))
    pattern = (options.pattern or "*").lower()
    rows: list[dict[str, object]] = []
    for member in members:
        for name, obj in member.module_dict.items():
            key = f"{member.scope}.{name}"
            if fnmatchcase(key.lower(), pattern) or fnmatchcase(name.lower(), pattern):
                rows.append(
                    {
                        "key": key,
                        "name": name,
                        "registry": member.name,
                        "scope": member.scope,
                        "defined_in": _defined_in(obj),
                    }
                )
    if options.json:
        print(json.dumps(rows, indent=2))
    else:
        width = max((len(str(row["key"])) for row in rows), default=0)
        for row in rows:
            print(f"{row['key']!s:<{width}}  {row['defined_in']}")
    if not rows and options.pattern is None:
        print(f"{PROG}: {_describe(selected)} has no entries", file=sys.stderr)
    elif not rows:
        names = [f"{m.scope}.{n}" for m in members for n in m.module_dict]
        print(
            f"{PROG}: no name in {_describe(selected)} matches {options.pattern!r}"
            f"{_did_you_mean(options.pattern, names)}",
            file=sys.stderr,
        )
        return 1
    return 0


def _defined_in(obj: object) -> str:
    from ._diagnostics import origin

    return origin(obj)


def _describe(registry: Registry[Any]) -> str:
    from ._registry import registry_label

    return registry_label(registry)


# --- show -------------------------------------------------------------------------------------


def _run_show(options: argparse.Namespace, roots: Sequence[Registry[Any]]) -> int:
    selected = _select_registry(roots, options.registry, options.scope)
    key: str = options.key
    owner, name, obj = _find_entry(selected, key)
    details = _entry_details(owner, name, obj)
    if options.json:
        print(json.dumps(details, indent=2))
        return 0
    print(f"{details['key']}  (registry {owner.name!r}, scope {owner.scope!r})")
    location = "unknown" if details["file"] is None else str(details["file"])
    if details["line"] is not None:
        location += f", line {details['line']}"
    fields = [
        ("defined in", details["defined_in"]),
        ("file", location),
        ("signature", details["signature"] or "unknown"),
        ("summary", details["summary"] or "(no docstring)"),
    ]
    aliases = details["aliases"]
    if isinstance(aliases, list) and aliases:
        fields.append(("also as", ", ".join(str(alias) for alias in aliases)))
    for label, value in fields:
        print(f"  {label:<10}  {value}")
    return 0


def _find_entry(selected: Registry[Any], key: str) -> tuple[Registry[Any], str, object]:
    """Resolve ``key`` from ``selected``; an unscoped miss is looked for across the tree."""
    obj = selected.get(key)
    name = selected.split_scope_key(key)[1].rpartition(".")[2]
    tree = list(iter_tree(selected.root))
    if obj is not None:
        owners = [m for m in tree if m.module_dict.get(name) is obj]
        owners += [m for m in tree if m not in owners and obj in m.module_dict.values()]
        if owners:
            owner = owners[0]
            if owner.module_dict.get(name) is not obj:
                name = next(n for n, o in owner.module_dict.items() if o is obj)
            return owner, name, obj
        return selected, name, obj
    if "." not in key:
        holders = [m for m in tree if key in m.module_dict]
        if len(holders) == 1:
            return holders[0], key, holders[0].module_dict[key]
        if holders:
            keys = ", ".join(f"{m.scope}.{key}" for m in holders)
            raise UsageError(f"{key!r} is registered in several scopes; give one of: {keys}")
    names = [f"{m.scope}.{n}" for m in tree for n in m.module_dict]
    bare = {n.rpartition(".")[2]: n for n in names}
    hint = _did_you_mean(key, names) or _did_you_mean(key, bare)
    if not hint and "." not in key:
        from difflib import get_close_matches

        close = get_close_matches(key, list(bare), n=1, cutoff=0.6)
        hint = f"; did you mean {bare[close[0]]!r}?" if close else ""
    raise UsageError(f"{key!r} is not registered in {_describe(selected)} or its tree{hint}")


def _entry_details(owner: Registry[Any], name: str, obj: object) -> dict[str, object]:
    import inspect
    from functools import partial

    source = obj.func if isinstance(obj, partial) else obj
    file: str | None
    line: int | None
    try:
        file = inspect.getsourcefile(source)  # type: ignore[arg-type]
    except TypeError:
        file = None
    try:
        line = inspect.getsourcelines(source)[1]  # type: ignore[arg-type]
    except (OSError, TypeError):
        line = None
    signature: str | None
    try:
        try:
            signature = str(inspect.signature(obj, eval_str=True))  # type: ignore[arg-type]
        except (NameError, SyntaxError, AttributeError, TypeError):
            # An annotation that only the type checker can resolve: show it as written.
            signature = str(inspect.signature(obj))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        signature = None
    doc = getattr(obj, "__doc__", None)
    summary = None
    if isinstance(doc, str) and doc.strip():
        summary = inspect.cleandoc(doc).splitlines()[0]
    aliases = [
        f"{owner.scope}.{other}"
        for other, candidate in owner.module_dict.items()
        if candidate is obj and other != name
    ]
    return {
        "key": f"{owner.scope}.{name}",
        "name": name,
        "registry": owner.name,
        "scope": owner.scope,
        "defined_in": _defined_in(obj),
        "file": file,
        "line": line,
        "signature": signature,
        "summary": summary,
        "aliases": aliases,
    }


# --- validate and build -----------------------------------------------------------------------


def read_config(path: str) -> dict[str, Any]:
    """Load a config file, turning a file that cannot be read or parsed into a ``UsageError``.

    Args:
        path: The config file.

    Returns:
        The loaded config, as ``load_config`` returns it.

    Raises:
        UsageError: The file cannot be read or is not a valid config; the message names the file.
    """
    try:
        return load_config(path)
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise UsageError(f"{path}: cannot read the config file: {reason}") from None


def load_section(path: str, section: str | None) -> tuple[Any, str]:
    """Load a config file and pick the part to act on.

    Args:
        path: The config file.
        section: A top-level key to use; None picks the ``model`` section when the file has one,
            otherwise the whole file.

    Returns:
        The chosen value and its path in the file (``'model'``, or ``''`` for the whole file).

    Raises:
        UsageError: The file cannot be read, or the section is missing or not a config.
    """
    cfg = read_config(path)
    if section is None:
        if DEFAULT_SECTION not in cfg:
            return cfg, ""
        section = DEFAULT_SECTION
    if section not in cfg:
        raise UsageError(
            f"{path}: the config has no {section!r} section{_did_you_mean(section, cfg)} "
            f"(sections: {', '.join(map(str, cfg))})"
        )
    chosen = cfg[section]
    if not isinstance(chosen, Mapping | list):
        raise UsageError(
            f"{path}: the {section!r} section must be a table of settings, "
            f"not {type(chosen).__name__}"
        )
    return chosen, section


def _run_validate(options: argparse.Namespace, roots: Sequence[Registry[Any]]) -> int:
    registry = _select_registry(roots, options.registry, options.scope)
    cfg, section = options.cfg, options.section
    problems = registry.validate(cfg)
    if options.json:
        report = {
            "config": options.config,
            "section": section or None,
            "registry": registry.name,
            "scope": registry.scope,
            "problems": [
                {**problem.as_dict(), "path": format_path(problem.parts, section)}
                for problem in problems
            ],
        }
        print(json.dumps(report, indent=2))
    else:
        for problem in problems:
            print(f"{format_path(problem.parts, section) or '<config>'}: {problem.message}")
        where = f"{options.config}" + (f" [{section}]" if section else "")
        if problems:
            count = len(problems)
            print(f"{where}: {count} {'problem' if count == 1 else 'problems'}")
        else:
            print(f"{where}: no problems (checked with {_describe(registry)})")
    return 1 if problems else 0


def _run_build(options: argparse.Namespace, roots: Sequence[Registry[Any]]) -> int:
    registry = _select_registry(roots, options.registry, options.scope)
    cfg, section = options.cfg, options.section
    try:
        built = registry.build(cfg)
    except Exception as exc:
        where = f"{options.config}" + (f" [{section}]" if section else "")
        _print_exception(f"{PROG}: building {where} failed:", exc)
        return 1
    print(repr(built))
    return 0


def _print_exception(headline: str, exc: BaseException) -> None:
    """Print ``headline``, then the exception and its notes, without the traceback."""
    import traceback

    print(headline, file=sys.stderr)
    print("".join(traceback.format_exception_only(exc)).rstrip(), file=sys.stderr)


def _detach_stdout() -> None:
    """Point stdout at the null device, so the interpreter's final flush cannot fail again."""
    import os
    from contextlib import suppress

    with suppress(OSError, ValueError):  # stdout is not a real file (captured, closed)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
