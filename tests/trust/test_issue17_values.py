"""Issue 17 regressions about values: `serve --rate` (#6), huge clusters (#7), tracebacks on untrusted
input (#8), silently accepted values (#12), terminal escape codes (#13), Ctrl-C at start-up (#14)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from llmplan.errors import ConfigError, InputError, PlanFileError
from llmplan.formats.hf_config import spec_from_config
from llmplan.plan.planfile import loads_plan
from tests.trust._issue17 import EXAMPLE, MODEL, cli, env, example_plan, llama_config, one_clean_error

BIG = "9" * 5000  # over Python's 4,300-digit int limit: json.loads raised a bare ValueError


def _plan_text(**changes) -> str:
    plan = example_plan()
    for dotted, value in changes.items():
        node = plan
        *parents, leaf = dotted.split("__")
        for key in parents:
            node = node.setdefault(key, {})
        node[leaf] = value
    return json.dumps(plan)


# ---- #6 serve --rate ------------------------------------------------------------------------------

@pytest.mark.parametrize("rate", ["inf", "1e9", "nan", "-1"])
def test_serve_rate_is_bounded(tmp_path, rate):
    start = time.monotonic()
    proc = cli(["serve", "--model", MODEL, "--rate", rate, "--ttft", "1", "--tpot", "0.1",
                "--gpus", "nvidia-h100-sxm-80gb,nvidia-a100-sxm4-80gb"], tmp_path, timeout=60)
    assert "rate_per_s" in one_clean_error(proc)
    assert time.monotonic() - start < 30


def test_serve_at_the_largest_rate_finishes(tmp_path):
    proc = cli(["serve", "--model", MODEL, "--rate", "1e6", "--ttft", "1", "--tpot", "0.1",
                "--gpus", "nvidia-h100-sxm-80gb,nvidia-a100-sxm4-80gb,nvidia-l4-24gb"], tmp_path, timeout=60)
    assert proc.returncode == 0, proc.stderr.decode()[-1000:]


# ---- #7 huge clusters -----------------------------------------------------------------------------

def test_search_on_a_cluster_the_schema_allows(tmp_path):
    proc = cli(["search", "--model", MODEL, "--gpu", "nvidia-h100-sxm-80gb", "--gpus", "8", "--nodes", "200000",
                "--set", "hardware.network=ib-ndr-400", "--json"], tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    assert all(x["layout"]["dp"] <= 1_000_000 for x in json.loads(proc.stdout)["best"])


# ---- #8 tracebacks on untrusted input -------------------------------------------------------------

def test_5000_digit_integers_in_a_plan_and_a_config(tmp_path):
    with pytest.raises(PlanFileError, match="5,000 digits"):
        loads_plan(_plan_text(hardware__nodes=123454321).replace("123454321", BIG))
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps(llama_config()).replace('"vocab_size": 128256', f'"vocab_size": {BIG}'))
    assert "5,000 digits" in one_clean_error(cli(["params", str(cfg)], tmp_path))


@pytest.mark.parametrize("flag", ["--compare-run", "--calibration"])
def test_5000_digit_integers_in_compare_run_and_calibration(tmp_path, flag):
    f = tmp_path / "run.json"
    f.write_text(f'{{"peak_memory_bytes": {BIG}}}')
    err = one_clean_error(cli(["estimate", "--model", MODEL, "--gpu", "nvidia-h100-sxm-80gb", flag, str(f)], tmp_path))
    assert "digits" in err


def test_5000_digit_integers_in_safetensors_header_and_index(tmp_path):
    from llmplan.formats.safetensors_index import read_index, read_safetensors_header

    header = f'{{"w": {{"dtype": "BF16", "shape": [{BIG}], "data_offsets": [0, 2]}}}}'.encode()
    shard = tmp_path / "model.safetensors"
    shard.write_bytes(len(header).to_bytes(8, "little") + header)
    with pytest.raises(ConfigError, match="digits"):
        read_safetensors_header(shard)
    index = tmp_path / "model.safetensors.index.json"
    index.write_text(f'{{"metadata": {{"total_size": {BIG}}}, "weight_map": {{}}}}')
    with pytest.raises(ConfigError, match="digits"):
        read_index(index)


@pytest.mark.parametrize("hardware", ['"h100"', "8", "true", "[1, 2]"])
def test_schema_0_plans_with_a_hardware_value_that_is_not_an_object(hardware):
    text = json.dumps({"format": "llmplan", "schema_version": 0, "model": {"id": MODEL}}).replace(
        '"model"', f'"hardware": {hardware}, "model"')
    with pytest.raises(PlanFileError, match="'hardware' must be an object"):
        loads_plan(text)


def test_set_with_deep_brackets_is_one_error_line(tmp_path):
    deep = "[" * 5000 + "]" * 5000
    assert "nested more than" in one_clean_error(cli(["estimate", str(EXAMPLE), "--set", f"notes={deep}"], tmp_path))


@pytest.mark.parametrize(("field", "value"), [("hidden_size", 2**1000), ("num_layers", 10**18),
                                              ("vocab_size", 1e300), ("intermediate_size", 2**62)])
def test_inline_specs_are_bounded_like_configs(tmp_path, field, value):
    spec = spec_from_config(llama_config(), name="x").model_dump(mode="json")
    spec[field] = value
    plan = example_plan()
    plan["model"] = {"spec": spec, "name": "x"}
    f = tmp_path / "p.llmplan"
    f.write_text(json.dumps(plan))
    err = one_clean_error(cli(["estimate", str(f)], tmp_path))
    assert field in err or "digits" in err


def test_a_damaged_saved_calibration_is_a_note_for_this_machine(tmp_path):
    (tmp_path / "calibration.json").write_text('{"format": "llmplan-calibration", "schema_version": 1, '
                                              f'"matmul": [{{"flops_per_s": {BIG}}}]}}')
    fixture = os.path.join(os.path.dirname(__file__), "..", "data", "hw", "detect_rtx4090_with_host.json")
    proc = cli(["estimate", "--model", MODEL, "--this-machine", "--detection-fixture", fixture], tmp_path)
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    proc = cli(["catalog", "problems"], tmp_path)
    assert b"calibration not used" in proc.stdout


# ---- #12 accepted silently -------------------------------------------------------------------------

@pytest.mark.parametrize(("path", "value"), [
    ("training__seq_len", True), ("hardware__nodes", True), ("parallelism__tp", True), ("training__tokens", True),
    ("hardware__price_per_gpu_hour", True), ("training__seq_len", "4096"), ("hardware__nodes", "2"),
    ("inference__batch", False)])
def test_booleans_and_strings_are_not_numbers(path, value):
    with pytest.raises(PlanFileError, match="true/false and text are not numbers"):
        loads_plan(_plan_text(**{path: value}))


def test_booleans_are_not_numbers_in_set(tmp_path):
    err = one_clean_error(cli(["estimate", str(EXAMPLE), "--set", "hardware.nodes=true"], tmp_path))
    assert "nodes" in err


def test_duplicate_keys_are_refused():
    text = _plan_text().replace('"format": "llmplan"', '"format": "llmplan", "format": "other"')
    with pytest.raises(PlanFileError, match="appears twice"):
        loads_plan(text)


@pytest.mark.parametrize(("key", "value", "message"), [
    ("intermediate_size", 0, "'intermediate_size' is 0"), ("max_position_embeddings", 0, "is 0")])
def test_zero_where_zero_is_meaningless_names_the_field(key, value, message):
    with pytest.raises(ConfigError, match=message):
        spec_from_config(llama_config() | {key: value})


@pytest.mark.parametrize("layer_types", [["sliding_attention"], "sliding", [1] * 24, ["full_attention"] * 25])
def test_gpt_oss_layer_types_of_the_wrong_shape(layer_types):
    cfg = {"model_type": "gpt_oss", "vocab_size": 201088, "hidden_size": 2880, "num_hidden_layers": 24,
           "num_attention_heads": 64, "num_key_value_heads": 8, "head_dim": 64, "intermediate_size": 2880,
           "num_local_experts": 32, "num_experts_per_tok": 4, "sliding_window": 128, "layer_types": layer_types}
    with pytest.raises(ConfigError, match="layer_types"):
        spec_from_config(cfg)


def test_nextn_layers_are_capped():
    from llmplan.catalog.models import load_model_catalog

    entry = next(e for e in load_model_catalog().entries if e.config.get("model_type") == "deepseek_v3")
    with pytest.raises(ConfigError, match="num_nextn_predict_layers"):
        spec_from_config(dict(entry.config) | {"num_nextn_predict_layers": 10**6})


def test_implausible_gpu_memory_from_a_driver_is_refused():
    from llmplan.hw.types import DetectedGpu

    with pytest.raises(ValueError, match="not plausible"):
        DetectedGpu(vendor="nvidia", name="x", memory_total_bytes=2**64, memory_free_bytes=None, index=0,
                    source="nvml")
    g = DetectedGpu(vendor="nvidia", name="x", memory_total_bytes=80 * 2**30, memory_free_bytes=2**64, index=0,
                    source="nvml")
    assert g.memory_free_bytes is None


def test_a_too_large_model_is_refused_at_import_not_dropped_at_next_start(tmp_path, monkeypatch):
    from llmplan.catalog.models import load_model_catalog, save_user_model

    monkeypatch.setenv("LLMPLAN_DATA_DIR", str(tmp_path))
    big = llama_config() | {"id2label": {str(i): "label" * 20 for i in range(12_000)}}  # ~1.2 MB entry
    with pytest.raises(InputError, match="cannot be added to your models"):
        save_user_model(big, "Big")
    assert not list((tmp_path / "models").glob("*.json"))
    assert not load_model_catalog(refresh=True).problems


# ---- #13 terminal escape codes ----------------------------------------------------------------------

def test_escape_codes_in_a_plan_are_printed_escaped(tmp_path):
    f = tmp_path / "p.llmplan"
    f.write_text(_plan_text(name="\x9b2J", model__name="\x1b]0;owned\x07\x1b[31mred\r\x9b2J"))
    proc = cli(["estimate", str(f)], tmp_path)
    assert proc.returncode == 0, proc.stderr.decode()
    out = proc.stdout.decode()
    assert "\x1b" not in out and "\x07" not in out and "\r" not in out and "\x9b" not in out
    assert "\\u001b]0;owned" in out
    proc = cli(["estimate", str(f), "--json"], tmp_path)
    json.loads(proc.stdout)  # still strict JSON


def test_escape_codes_in_gpu_names_from_tools_are_escaped():
    from llmplan.hw.nvidia import parse_nvidia_smi_csv

    row = "0, GPU-1, NVIDIA \x1b[2JH100, 81559, 0, 81559, 550.54, 9.0, 5, 16, [N/A]"
    (gpu,) = parse_nvidia_smi_csv(row)
    assert "\x1b" not in gpu.name and "\\x1b[2J" in gpu.name


# ---- #14 Ctrl-C during start-up ------------------------------------------------------------------

@pytest.mark.skipif(os.name != "posix", reason="SIGINT")
@pytest.mark.parametrize("delay", [0.15, 0.3, 0.5])
def test_ctrl_c_during_start_up_is_quiet(tmp_path, delay):
    proc = subprocess.Popen([sys.executable, "-m", "llmplan", "estimate", str(EXAMPLE)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env(tmp_path))
    time.sleep(delay)
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=60)
    if proc.returncode == 0:
        pytest.skip("the command finished before the interrupt arrived")
    # 130 from llmplan; -SIGINT when the signal came before Python installed its handler (no output then).
    # On a loaded machine the signal can also land while the interpreter's runpy is still locating the
    # package, before any llmplan code runs: that traceback holds only <frozen runpy> frames, and no program
    # can intercept it. Anything with a frame of ours (or of a library we import) must not show a traceback.
    text = err.decode(errors="replace")
    frames = [line for line in text.splitlines() if line.strip().startswith("File ")]
    before_our_code = bool(frames) and all("<frozen " in f for f in frames) and text.rstrip().endswith("KeyboardInterrupt")
    assert before_our_code or (b"Traceback" not in err and proc.returncode in (130, -signal.SIGINT)), text[-2000:]
