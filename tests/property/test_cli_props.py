"""``llmplan-cli`` with hostile arguments: exit 0 with output (1 when a search matched nothing), or exit 2
with one clear line on stderr (argparse's usage, then its one-line error, or ``llmplan-cli: error: ...``);
never a traceback.

The CLI runs in this process (``llmplan.cli.main``), so any exception that escapes fails the test.
Paths point at real oddities: a binary file, a folder, a 10 GB sparse file, /etc/passwd, ../../x."""

from __future__ import annotations

import atexit
import contextlib
import io
import os
import shutil
import tempfile
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from llmplan.cli import main
from llmplan.resources_path import resources_dir
from tests.property._support import CASES, NASTY_TEXT, fuzz

_TMP = Path(tempfile.mkdtemp(prefix="llmplan-cli-fuzz-"))
atexit.register(shutil.rmtree, _TMP, True)
(_TMP / "binary.llmplan").write_bytes(bytes(range(256)) * 4)
(_TMP / "folder").mkdir()
(_TMP / "folder" / "config.json").write_text('{"model_type": "llama", "hidden_size": NaN}')
for _name in ("big.llmplan", "big.gguf", "big.json"):
    with (_TMP / _name).open("wb") as _f:
        _f.truncate(10 * 2**30)  # sparse: reading one whole would take 10 GB

EXAMPLE = str(sorted((resources_dir() / "examples").glob("*.llmplan"))[0])
PATHS = [EXAMPLE, str(_TMP / "binary.llmplan"), str(_TMP / "folder"), str(_TMP / "big.llmplan"),
         str(_TMP / "big.gguf"), str(_TMP / "big.json"), "/etc/passwd", "../../x", "/dev/null", "nonexistent.llmplan"]
IDS = ["meta-llama/Llama-3.1-8B", "meta-llama/Llama-3.1-405B", "nvidia-h100-sxm-80gb", "apple-m2-max-38c-96gb",
       "no-such-id", "vllm", "llama.cpp"]
NUMBERS = ["0", "-1", "1", "8", "1024", "1e400", "nan", "inf", "99999999999999999999", "0.5", "-0"]
VALUES = st.sampled_from(PATHS + IDS + NUMBERS) | NASTY_TEXT
SET_PATHS = ["parallelism.tp", "parallelism.pp", "training.seq_len", "training.micro_batch", "inference.batch",
             "hardware.nodes", "hardware.gpus_per_node", "workload", "training.method", "model.id", "hardware.gpu",
             "inference.weight_format", "efficiency.matmul", "model.config.hidden_size", "nope", ""]
SET_VALUES = st.sampled_from([*NUMBERS, "true", "null", "[1]", "{}", '"x"', "lora", "q4_k_m", "inference"]) | NASTY_TEXT
# flags each subcommand accepts (and a few it does not); --save is left out: it writes files
FLAGS = {
    "estimate": ["--model", "--gpu", "--gpus", "--nodes", "--network", "--workload", "--set", "--json", "--gb",
                 "--auto", "--bogus"],
    "search": ["--model", "--gpu", "--gpus", "--nodes", "--workload", "--set", "--json", "--top", "--objective",
               "--exact-gpus", "--quick"],
    "serve": ["--model", "--rate", "--prompt", "--output", "--ttft", "--tpot", "--weight-format", "--kv-dtype",
              "--engine", "--mix", "--gpus", "--json"],
    "params": ["--json"],
    "catalog": ["gpus", "models", "nodes", "networks", "--json", "--family", "--search", "--vendor"],
    "detect": ["--json"],
    "schema": [],
    "bogus": ["--json"],
}
_SWITCHES = {"--json", "--gb", "--auto", "--exact-gpus", "--quick", "gpus", "models", "nodes", "networks"}


def _argument(text: str) -> str:
    """A command line cannot carry a NUL byte (execve takes C strings), so none reaches main()."""
    return text.replace("\x00", "")


@st.composite
def argv(draw):
    cmd = draw(st.sampled_from(sorted(FLAGS)))
    args = [cmd]
    if cmd in ("estimate", "params") and draw(st.booleans()):
        args.append(draw(VALUES))
    for flag in draw(st.lists(st.sampled_from(FLAGS[cmd] or ["--json"]), max_size=5)):
        args.append(flag)
        if flag == "--set":
            args.append(f"{draw(st.sampled_from(SET_PATHS))}={draw(SET_VALUES)}")
        elif flag not in _SWITCHES:
            args.append(draw(VALUES))
    return [_argument(a) for a in args]


def run_cli(args: list[str]) -> tuple[int, str, str]:
    CASES["CLI arguments"] += 1
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(args)
        except SystemExit as exc:  # argparse: --help/--version (0) or a usage error (2)
            code = exc.code if isinstance(exc.code, int) else 2
    return code, out.getvalue(), err.getvalue()


def _check(args: list[str]) -> None:
    old = os.environ.get("LLMPLAN_DATA_DIR")
    os.environ["LLMPLAN_DATA_DIR"] = str(_TMP / "data")  # no user catalog, nothing written to the real one
    try:
        code, out, err = run_cli(args)
    finally:
        if old is None:
            os.environ.pop("LLMPLAN_DATA_DIR")
        else:
            os.environ["LLMPLAN_DATA_DIR"] = old
    assert "Traceback" not in err and "Traceback" not in out, err
    assert code in (0, 1, 2), (args, code, err)
    if code == 1:  # a valid question with no answer ("no models match"), said on stdout, grep-style
        assert out.strip() and not err.strip(), (args, out, err)
    if code == 2:
        lines = [line for line in err.splitlines() if line.strip()]
        assert lines, f"exit 2 with nothing on stderr: {args}"
        errors = [line for line in lines if "error:" in line]
        assert len(errors) == 1, f"expected one error line, got {lines}"
        assert lines[-1] == errors[0], lines  # argparse's usage lines may come first; the error line is last


@fuzz
@given(argv())
def test_any_arguments(args):
    _check(args)


@fuzz
@given(st.lists(st.tuples(st.sampled_from(SET_PATHS), SET_VALUES), min_size=1, max_size=3))
def test_set_overrides_on_a_plan(sets):
    _check(["estimate", EXAMPLE, "--json", *[_argument(f"--set={p}={v}") for p, v in sets]])


def test_save_goes_where_asked_and_nowhere_else(tmp_path):
    target = tmp_path / "out.llmplan"
    _check(["estimate", EXAMPLE, "--save", str(target)])
    assert target.is_file()
    _check(["estimate", EXAMPLE, "--save", str(tmp_path / "no" / "such" / "folder" / "x.llmplan")])
