"""Every code example of the READMEs and of the documentation site runs, its shown output checked.

The conventions, which the documentation's own "Writing docs" section repeats for authors:

- A ```` ```python ```` block runs in a fresh interpreter (in an empty folder holding the
  checkout's ``configs/``). Where it holds ``>>>`` prompts it is a doctest; otherwise it must run
  without error, and a ```` ```text ```` block right after it is its expected standard output.
- A ```` ```console ```` block holds ``$ command`` lines, each followed by its expected output
  (its standard output, then its standard error); ```` ```bash ```` blocks run and must succeed.
  A python block's shown output is its standard output alone (warnings go to standard error).
- A block with a ``title="NAME"`` (a config file shown to the reader, a Python config too) is not
  run but written to ``NAME`` in the folder where its document's examples run, so a command can
  read it.
- Output is compared as doctest does, with ``...`` standing for any text (doctest's ELLIPSIS).
- A runnable block whose first line is ``# not run: REASON`` is skipped, with the reason shown in
  the document and in pytest's report. One whose first line is ``# continues the example above``
  runs after the python block before it, in the same interpreter.

Failures name the file and the line of the example.
"""

from __future__ import annotations

import doctest
import json
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = sorted(
    [
        REPO_ROOT / "README.md",
        *(REPO_ROOT / "packages").glob("*/README.md"),
        *(REPO_ROOT / "docs").rglob("*.md"),
    ]
)
RUNNABLE = {"python", "console", "bash"}
# Other names of the runnable languages, so that no example escapes by its spelling.
ALIASES = {"py": "python", "python3": "python", "pycon": "python", "sh": "bash", "shell": "bash"}
ALIASES |= {"shell-session": "console"}
NOT_RUN = re.compile(r"#\s*not run:\s*(?P<reason>.*\S)?\s*$")
CONTINUES = "# continues the example above"
FENCE = re.compile(r"^(?P<indent> *)(?P<fence>```+|~~~+)(?P<info>.*)$")
TITLE = re.compile(r'title="(?P<title>[^"]+)"')
FLAGS = doctest.ELLIPSIS
TIMEOUT_S = 300
# Each example is a fresh interpreter that mostly waits on imports: run a few at once.
WORKERS = min(4, max(2, os.cpu_count() or 2))


class ExampleFailure(Exception):
    """An example that failed; the message names its file and line and says what differed."""


# Runs in the fresh interpreter: the chunks, in order, in one namespace; only the last one's
# output is shown. Compiled under the document's path and real line numbers, so a traceback
# points into the Markdown file.
DRIVER = """
import contextlib, doctest, io, json, sys
chunks = json.load(open(sys.argv[1], encoding="utf-8"))
globs = {"__name__": "__main__"}
for index, (path, line, code) in enumerate(chunks):
    last = index == len(chunks) - 1
    sink = contextlib.nullcontext() if last else contextlib.redirect_stdout(io.StringIO())
    with sink:
        if ">>>" in code:
            test = doctest.DocTestParser().get_doctest(code, globs, path, path, line)
            runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
            runner.run(test, clear_globs=False)
            if runner.failures:
                sys.exit(1)
        else:
            exec(compile("\\n" * line + code, path, "exec"), globs)
"""


@dataclass
class Block:
    """One fenced block of a Markdown document."""

    path: Path
    line: int  # 1-based line of the opening fence
    language: str
    title: str | None
    body: str
    output: str | None = None  # the ```text block right after a python block
    previous: Block | None = field(default=None, repr=False)  # the python block before it

    @property
    def where(self) -> str:
        return f"{shown_path(self.path)}:{self.line}"

    @property
    def first_line(self) -> str:
        return self.body.split("\n", 1)[0].strip()

    @property
    def not_run_reason(self) -> str | None:
        match = NOT_RUN.fullmatch(self.first_line)
        if match is None:
            return None
        return match.group("reason") or ""


