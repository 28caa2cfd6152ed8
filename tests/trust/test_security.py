"""Security: plan files and catalogs are data only; paths written in a plan are never followed;
nothing talks to the network unless the person asks.

- the source never deserialises or executes file content (no pickle/marshal/shelve/yaml, no
  eval/exec/compile/__import__, no import_module of a computed name, no shell=True);
- a plan whose text fields hold "/etc/passwd" or "../../x" opens no file while it is loaded,
  resolved and estimated (an audit hook records every file opened);
- the CLI's main flows and the GUI (start + an estimate) run with Internet sockets forbidden.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from llmplan.errors import LlmplanError
from llmplan.resources_path import resources_dir

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "llmplan"
EXAMPLES = sorted((resources_dir() / "examples").glob("*.llmplan"))

BANNED_MODULES = {"pickle", "cPickle", "marshal", "shelve", "dill", "cloudpickle", "joblib", "yaml", "jsonpickle"}
BANNED_CALLS = {"eval", "exec", "compile", "__import__", "execfile"}


def _violations(path: Path, root: Path = ROOT) -> list[str]:
    tree = ast.parse(path.read_text("utf-8"), str(path))
    out = []
    for node in ast.walk(tree):
        where = f"{path.relative_to(root)}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            out += [f"{where}: imports {n}" for n in names if n.split(".")[0] in BANNED_MODULES]
        elif isinstance(node, ast.Call):
            f = node.func
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
            if isinstance(f, ast.Name) and name in BANNED_CALLS:
                out.append(f"{where}: calls {name}()")
            if name == "import_module" and not (node.args and isinstance(node.args[0], ast.Constant)):
                out.append(f"{where}: import_module of a computed name")
            if any(k.arg == "shell" and not (isinstance(k.value, ast.Constant) and k.value.value is False)
                   for k in node.keywords):
                out.append(f"{where}: subprocess with shell=")
    return out


def test_source_never_executes_or_unpickles_data():
    files = sorted(SRC.rglob("*.py"))
    assert len(files) > 50
    found = [v for f in files for v in _violations(f)]
    assert not found, "\n".join(found)


def test_the_scan_catches_what_it_looks_for(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import pickle\nimport yaml\neval('1')\n__import__(x)\nimportlib.import_module(name)\n"
                   "subprocess.run('ls', shell=True)\n")
    assert len(_violations(bad, tmp_path)) == 6


# ---- paths in a plan are never followed --------------------------------------------------------

_OPENED: list[str] = []
_RECORDING = [False]


def _audit(event: str, args: tuple) -> None:
    # an int is a descriptor being wrapped (formats.bounded opens by path first, which is recorded)
    if _RECORDING[0] and event in ("open", "os.listdir", "os.scandir") and args and args[0] is not None \
            and not isinstance(args[0], int):
        _OPENED.append(str(args[0]))


sys.addaudithook(_audit)  # cannot be removed; it records only while _RECORDING is set

def _expected_read(path: str) -> bool:
    """Catalog and resource files, the user data dir, and Python's own modules: nothing else."""
    from llmplan.resources_path import catalogs_dir, user_data_dir

    real = os.path.realpath(os.path.expanduser(path))
    allowed = [catalogs_dir(), resources_dir(), user_data_dir(), ROOT / "src", Path(sys.prefix), Path(sys.base_prefix)]
    return any(real.startswith(os.path.realpath(a) + os.sep) for a in allowed)


STRING_FIELDS = ["name", "notes", "model.id", "model.name", "hardware.gpu", "hardware.network", "inference.engine",
                 "inference.weight_format", "inference.kv_dtype", "model.config._name_or_path",
                 "model.config.model_type", "model.config.tokenizer_file"]
HOSTILE = ["/etc/passwd", "../../x", "../../../../../../etc/shadow", "file:///etc/passwd", "~/.ssh/id_rsa",
           "\\\\server\\share\\x"]


@pytest.mark.parametrize("value", HOSTILE)
def test_paths_in_plan_fields_are_never_opened(value):
    from llmplan.cli.report import estimate_json
    from llmplan.plan.evaluate import evaluate_plan
    from llmplan.plan.planfile import loads_plan

    checked = 0
    for example in EXAMPLES:
        base = json.loads(example.read_text("utf-8"))
        for field in STRING_FIELDS:
            doc = json.loads(json.dumps(base))
            node = doc
            *parents, leaf = field.split(".")
            for key in parents:
                node = node.setdefault(key, {}) if isinstance(node.get(key, {}), dict) else {}
            node[leaf] = value
            _OPENED.clear()
            _RECORDING[0] = True
            try:
                plan = loads_plan(json.dumps(doc))
                scenario, est = evaluate_plan(plan)  # what the CLI and the GUI run for a plan
                estimate_json(est, scenario, "plan")
            except LlmplanError:
                pass
            finally:
                _RECORDING[0] = False
            leaked = [p for p in _OPENED if not _expected_read(p)]
            assert not leaked, f"{example.name}: {field}={value!r} opened {leaked}"
            checked += 1
    assert checked == len(EXAMPLES) * len(STRING_FIELDS)


