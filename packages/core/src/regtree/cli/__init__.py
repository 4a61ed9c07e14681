"""The ``regtree`` command, and the helpers that other commands (``regtree-optim``) build on.

``main`` runs ``regtree``. A command of another package parses with :func:`parse_command_line`,
runs with :func:`run_command`, reads its config file with :func:`read_config` and reports input it
cannot act on by raising :class:`UsageError` (exit status 2, one line, no traceback).
:func:`config_schema` is the JSON Schema that ``regtree schema`` prints; :func:`find_clashes` the
names that ``regtree doctor`` reports as defined in several scopes.
"""

from __future__ import annotations

from ._doctor import find_clashes
from ._main import main
from ._roots import find_root_registries, import_locations, iter_tree
from ._schema import annotation_schema, config_schema
from ._support import (
    UsageError,
    add_set_option,
    did_you_mean,
    parse_command_line,
    print_exception,
    read_config,
    run_command,
)

__all__ = [
    "UsageError",
    "add_set_option",
    "annotation_schema",
    "config_schema",
    "did_you_mean",
    "find_clashes",
    "find_root_registries",
    "import_locations",
    "iter_tree",
    "main",
    "parse_command_line",
    "print_exception",
    "read_config",
    "run_command",
]