def shown_path(path: Path) -> str:
    return str(path.relative_to(REPO_ROOT)) if path.is_relative_to(REPO_ROOT) else str(path)


def parse_blocks(path: Path) -> list[Block]:
    """Every fenced block of ``path``, with the output block attached to its python block."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    ends: list[int] = []  # index of each block's closing fence line
    index = 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if opening is None:
            index += 1
            continue
        indent, fence, info = opening["indent"], opening["fence"], opening["info"].strip()
        body: list[str] = []
        end = index + 1
        while end < len(lines) and not lines[end].strip().startswith(fence):
            line = lines[end]
            body.append(line[len(indent) :] if line.startswith(indent) else line.lstrip())
            end += 1
        language = info.split()[0].lower() if info else ""
        language = ALIASES.get(language, language)
        title = TITLE.search(info)
        blocks.append(
            Block(path, index + 1, language, title["title"] if title else None, "\n".join(body))
        )
        ends.append(end)
        index = end + 1
    previous_python: Block | None = None
    for position, block in enumerate(blocks):
        if block.language != "python":
            continue
        block.previous = previous_python
        previous_python = block
        nxt = blocks[position + 1] if position + 1 < len(blocks) else None
        between = lines[ends[position] + 1 : nxt.line - 1] if nxt is not None else []
        if nxt is not None and nxt.language == "text" and not any(s.strip() for s in between):
            nxt.language = "output"  # claimed: not a block of its own
            block.output = nxt.body + "\n"
    return blocks


def runnable_examples() -> list[Block]:
    # A titled block is a file shown to the reader (a Python config too): written, never run.
    return [
        block
        for path in DOCUMENTS
        for block in parse_blocks(path)
        if block.language in RUNNABLE and block.title is None
    ]


def child_env() -> dict[str, str]:
    # Nothing from the checkout may reach the child; the console scripts come from this env.
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["COLUMNS"] = "100"  # argparse's help wraps at the terminal width
    return env


def prepare_folder(block: Block, folder: Path) -> None:
    """The checkout's configs, and every titled block of the document written to its file."""
    shutil.copytree(REPO_ROOT / "configs", folder / "configs")
    for other in parse_blocks(block.path):
        if other.title is not None:
            target = folder / other.title
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(other.body + "\n", encoding="utf-8")


def assert_output(block: Block, where: str, expected: str, got: str) -> None:
    checker = doctest.OutputChecker()
    if not checker.check_output(expected, got, FLAGS):
        example = doctest.Example("", expected)
        raise ExampleFailure(
            f"{where}: the output differs from the one shown\n"
            + checker.output_difference(example, got, FLAGS)
        )


def run(command: list[str], folder: Path) -> subprocess.CompletedProcess[str]:
    """Run ``command`` in ``folder`` in a fresh environment, capturing both streams."""
    result = subprocess.run(
        command,
        cwd=folder,
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )
    return result


def run_python(block: Block, folder: Path) -> None:
    chain = [block]
    while chain[0].first_line == CONTINUES:
        previous = chain[0].previous
        if previous is None:
            raise ExampleFailure(
                f"{block.where}: continues an example, but no python block is above"
            )
        chain.insert(0, previous)
    chunks = [[str(b.path), b.line, b.body] for b in chain]
    payload = folder / "_chunks.json"
    payload.write_text(json.dumps(chunks), encoding="utf-8")
    result = run([sys.executable, "-c", DRIVER, str(payload)], folder)
    if result.returncode != 0:
        raise ExampleFailure(f"{block.where}: the example failed\n{result.stdout}{result.stderr}")
    if block.output is not None and ">>>" not in block.body:
        # Standard output only: warnings go to stderr, and a reader sees them apart.
        assert_output(block, block.where, block.output, result.stdout)


