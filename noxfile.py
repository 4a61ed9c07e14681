"""Every check of the regtree monorepo; a bare ``python3 -m nox`` runs the default set."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import nox
from nox.command import CommandFailed

ROOT = Path(__file__).resolve().parent
CONSTRAINTS = str(ROOT / "constraints.txt")
# Distribution name -> source folder, in dependency order.
PACKAGES: dict[str, str] = {
    "regtree": "packages/core",
    "regtree-optim": "packages/optim",
    "regtree-demo-cls": "packages/demo_cls",
    "regtree-demo-det": "packages/demo_det",
}
IMPORT_NAMES: dict[str, str] = {
    "regtree": "regtree",
    "regtree-optim": "regtree_optim",
    "regtree-demo-cls": "demo_cls",
    "regtree-demo-det": "demo_det",
}
# The local torch wheel exists for 3.11 only, so torch sessions run there; the Python
# matrix belongs to the core session, which never installs torch.
TORCH_PYTHON = "3.11"
CORE_PYTHONS = ["3.11", "3.12", "3.13"]
# jsonschema: the schema tests check `regtree schema` with a maintained validator.
TEST_TOOLS = ["pytest>=8", "hypothesis>=6.100", "jsonschema>=4.18"]
# torch warns at import without NumPy; install it wherever torch is.
TORCH_EXTRAS = ["numpy"]
# The documentation site's generator (ruff formats the signatures); mkdocstrings reads the
# sources, so neither the packages nor torch are needed.
DOCS_TOOLS = ["mkdocs>=1.6", "mkdocs-material>=9.5", "mkdocstrings[python]>=0.28", "ruff"]

nox.options.sessions = [
    "lint",
    "typecheck",
    "docs",
    "core",
    "tests",
    "installed",
    "isolation",
    "demo",
]
nox.options.error_on_missing_interpreters = True


def _install_packages(session: nox.Session, *extra: str) -> None:
    """Install the four local packages (torch through the constraints file) and ``extra``."""
    # pip rebuilds the local packages on every run; without build isolation that takes seconds
    # instead of half a minute (no fresh build environment per package).
    session.install("hatchling>=1.21")
    session.install(
        "--no-build-isolation",
        "-c",
        CONSTRAINTS,
        *[str(ROOT / folder) for folder in PACKAGES.values()],
        *TORCH_EXTRAS,
        *extra,
    )


def _build_wheels(session: nox.Session) -> dict[str, Path]:
    """Build every package's wheel with hatch into a fresh folder; return them by distribution."""
    session.install("hatch")
    # Absolute: hatch runs from each package's folder, where a relative path would land.
    out = Path(session.create_tmp()).resolve() / "wheels"
    if out.exists():
        for old in out.iterdir():
            old.unlink()
    for folder in PACKAGES.values():
        with session.chdir(ROOT / folder):
            session.run("hatch", "build", "-t", "wheel", str(out), silent=True)
    wheels: dict[str, Path] = {}
    for dist in PACKAGES:
        stem = dist.replace("-", "_")
        found = sorted(out.glob(f"{stem}-*.whl"))
        if len(found) != 1:
            session.error(f"expected one wheel for {dist} in {out}, found {found}")
        wheels[dist] = found[0]
    return wheels


@nox.session(python=TORCH_PYTHON)
def lint(session: nox.Session) -> None:
    """Ruff lint and format check over the whole tree."""
    session.install("ruff")
    session.run("ruff", "check", str(ROOT))
    session.run("ruff", "format", "--check", str(ROOT))


@nox.session(python=TORCH_PYTHON)
def typecheck(session: nox.Session) -> None:
    """Run mypy --strict over every package's source, the main job and the benchmarks."""
    session.install("-c", CONSTRAINTS, "mypy", "torch", "types-PyYAML")
    session.run(
        "mypy",
        "--config-file",
        str(ROOT / "pyproject.toml"),
        *[arg for name in IMPORT_NAMES.values() for arg in ("-p", name)],
    )
    # The main job and the benchmarks are code users read and run: held to the same standard.
    session.run("mypy", "--config-file", str(ROOT / "pyproject.toml"), "examples", "benchmarks")


@nox.session(python=TORCH_PYTHON)
def docs(session: nox.Session) -> None:
    """Build the documentation site with warnings as errors: broken links and references fail.

    Its examples run as tests in the ``installed`` session (``tests/test_docs_examples.py``).
    """
    session.install(*DOCS_TOOLS)
    session.run(
        "mkdocs",
        "build",
        "--strict",
        "--config-file",
        str(ROOT / "mkdocs.yml"),
        "--site-dir",
        str(Path(session.create_tmp()).resolve() / "site"),
        # Material's notice of its end of life (2027) is printed on every build, not a warning.
        env={"NO_MKDOCS_2_WARNING": "1"},
    )


