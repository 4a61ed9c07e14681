"""Nothing of a Python config runs: no import, exec, compile or process launch is seen."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

# Each would write MARKER, print, import os or call __import__ if it were run.
MALICIOUS = {
    "writes.py": "open('MARKER', 'w').write('ran')\nmodel = dict(type='Net')\n",
    "prints.py": "print('THE CONFIG RAN')\nmodel = dict(type='Net')\n",
    "imports.py": "import os\nos.system('touch MARKER')\n",
    "dunder_import.py": "x = __import__('os').system('touch MARKER')\n",
    "in_a_value.py": "model = dict(type=__import__('subprocess').run(['touch', 'MARKER']))\n",
    "in_a_comprehension.py": "x = [__import__('os').system('touch MARKER') for _ in range(1)]\n",
    "in_an_fstring.py": "x = f\"{__import__('os').system('touch MARKER')}\"\n",
    "decorated.py": "@__import__('os').system\ndef touch():\n    pass\n",
    "exec.py": "exec(\"open('MARKER', 'w').write('ran')\")\n",
    "eval_in_dict.py": 'model = dict(lr=eval(\'__import__("os").system("touch MARKER")\'))\n',
    "method_chain.py": "x = ''.__class__.__mro__[1].__subclasses__()\n",
    "format_attribute.py": "x = '{0.__class__.__init__.__globals__}'.format('')\n",
    "evil_base.py": "import os\nos.system('touch MARKER')\n",
    "inherits_evil.py": "_base_ = './evil_base.py'\nmodel = dict(type='Net')\n",
}

CHILD = """
import json, sys
from pathlib import Path
from regtree.config import ConfigError, load_config

folder = Path(sys.argv[1])
load_config(folder / "warm.py")  # every module the reader needs is imported before the hook
events = []


def hook(event, args):
    if event == "compile":
        caller = sys._getframe(1).f_code
        if caller.co_name != "parse" or not caller.co_filename.endswith("ast.py"):
            events.append([event, caller.co_filename, caller.co_name])  # only ast.parse
    elif event == "open":
        if args[1] not in ("r", "rb") or not str(args[0]).endswith(".py"):
            events.append([event, str(args[0]), str(args[1])])  # reading the config only
    elif event in ("import", "exec", "subprocess.Popen", "os.system", "os.posix_spawn",
                   "os.spawn", "os.exec", "os.fork", "os.forkpty", "ctypes.dlopen"):
        events.append([event, repr(args)[:120]])


sys.addaudithook(hook)
refusals = {}
for name in sys.argv[2:]:
    try:
        load_config(folder / name)
        refusals[name] = None
    except ConfigError as exc:
        refusals[name] = str(exc)
print(json.dumps({"events": events, "refusals": refusals}))
"""


def test_a_config_that_is_malicious_if_run_runs_nothing_and_is_refused(tmp_path: Path) -> None:
    for name, source in {**MALICIOUS, "warm.py": "x = dict(a=[i for i in range(2)])\n"}.items():
        (tmp_path / name).write_text(source, encoding="utf-8")
    names = [name for name in MALICIOUS if name != "evil_base.py"]
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(CHILD), str(tmp_path), *names],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "THE CONFIG RAN" not in result.stdout
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["events"] == []
    for name in names:
        message = report["refusals"][name]
        assert message is not None, f"{name} was loaded"
        assert "Python configs are read without being run" in message, message
        assert ", line " in message
    assert not (tmp_path / "MARKER").exists()


def test_the_fixture_does_write_its_marker_when_it_is_run(tmp_path: Path) -> None:
    (tmp_path / "writes.py").write_text(MALICIOUS["writes.py"], encoding="utf-8")
    subprocess.run([sys.executable, "writes.py"], cwd=tmp_path, check=True, timeout=60)
    assert (tmp_path / "MARKER").read_text() == "ran"