def run_console(block: Block, folder: Path) -> None:
    commands: list[tuple[int, str, list[str]]] = []
    for offset, line in enumerate(block.body.split("\n"), start=1):
        if line.startswith("$ "):
            commands.append((block.line + offset, line[2:], []))
        elif commands:
            commands[-1][2].append(line)
        elif line.strip():
            raise ExampleFailure(f"{block.where}: console text before the first '$ ': {line!r}")
    for line_number, command, shown in commands:
        result = run(["bash", "-c", command], folder)
        where = f"{shown_path(block.path)}:{line_number}"
        expected = "\n".join(shown).strip("\n")
        expected += "\n" if expected else ""  # a command shown without output prints nothing
        # Appended, not interleaved: a terminal shows the two streams in an order pipes lose.
        got = result.stdout + result.stderr
        assert_output(block, f"{where} ($ {command})", expected, got)


def check_example(block: Block, folder: Path) -> str | None:
    """Run one example in ``folder``; return why it failed, or None when it did what it shows."""
    prepare_folder(block, folder)
    try:
        if block.language == "python":
            run_python(block, folder)
        elif block.language == "console":
            run_console(block, folder)
        else:
            result = run(["bash", "-e", "-c", block.body], folder)
            if result.returncode != 0:
                raise ExampleFailure(
                    f"{block.where}: the commands failed\n{result.stdout}{result.stderr}"
                )
    except ExampleFailure as failure:
        return str(failure)
    except subprocess.TimeoutExpired as timeout:
        return f"{block.where}: still running after {timeout.timeout} s"
    return None


@pytest.fixture(scope="module")
def outcomes(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, str | None]:
    """Run every selected example, a few at a time; map each one's place to its failure."""
    # The examples this run selected (``-k`` included), in collection order.
    selected = [
        item.callspec.params["block"]
        for item in request.session.items
        if isinstance(item, pytest.Function)
        and hasattr(item, "callspec")
        and isinstance(item.callspec.params.get("block"), Block)
    ]
    blocks = [block for block in selected if block.not_run_reason is None]
    folders = [tmp_path_factory.mktemp("example") for _ in blocks]
    with ThreadPoolExecutor(WORKERS) as pool:
        results = list(pool.map(check_example, blocks, folders))
    return {block.where: result for block, result in zip(blocks, results, strict=True)}


@pytest.mark.parametrize("block", runnable_examples(), ids=lambda block: block.where)
def test_example_runs_and_prints_what_it_shows(
    block: Block, outcomes: dict[str, str | None]
) -> None:
    reason = block.not_run_reason
    if reason == "":
        pytest.fail(f"{block.where}: '# not run:' needs a reason after the colon", pytrace=False)
    if reason is not None:
        pytest.skip(f"{block.where}: not run: {reason}")
    failure = outcomes[block.where]
    if failure is not None:
        pytest.fail(failure, pytrace=False)


def test_every_document_is_found_and_fences_are_labelled() -> None:
    assert REPO_ROOT / "README.md" in DOCUMENTS
    unlabelled = [b.where for path in DOCUMENTS for b in parse_blocks(path) if not b.language]
    assert unlabelled == [], (
        f"fenced blocks without a language (say text, python, ...): {unlabelled}"
    )


def test_a_wrong_shown_output_fails_naming_the_file_and_line(tmp_path: Path) -> None:
    document = tmp_path / "page.md"
    document.write_text("Intro.\n\n```python\nprint(1 + 1)\n```\n\n```text\n3\n```\n")
    (block,) = (b for b in parse_blocks(document) if b.language == "python")
    with pytest.raises(ExampleFailure, match=r"page\.md:3: the output differs"):
        run_python(block, tmp_path)


def test_a_failing_doctest_names_the_file_and_line(tmp_path: Path) -> None:
    document = tmp_path / "page.md"
    document.write_text("```python\n>>> 1 + 1\n3\n```\n")
    (block,) = parse_blocks(document)
    with pytest.raises(ExampleFailure, match=r'File ".*page\.md", line 2'):
        run_python(block, tmp_path)