@nox.session(python=CORE_PYTHONS)
def core(session: nox.Session) -> None:
    """Core package alone, without torch: its tests, import hygiene and empty metadata."""
    session.install(str(ROOT / "packages/core"), *TEST_TOOLS)
    session.run(
        "python",
        "-c",
        "import importlib.util, sys, regtree; "
        "assert importlib.util.find_spec('torch') is None, 'torch must not be installed here'; "
        "assert 'torch' not in sys.modules, 'import regtree imported torch'; "
        "assert 'importlib.metadata' not in sys.modules, 'import regtree read entry points'",
    )
    session.run(
        "python",
        "-c",
        "from importlib.metadata import requires; "
        "reqs = [r for r in (requires('regtree') or []) if 'extra ==' not in r]; "
        "assert reqs == [], f'regtree must require nothing, requires {reqs}'",
    )
    session.run("pytest", str(ROOT / "packages/core/tests"), *session.posargs)


@nox.session(python=TORCH_PYTHON)
def tests(session: nox.Session) -> None:
    """Every package's own tests, with torch from the constraints file."""
    _install_packages(session, *TEST_TOOLS, "pyyaml")
    session.run(
        "pytest",
        *[str(ROOT / folder / "tests") for folder in PACKAGES.values()],
        *session.posargs,
    )


@nox.session(python=TORCH_PYTHON)
def installed(session: nox.Session) -> None:
    """Build all four wheels with hatch and run the cross-package tests against them."""
    wheels = _build_wheels(session)
    # PyYAML: the yaml extra, for the YAML demo config (configs/demo_small.yaml).
    session.install(
        "-c", CONSTRAINTS, *[str(w) for w in wheels.values()], *TEST_TOOLS, *TORCH_EXTRAS, "pyyaml"
    )
    # Run from an empty folder so nothing in the checkout can shadow the installed wheels.
    workdir = Path(session.create_tmp()) / "run"
    workdir.mkdir(exist_ok=True)
    with session.chdir(workdir):
        session.run(
            "pytest",
            "-c",
            str(ROOT / "pyproject.toml"),
            "--rootdir",
            str(ROOT),
            str(ROOT / "tests"),
            *session.posargs,
        )


@nox.session(python=TORCH_PYTHON)
@nox.parametrize("dist", list(PACKAGES))
def isolation(session: nox.Session, dist: str) -> None:
    """Install one package alone from the wheels: it imports and pulls in only what it declares."""
    wheels = _build_wheels(session)
    needed = {
        "regtree": [],
        "regtree-optim": ["regtree"],
        "regtree-demo-cls": ["regtree"],
        "regtree-demo-det": ["regtree", "regtree-optim"],
    }[dist]
    # Siblings are named by wheel file so they never come from the index.
    session.install("-c", CONSTRAINTS, *[str(wheels[d]) for d in [dist, *needed]])
    session.run(
        "python",
        str(ROOT / "tests" / "isolation_check.py"),
        dist,
        json.dumps(sorted([dist, *needed])),
    )


@nox.session(python=TORCH_PYTHON)
def demo(session: nox.Session) -> None:
    """Run the main job: config, cross-scope detector, optimizer, training, checkpoint, resume.

    Twice: on configs/demo.toml, then on configs/demo_small.yaml, which inherits it (YAML needs
    the yaml extra, PyYAML).
    """
    _install_packages(session, "pyyaml")
    for config in ("demo.toml", "demo_small.yaml"):
        workdir = Path(session.create_tmp()) / "demo" / config.partition(".")[0]
        workdir.mkdir(parents=True, exist_ok=True)
        session.run(
            "python",
            str(ROOT / "examples" / "train.py"),
            str(ROOT / "configs" / config),
            "--work-dir",
            str(workdir),
            *session.posargs,
        )


@nox.session(python=TORCH_PYTHON, default=False)
def fuzz(session: nox.Session) -> None:
    """Property-based tests of the core at fuzzing strength (100,000+ examples)."""
    session.install(str(ROOT / "packages/core"), *TEST_TOOLS)
    session.run(
        "pytest",
        str(ROOT / "packages/core/tests"),
        "-k",
        "properties",
        # Per-test example counts and run times: the figures the README's Reliability quotes.
        "--hypothesis-show-statistics",
        *session.posargs,
        env={"REGTREE_HYPOTHESIS_PROFILE": "fuzz"},
    )


# What `nox -s mutate -- NAME` runs mutmut over: the package folder, and the local packages
# installed (editable) for it. Each package configures its run in its own pyproject.toml.
MUTATE_TARGETS: dict[str, tuple[str, list[str]]] = {
    "core": ("packages/core", ["packages/core"]),
    "optim": ("packages/optim", ["packages/core", "packages/optim"]),
}