def test_the_open_recorder_sees_reads():
    _OPENED.clear()
    _RECORDING[0] = True
    try:
        with open(os.devnull, "rb"):
            pass
    finally:
        _RECORDING[0] = False
    assert os.devnull in _OPENED and not _expected_read("/etc/passwd") and not _expected_read("../../x")


# ---- no network unless asked ---------------------------------------------------------------------

NO_NET = r"""
import os, socket, sys
def refuse(*a, **k):
    sys.stderr.write("NETWORK ATTEMPT %r\n" % (a[:2],)); sys.stderr.flush(); os._exit(97)
class GuardedSocket(socket.socket):
    def __init__(self, family=-1, *a, **k):
        if family in (socket.AF_INET, socket.AF_INET6):
            refuse("socket", family)
        super().__init__(family, *a, **k)
socket.socket = GuardedSocket
socket.create_connection = refuse
socket.getaddrinfo = refuse
socket.gethostbyname = refuse
def hook(event, args):
    if event in ("socket.connect", "socket.getaddrinfo", "socket.gethostbyname", "urllib.Request", "http.client.connect"):
        refuse(event, args)
sys.addaudithook(hook)
import json
which = sys.argv[1]
if which == "cli":  # every CLI flow in this one process: one Python start for all of them
    from llmplan.cli import main
    for argv in json.loads(sys.argv[2]):
        print("FLOW", json.dumps(argv), "EXIT", main(argv), flush=True)
    sys.exit(0)
from llmplan.gui.app import main
sys.exit(main(sys.argv[2:]))
"""

FLOWS = {
    "estimate plan": ["cli", "estimate", str(EXAMPLES[0]), "--json"],
    "estimate flags": ["cli", "estimate", "--model", "meta-llama/Llama-3.1-8B", "--gpu", "nvidia-h100-sxm-80gb",
                       "--gpus", "8", "--workload", "finetune"],
    "search": ["cli", "search", "--model", "meta-llama/Llama-3.1-70B", "--gpu", "nvidia-h100-sxm-80gb", "--gpus", "8",
               "--nodes", "2", "--network", "ib-ndr-400", "--top", "3"],
    "serve": ["cli", "serve", "--model", "meta-llama/Llama-3.1-8B", "--rate", "5", "--ttft", "1", "--tpot", "0.1"],
    "detect": ["cli", "detect", "--json"],
    "catalog gpus": ["cli", "catalog", "gpus"],
    "catalog models": ["cli", "catalog", "models", "--json"],
    "params": ["cli", "params", "deepseek-ai/DeepSeek-V3"],
    "gui start + estimate": ["gui", "--self-test", str(EXAMPLES[0])],
}


def _run_guarded(args: list[str], tmp_path: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"), LLMPLAN_DATA_DIR=str(tmp_path / "data"),
               XDG_CONFIG_HOME=str(tmp_path / "config"), QT_QPA_PLATFORM="offscreen", HOME=str(tmp_path))
    return subprocess.run([sys.executable, "-c", NO_NET, *args], capture_output=True, text=True, env=env,
                          timeout=300, cwd=tmp_path)


def test_cli_flows_make_no_network_connection(tmp_path):
    flows = {name: argv[1:] for name, argv in FLOWS.items() if argv[0] == "cli"}
    proc = _run_guarded(["cli", json.dumps(list(flows.values()))], tmp_path)
    assert "NETWORK ATTEMPT" not in proc.stderr, proc.stderr
    assert proc.returncode == 0, proc.stderr[-2000:]
    exits = [json.loads(line.split(" EXIT ")[1]) for line in proc.stdout.splitlines() if line.startswith("FLOW ")]
    assert len(exits) == len(flows), proc.stdout[-2000:]
    for name, code in zip(flows, exits, strict=True):
        # search may legitimately say "no layout fits" (exit 2); every other flow must succeed
        assert code == 0 or (name == "search" and code == 2), (name, code, proc.stderr[-2000:])


def test_gui_start_and_estimate_make_no_network_connection(tmp_path):
    pytest.importorskip("PySide6.QtWidgets")
    proc = _run_guarded(FLOWS["gui start + estimate"], tmp_path)
    assert "NETWORK ATTEMPT" not in proc.stderr, proc.stderr
    assert proc.returncode == 0 and "self-test" in proc.stdout, proc.stderr[-2000:]


def test_the_network_guard_works(tmp_path):
    code = NO_NET.replace('which = sys.argv[1]', 'import urllib.request; urllib.request.urlopen("http://example.com")', 1)
    proc = subprocess.run([sys.executable, "-c", code, "cli"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 97 and "NETWORK ATTEMPT" in proc.stderr