@nox.session(python=TORCH_PYTHON, default=False)
def mutate(session: nox.Session) -> None:
    """Mutation testing (mutmut) of the core's registry modules, or of regtree_optim's rules.

    ``nox -s mutate`` runs the core's registry, build, scope and plugin modules; ``nox -s mutate
    -- optim`` regtree_optim's rule modules (SPEC 3.3: rules, compose, layer decay, model hooks).
    The modules and the tests each runs are set in that package's pyproject.toml ([tool.mutmut]);
    the package is installed with only what it needs and torch (the core's list builds), so no
    other installed plugin joins the run. Any further arguments go to ``mutmut run`` (``--
    optim --max-children 1``). Prints the surviving mutants at the end; ``mutmut show NAME`` (in
    the package's folder) shows one.
    """
    args = list(session.posargs)
    target = args.pop(0) if args and args[0] in MUTATE_TARGETS else "core"
    folder, editable = MUTATE_TARGETS[target]
    session.install(
        "-c",
        CONSTRAINTS,
        *[arg for package in editable for arg in ("-e", str(ROOT / package))],
        *TEST_TOOLS,
        "pyyaml",
        "torch",
        *TORCH_EXTRAS,
    )
    session.install("mutmut>=3.8,<4")
    with session.chdir(ROOT / folder):
        shutil.rmtree("mutants", ignore_errors=True)
        # One OpenMP thread: mutmut forks each mutant from a process whose torch has run the
        # tests, and a fork inherits OpenMP's thread pool without its threads, so a matmul in
        # the child waits forever (a timeout that no mutant caused).
        session.run("mutmut", "run", *args, env={"OMP_NUM_THREADS": "1"})
        session.run("mutmut", "results")


# Peers for the benchmarks: (name, pip argument lists installed in order, environment).
# mmcv 1.x is built from source without its compiled ops; its setup script needs pkg_resources,
# which setuptools 81 dropped, and it must build against the torch already installed.
BENCH_PEERS: list[tuple[str, list[list[str]], dict[str, str]]] = [
    ("mmengine", [["mmengine==0.10.7"]], {}),
    (
        "mmcv",
        [["setuptools<81"], ["--no-build-isolation", "mmcv==1.7.2"]],
        {"MMCV_WITH_OPS": "0"},
    ),
    # Its shipped configs (mmdet/.mim/configs) only, for the config-loading benchmark.
    ("mmdet", [["--no-deps", "mmdet==2.28.2"]], {}),
]


def _install_peers(session: nox.Session) -> list[str]:
    """Install BENCH_PEERS through the constraints file; return a note for each that failed.

    Checks afterwards that no peer replaced the pinned torch.
    """
    notes: list[str] = []
    for name, steps, env in BENCH_PEERS:
        try:
            for args in steps:
                session.install("-c", CONSTRAINTS, *args, env=env)
        except CommandFailed as error:
            notes.append(f"{name} did not install ({error.reason}); its rows are skipped.")
            session.warn(f"{name} did not install; the benchmarks run without it")
    pinned = Path(CONSTRAINTS).read_text().split("torch==")[1].split()[0]
    session.run(
        "python",
        "-c",
        f"import torch, sys; sys.exit(torch.__version__.split('+')[0] != {pinned!r})",
        silent=True,
    )
    return notes


@nox.session(python=TORCH_PYTHON, default=False)
def bench(session: nox.Session) -> None:
    """Benchmarks beside their floors and peers; writes benchmarks/results.md and .json.

    A peer that does not install is skipped with a note in the results, never a failure. Every
    install goes through the constraints file so that no peer can replace the pinned torch.
    """
    _install_packages(session)
    notes = _install_peers(session)
    notes_file = Path(session.create_tmp()) / "install-notes.json"
    notes_file.write_text(json.dumps(notes))
    session.run(
        "python",
        str(ROOT / "benchmarks" / "run.py"),
        "--install-notes",
        str(notes_file),
        *session.posargs,
    )


@nox.session(python=TORCH_PYTHON, default=False)
def compat(session: nox.Session) -> None:
    """Compare our parameter groups with mmcv's and mmengine's, per tensor, on random configs.

    The peers install as for the benchmarks (BENCH_PEERS); here a peer that does not install
    fails the session, since there is nothing to compare with. Fails on any difference that
    the root README does not document.

    Then every config shipped in the mmdet 2.28.2 wheel (BENCH_PEERS installs it without its
    dependencies), loaded by mmcv's Config.fromfile and by regtree, compared (SPEC 5.3).
    """
    _install_packages(session)
    notes = _install_peers(session)
    if notes:
        session.error(" ".join(notes))
    session.run("python", str(ROOT / "benchmarks" / "compat.py"), *session.posargs)
    session.run("python", str(ROOT / "tests" / "mmdet_configs_check.py"))
