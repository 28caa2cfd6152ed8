"""Every published figure llmplan reproduces, in one registry: the reference value, its source, the
tolerance, and how to compute our value.

Two consumers read this list, so they cannot drift apart:
- ``tests/trust/test_reference_figures.py`` checks each row (our value within tolerance of the reference);
- ``scripts/accuracy_report.py`` (``make accuracy``) writes docs/accuracy.md from it.

The rows are taken from the published-figure tests elsewhere in ``tests/`` (which stay as they are) and
from the model catalog's measured checkpoint totals; every reference value is quoted from its source,
none is invented. ``kind`` says what the reference is:
- ``measured``: a number someone measured on real hardware or a real file (checkpoint sizes, GGUF files,
  throughput);
- ``published``: a number printed in a paper (a table or the text);
- ``formula``: a closed form from a paper, evaluated for the row's shapes (our per-tensor count must agree);
- ``calibration``: a measured number that was also used to set one of our efficiency constants, so it
  checks the model's shape more than its prediction.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Literal

GIB = 2**30

Kind = Literal["measured", "published", "formula", "calibration"]


@dataclass(frozen=True)
class Reference:
    id: str
    group: str
    quantity: str
    reference: float
    unit: str
    source: str
    compute: Callable[[], float]
    rel_tol: float = 0.0
    abs_tol: float = 0.0  # for values printed rounded (half a unit of the last printed digit)
    kind: Kind = "published"

    def error(self, ours: float) -> float:
        """Relative error of our value against the reference."""
        return (ours - self.reference) / self.reference

    def within(self, ours: float) -> bool:
        return abs(ours - self.reference) <= max(self.rel_tol * abs(self.reference), self.abs_tol)

    @property
    def tolerance_text(self) -> str:
        if self.rel_tol == 0 and self.abs_tol == 0:
            return "exact"
        parts = [f"±{self.rel_tol:.0%}" if self.rel_tol >= 0.01 else f"±{self.rel_tol:.1%}"] if self.rel_tol else []
        if self.abs_tol:
            parts.append(f"±{self.abs_tol:g} {self.unit}")
        return " or ".join(parts)


# ---- parameter counts --------------------------------------------------------------------------------

def _params(cfg: dict, which: str = "total") -> Callable[[], float]:
    def compute() -> float:
        from llmplan.core.params import count_params
        from llmplan.formats.hf_config import spec_from_config

        return getattr(count_params(spec_from_config(cfg)), which)

    return compute


@cache
def _catalog():
    from llmplan.catalog.models import load_model_catalog

    return load_model_catalog(include_user=False)


def _catalog_row(model_id: str) -> Reference:
    entry = _catalog().get(model_id)

    def compute() -> float:
        from llmplan.core.params import count_params

        return count_params(entry.spec).total

    return Reference(f"params-{model_id}", "Parameter counts", f"{model_id}: total parameters",
                     entry.reference_params.total, "parameters",
                     f"{entry.reference_params.source} (catalogs/models)", compute, kind="measured")


def _param_rows() -> list[Reference]:
    from tests.core.inference.models import LLAMA3_8B, LLAMA_7B, MISTRAL_7B_V01, MIXTRAL_8X7B

    src = "safetensors index metadata.total_size / 2 bytes (bf16) of the Hugging Face checkpoint"
    rows = [
        Reference("params-llama-2-7b", "Parameter counts", "Llama-2-7B: total parameters", 6_738_415_616,
                  "parameters", f"meta-llama/Llama-2-7b-hf {src}: 13,476,831,232 B", _params(LLAMA_7B),
                  kind="measured"),
        Reference("params-llama-3-8b", "Parameter counts", "Meta-Llama-3-8B: total parameters", 8_030_261_248,
                  "parameters", f"meta-llama/Meta-Llama-3-8B {src}: 16,060,522,496 B", _params(LLAMA3_8B),
                  kind="measured"),
        Reference("params-mistral-7b", "Parameter counts", "Mistral-7B-v0.1: total parameters", 7_241_732_096,
                  "parameters", f"mistralai/Mistral-7B-v0.1 {src}: 14,483,464,192 B", _params(MISTRAL_7B_V01),
                  kind="measured"),
        Reference("params-mixtral-8x7b", "Parameter counts", "Mixtral-8x7B: total parameters", 46_702_792_704,
                  "parameters", f"mistralai/Mixtral-8x7B-v0.1 {src}: 93,405,585,408 B", _params(MIXTRAL_8X7B),
                  kind="measured"),
        Reference("params-mixtral-8x7b-active", "Parameter counts", "Mixtral-8x7B: active parameters per token",
                  12.9e9, "parameters", "Mistral AI, 'Mixtral of experts' announcement (2023-12-11): "
                  "'12.9B active parameters'", _params(MIXTRAL_8X7B, "active"), abs_tol=0.05e9),
    ]
    for model_id in ("meta-llama/Llama-3.1-70B", "meta-llama/Llama-3.1-405B", "Qwen/Qwen2.5-72B",
                     "Qwen/Qwen3-235B-A22B", "google/gemma-2-27b", "microsoft/phi-4", "openai/gpt-oss-120b",
                     "Qwen/Qwen-72B"):
        rows.append(_catalog_row(model_id))
    return rows


# ---- ZeRO Table 1 -------------------------------------------------------------------------------------

def _zero_gb(psi: float, nd: int, stage: int) -> Callable[[], float]:
    def compute() -> float:
        from llmplan.core.training.shard import StageParams
        from llmplan.core.training.states import model_states
        from llmplan.core.workload import TrainingSettings

        tr = TrainingSettings(precision="fp16", optimizer="adamw", zero_stage=stage, fp32_grad_accumulation=False)
        sp = StageParams("only", psi, 0.0, psi, psi, 0.0, True, True)
        st = model_states(tr, sp, psi, 0.0, nd, 1, True)
        return (st.weights + st.gradients + st.master + st.optimizer) / 1e9

    return compute


def _zero_rows() -> list[Reference]:
    src = "Rajbhandari et al. 2020, ZeRO (arXiv:1910.02054), Table 1"
    table = [  # psi, Nd, stage, GB printed, half a unit of the last printed digit
        (7.5e9, 64, 0, 120, 0.5), (7.5e9, 64, 1, 31.4, 0.05), (7.5e9, 64, 2, 16.6, 0.05),
        (7.5e9, 64, 3, 1.88, 0.005), (128e9, 1024, 2, 258, 0.5), (1e12, 1024, 3, 15.6, 0.05),
    ]
    names = {0: "baseline DP", 1: "P_os (stage 1)", 2: "P_os+g (stage 2)", 3: "P_os+g+p (stage 3)"}
    return [Reference(f"zero-{psi / 1e9:g}b-{nd}-s{stage}", "Training memory (ZeRO)",
                      f"model states per GPU, Ψ={psi / 1e9:g}B, N_d={nd}, {names[stage]}", gb, "GB",
                      f"{src}, row Ψ={psi / 1e9:g}B, N_d={nd}", _zero_gb(psi, nd, stage), rel_tol=0.01, abs_tol=half)
            for psi, nd, stage, gb, half in table]


# ---- Korthikanti 2022 ----------------------------------------------------------------------------------

def _korthikanti_layer(tp: int, sp: bool, recompute: str) -> Callable[[], float]:
    def compute() -> float:
        from llmplan.core.training.activations import layer_bytes
        from llmplan.core.training.layout import resolve
        from tests.core.training.helpers import gpt, scenario

        sc = scenario(gpt(12288, 96, 96), tp * (8 if tp == 8 else 1), tp=tp, pp=8 if tp == 8 else 1, sp=sp,
                      seq_len=2048, micro_batch=1, recompute=recompute, flash_attention=False, dropout=0.1)
        return layer_bytes(sc.model, resolve(sc), sc.training) / 2**20

    return compute


def _korthikanti_rows() -> list[Reference]:
    s, b, h, a, t = 2048, 1, 12288, 96, 8
    sbh = s * b * h
    src = "Korthikanti et al. 2022 (arXiv:2205.05198), Table 2 closed form, GPT-3 175B shapes of Table 3"
    mib = 2**20
    return [
        Reference("korthikanti-175b-none", "Activation memory (Korthikanti)",
                  "175B, activations per layer, no parallelism: sbh(34 + 5as/h)", sbh * (34 + 5 * a * s / h) / mib,
                  "MiB", src, _korthikanti_layer(1, False, "none"), rel_tol=0.02, kind="formula"),
        Reference("korthikanti-175b-tp-sp", "Activation memory (Korthikanti)",
                  "175B, activations per layer, TP8 + sequence parallel: sbh(34/t + 5as/(ht))",
                  sbh * (34 / t + 5 * a * s / (h * t)) / mib, "MiB", src, _korthikanti_layer(8, True, "none"),
                  rel_tol=0.02, kind="formula"),
        Reference("korthikanti-175b-selective", "Activation memory (Korthikanti)",
                  "175B, activations per layer, TP8 + SP + selective recompute: sbh·34/t", sbh * 34 / t / mib, "MiB",
                  src, _korthikanti_layer(8, True, "selective"), rel_tol=0.02, kind="formula"),
    ]


# ---- Narayanan 2021 Table 1 ------------------------------------------------------------------------------

def _narayanan_tflops(row: tuple) -> Callable[[], float]:
    def compute() -> float:
        from tests.core.training.test_narayanan_2021 import predicted_tflops

        return predicted_tflops(row)  # with the hardware catalog's A100 SXM defaults

    return compute


def _narayanan_rows() -> list[Reference]:
    from tests.core.training.test_narayanan_2021 import ROWS

    src = ("Narayanan et al. 2021 (arXiv:2104.04473), Table 1, achieved teraFLOP/s per GPU; ours: the "
           "per-operation model with the catalog's A100 defaults and the Megatron profile (2021 settings: fp16, "
           "no flash attention, dropout 0.1, no sequence parallelism)")
    return [Reference(f"narayanan-{row[0]:g}b", "Training throughput (Megatron-LM)",
                      f"GPT {row[0]:g}B on {row[6]:,} A100 (TP{row[4]} PP{row[5]}, batch {row[7]}): TFLOP/s per GPU",
                      row[8], "TFLOP/s", src, _narayanan_tflops(row), rel_tol=0.22, kind="measured")
            for row in ROWS]


# ---- step time and MFU of other published runs -------------------------------------------------------

def _published_run(test: str, case: str) -> Callable[[], float]:
    def compute() -> float:
        from tests.core.training import test_published_runs as t

        return t.ours(case)

    return compute


def _published_run_rows() -> list[Reference]:
    from tests.core.training.test_published_runs import CASES

    return [Reference(key, "Training throughput (published runs)", c.quantity, c.reference, c.unit, c.source,
                      _published_run("published", key), rel_tol=c.tolerance, kind="measured")
            for key, c in CASES.items()]


def _fsdp_run(key: str) -> Callable[[], float]:
    def compute() -> float:
        from tests.core.training import test_fsdp_runs as t

        return t.ours(key)

    return compute


def _fsdp_run_rows() -> list[Reference]:
    """torchtitan's A100/H100 rows and OPT-175B; ``rel_tol``: the widest side of the band the test asserts."""
    from tests.core.training.test_fsdp_runs import ROWS

    return [Reference(key, "Training throughput (FSDP runs)", r.quantity, r.reference, r.unit, r.source,
                      _fsdp_run(key), rel_tol=max(abs(r.band[0]), abs(r.band[1])), kind="measured")
            for key, r in ROWS.items()]


def _megatron_h100(label: str) -> Callable[[], float]:
    def compute() -> float:
        from tests.core.training.test_megatron_core_h100 import ours

        return ours(label)

    return compute


# llm-foundry's MPT table: rows that show each finding of tests/core/training/test_llm_foundry_table.py
FOUNDRY_ROWS = ("a100_40gb-70b-s2048-g128-mb4-gb512", "a100_40gb-13b-s2048-g64-mb16-gb1024",
                "a100_80gb-70b-s2048-g64-mb8-gb2048", "h100_80gb-70b-s2048-g512-mb8-gb4096",
                "h100_80gb-7b-s2048-g512-mb6-gb3072", "a100_80gb-7b-s2048-g8-mb6-gb96",
                "h100_80gb-7b-s65536-g8-mb1-gb16")


def _foundry(key: str) -> Callable[[], float]:
    def compute() -> float:
        from tests.core.training import test_llm_foundry_table as t

        return t.ours(next(r for r in t.ROWS if t.key(r) == key))

    return compute


def _megatron_h100_rows() -> list[Reference]:
    """Megatron-Core r0.8.0 weak scaling on H100 (Megatron-LM README), and NeMo's bf16 H100 GPT-OSS 120B row; ``rel_tol``:
    the widest side of the pinned band (micro-batch 1, no interleaving: tests/core/training/test_megatron_core_h100.py)."""
    from tests.core.training.test_megatron_core_h100 import (
        NEMO_GPT_OSS_H100,
        NEMO_GPT_OSS_SOURCE,
        ROWS,
        SOURCE,
    )

    src = (f"{SOURCE}; ours: the per-operation model with the catalog's H100 defaults, DGX H100 nodes on 8x NDR, the "
           "Megatron profile with TP overlap; unstated and assumed: micro-batch 1, no interleaving, no recompute")
    return [Reference(f"megatron-h100-{r.label.lower()}", "Training throughput (Megatron-Core on H100)",
                      f"GPT {r.label} on {r.gpus:,} H100 (TP{r.tp} PP{r.pp} DP{r.dp}, batch {r.batch}): model TFLOP/s "
                      "per GPU", r.tflops, "TFLOP/s", src, _megatron_h100(r.label),
                      rel_tol=max(abs(r.band[0]), abs(r.band[1])), kind="measured")
            for r in ROWS] + [
        Reference("nemo-h100-gpt-oss-120b", "Training throughput (Megatron-Core on H100)",
                  "GPT-OSS 120B on 64 H100 (PP4 EP8, batch 1280, NeMo 26.02 recipe): tokens/s per GPU", NEMO_GPT_OSS_H100,
                  "tokens/s", NEMO_GPT_OSS_SOURCE, _nemo_gpt_oss, rel_tol=0.555, kind="measured")]


def _megascale(key: str) -> Callable[[], float]:
    def compute() -> float:
        from tests.core.training.test_megascale_2024 import ROWS, SEQ, ours_step_s

        row = ROWS[key]
        return row.batch * SEQ / ours_step_s(key) / row.gpus

    return compute


def _megascale_rows() -> list[Reference]:
    """MegaScale (NSDI 2024) Tables 2 and 3 and Figure 9: Megatron-LM 285068c8 and MegaScale on 256-12,288 Ampere GPUs, as
    tokens/s per GPU (batch x 2,048 / step / GPUs); ``rel_tol``: the widest side of the band the test pins
    (tests/core/training/test_megascale_2024.py)."""
    from tests.core.training.test_megascale_2024 import MEGASCALE_ROWS, MEGATRON_ROWS, SEQ, SOURCE

    assumed = {"megatron": "Megatron-LM 285068c8 as its code runs (no overlaps); unstated and assumed: micro-batch 1, "
                           "selective recompute + SP, no flash attention, no distributed optimizer",
               "megascale": "the Megatron profile with TP, PP and DP overlap and flash attention; the parallel block "
                            "and sliding-window attention are not modelled"}
    out = []
    for r in MEGATRON_ROWS + MEGASCALE_ROWS:
        printed = {"table2": "Table 2 iteration time", "figure9": "Figure 9 MFU (the paper's FLOP count)",
                   "table3": "Table 3 MFU at batch 256 (the paper's FLOP count)"}[r.table]
        name = "Megatron-LM" if r.system == "megatron" else "MegaScale"
        out.append(Reference(
            f"megascale-{r.key}", "Training throughput (MegaScale paper, Ampere)",
            f"{name}: GPT {r.model.label} on {r.gpus:,} GPUs (TP8 PP{r.model.pp} DP{r.dp}, {r.model.chunks} chunks, "
            f"batch {r.batch:,}): tokens/s per GPU", r.batch * SEQ / r.step_s / r.gpus, "tokens/s",
            f"{SOURCE}; from the {printed}; ours: A100 SXM4 80GB catalog defaults, {assumed[r.system]}",
            _megascale(r.key), rel_tol=max(abs(r.band[0]), abs(r.band[1])), kind="measured"))
    return out


def _dgxc(key: str, gpus: int, precision: str) -> Callable[[], float]:
    def compute() -> float:
        from tests.core.training.test_dgxc_h100_recipes import RECIPES, _estimate

        r = RECIPES[key]
        return r.batch_per_gpu * r.seq / _estimate(key, gpus, precision).compute.step_time_s.value

    return compute


def _dgxc_rows() -> list[Reference]:
    """NVIDIA's DGX Cloud recipes on 8-2,048 H100 (NeMo 24.12): Nemotron-4 15B, GPT-3 175B, Llama 3.1 8B and 70B,
    bf16 and fp8, as tokens/s per GPU (batch per GPU x sequence / step); ``rel_tol``: the widest side of the band the
    test pins (tests/core/training/test_dgxc_h100_recipes.py)."""
    from tests.core.training.test_dgxc_h100_recipes import RECIPES, ROWS, SOURCE, published

    out = []
    for key, precision, gpus in ROWS:
        r = RECIPES[key]
        layout = (f"TP{r.tp}" + (f" PP{r.pp} VP{r.vp}" if r.pp > 1 else "") + (f" CP{r.cp}" if r.cp > 1 else "")
                  + f" DP{gpus // (r.tp * r.pp * r.cp)}")
        out.append(Reference(
            f"dgxc-{key}-{precision}-{gpus}", "Training throughput (NVIDIA DGX Cloud recipes, H100)",
            f"{r.label}, {precision}, on {gpus:,} H100 ({layout}, micro-batch {r.micro_batch}, batch "
            f"{r.batch_per_gpu * gpus:,}): tokens/s per GPU", r.batch_per_gpu * r.seq / published(key, gpus, precision),
            "tokens/s", f"{SOURCE}; {r.readme}; ours: the catalog's H100 defaults, the Megatron profile with the "
            "recipe's overlaps", _dgxc(key, gpus, precision),
            rel_tol=max(abs(x) for x in r.bands[precision]), kind="measured"))
    return out


def _held_gemm_rows() -> list[Reference]:
    """The catalog's best-shape GEMM rate held under load against gpu-fryer's minutes-long all-GPU burn. The A100 SXM's
    clock is an assumption the burn contradicts (tests/core/training/test_megatron_core_h100.py); its row is pinned."""
    from tests.core.training.test_megatron_core_h100 import GPU_FRYER_BF16, GPU_FRYER_SOURCE, held_gemm_rate

    names = {"nvidia-h100-sxm-80gb": "H100 SXM", "nvidia-a100-sxm4-80gb": "A100 SXM4 80GB",
             "nvidia-a100-pcie-40gb": "A100 PCIe 40GB"}
    return [Reference(f"held-gemm-{gpu.removeprefix('nvidia-')}", "GEMM rate held under load",
                      f"{names[gpu]}: bf16 8192x8192 matmul on every GPU of a node for minutes, TFLOP/s",
                      fryer / 1e12, "TFLOP/s", GPU_FRYER_SOURCE, lambda g=gpu: held_gemm_rate(g) / 1e12,
                      rel_tol=0.15 if "a100-sxm" in gpu else 0.10, kind="measured")
            for gpu, fryer in GPU_FRYER_BF16.items()]


def _adamw_rows() -> list[Reference]:
    """Fused AdamW per optimizer step: the profiled bf16 kernels and the fp32 microbenchmark the catalog's
    adamw_16bit / adamw_fp32 shares are taken from (calibration: the measurement reproducing itself)."""
    from tests.core.training.test_fused_adamw_kernel import (
        DATA,
        ROWS,
        microbenchmark_price,
        profiled_step_price,
    )

    source = (f"llmplan profiles, {DATA['profiles']['software']}, {DATA['profiles']['date']}: "
              f"{DATA['profiles']['method']}; tests/core/training/test_fused_adamw_kernel.py")
    group = "Fused AdamW kernel (optimizer step)"
    out = [Reference(f"adamw-bf16-{r['gpu_id'].removeprefix('nvidia-')}-{r['model'].split('-')[-1].lower()}-"
                     f"{r['layers']}l", group,
                     f"{r['gpu']}: torch fused AdamW on {r['params']:,} bf16 parameters ({r['model']} widths, "
                     f"{r['layers']} layers), ms per step", r["fused_adamw_us_per_step"] / 1e3, "ms", source,
                     lambda r=r: profiled_step_price(r) * 1e3, rel_tol=0.05, kind="calibration")
           for r in ROWS]
    mb = DATA["microbenchmark"]
    out.append(Reference("adamw-fp32-h100-sxm-80gb-microbenchmark", group,
                         f"{mb['gpu']}: torch fused AdamW on 2^28 fp32 parameters, ms", mb["seconds"] * 1e3, "ms",
                         f"llmplan microbenchmark, {mb['software']}, {mb['date']}: {mb['method']}",
                         lambda: microbenchmark_price() * 1e3, rel_tol=0.01, kind="calibration"))
    return out


def _nemo_gpt_oss() -> float:
    from tests.core.training.test_megatron_core_h100 import nemo_gpt_oss_tokens_per_gpu

    return nemo_gpt_oss_tokens_per_gpu()


def _foundry_rows() -> list[Reference]:
    """llm-foundry MPT rows (Composer FSDP); ``rel_tol``: the widest side of the band its group is pinned to."""
    from tests.core.training import test_llm_foundry_table as t

    out = []
    for key in FOUNDRY_ROWS:
        r = next(r for r in t.ROWS if t.key(r) == key)
        lo, hi = t.BANDS[t.group(r)]
        ac = "AC" if r["activation_checkpointing"] == "True" else "no AC"
        quantity = (f"MPT-{r['model']} on {r['gpus']} {r['gpu'].replace('_', ' ').upper()}, seq {int(r['seq_len']):,}, "
                    f"micro-batch {r['micro_batch']}, {r['sharding']}, {ac}: tokens/s per GPU")
        source = (f"mosaicml/llm-foundry scripts/train/benchmarking/README.md at 5e85bd62 (2024-01-06), "
                  f"'{r['table']}' table (MFU {r['mfu']}%)")
        out.append(Reference(f"foundry-{key}", "Training throughput (llm-foundry MPT, Composer FSDP)", quantity,
                             float(r["tokens_per_s_per_gpu"]), "tokens/s", source, _foundry(key),
                             rel_tol=max(abs(lo), abs(hi)), kind="measured"))
    return out


def _fsdp_memory(key: str) -> Callable[[], float]:
    def compute() -> float:
        from tests.core.training.test_fsdp_runs import _estimate

        return _estimate(key).memory.total.value / GIB

    return compute


def _fsdp_memory_rows() -> list[Reference]:
    """torchtitan's H100 memory column (reserved bytes) + the FSDP2 profile's CUDA context: the compiled rows
    within 10%, the uncompiled ones as their test pins them (within 12%: 9-10% low, test_fsdp_runs)."""
    from llmplan.catalog.frameworks import framework_profile
    from tests.core.training.test_fsdp_runs import H100_EAGER_MEMORY, H100_MEMORY, ROWS

    context = framework_profile("fsdp2").context_bytes / GIB
    rows = [(key, gib, 0.10, "") for key, gib in H100_MEMORY.items()]
    rows += [(key, gib, 0.12, "; uncompiled, pinned (test_h100_eager_rows_memory_pinned)")
             for key, (gib, _err) in H100_EAGER_MEMORY.items()]
    return [Reference(f"{key}-memory", "Training memory (FSDP runs)",
                      ROWS[key].quantity.replace("tokens/s per GPU", "peak reserved + context (GiB)"),
                      gib + context, "GiB", f"{ROWS[key].source}; Memory(GiB) column {gib} (max reserved) + the "
                      f"profile's {context:g} GiB CUDA context{note}", _fsdp_memory(key), rel_tol=tol,
                      kind="measured")
            for key, gib, tol, note in rows]


# ---- collectives: published nccl-tests bus bandwidths ------------------------------------------------

def _nccl_rows() -> list[Reference]:
    from tests.core.training.test_nccl_published import registry

    return [Reference(key, "Collectives (nccl-tests bus bandwidth)", quantity, ref, "GB/s", src, compute,
                      rel_tol=0.10, kind=kind)
            for key, quantity, ref, src, kind, compute in registry()]


# ---- the Hugging Face stack on an H100 and an H200 ------------------------------------------------------

_HF_SOURCES = {
    "h100": ("test_hf_h100_runs", "measured on an H100 SXM 80GB HBM3, torch 2.11 / transformers 5.17 / peft / "
             "bitsandbytes 0.50.2, 2026-11-24; ours: the hf-trainer profile"),
    "h200": ("test_hf_h200_runs", "measured on an H200 SXM 141GB, torch 2.11 / transformers 5.17 / peft 0.21 / "
             "bitsandbytes 0.50.2, 2026-11-27; ours: the hf-trainer profile"),
}


def _hf_module(gpu: str):
    import importlib

    return importlib.import_module(f"tests.core.training.{_HF_SOURCES[gpu][0]}")


def _hf_run(gpu: str, name: str, what: str) -> Callable[[], float]:
    def compute() -> float:
        _, est = _hf_module(gpu)._estimate(name)
        return est.memory.total.value / GIB if what == "memory" else est.compute.step_time_s.value * 1e3

    return compute


def _hf_rows() -> list[Reference]:
    rows: list[Reference] = []
    for gpu, (_, src) in _HF_SOURCES.items():
        mod = _hf_module(gpu)
        for name, run in mod.RUNS.items():
            if gpu == "h100":
                model, mode, mb, ckpt, reserved, step = run
                seq = 2048
            else:
                model, mode, mb, seq, ckpt, reserved, step, _ = run
            if reserved is None:
                continue
            label = f"{model.split('/')[-1]} {mode}, {mb} × {seq:,}{', checkpointing' if ckpt else ''}"
            what = f"Hugging Face training on an {gpu.upper()}"
            rows.append(Reference(f"hf-{gpu}-{name}-memory", f"{what} (memory)",
                                  f"{label}: peak reserved + context (GiB)", (reserved + mod.CONTEXT) / GIB, "GiB", src,
                                  _hf_run(gpu, name, "memory"), rel_tol=0.10, kind="measured"))
            lo, hi = mod.STEP_BANDS.get(name, (-0.15, 0.15))
            rows.append(Reference(f"hf-{gpu}-{name}-step", f"{what} (step time)",
                                  f"{label}: step time (ms)", step * 1e3, "ms", src, _hf_run(gpu, name, "step"),
                                  rel_tol=max(abs(lo), hi), kind="measured"))
    return rows


# ---- Qwen's fine-tuning profile (hf-trainer) --------------------------------------------------------------

def _qwen_run(key: tuple, seq_len: int, what: str) -> Callable[[], float]:
    def compute() -> float:
        from tests.core.training.test_qwen_table import plan

        est, n = plan(*key, seq_len)
        return est.memory.total.value * n / GIB if what == "memory" else est.compute.tokens_per_s.value

    return compute


def _qwen_rows() -> list[Reference]:
    from tests.core.training.test_qwen_table import LENGTHS, TABLE

    src = ("QwenLM/Qwen README.md (commit 2df8e8a), 'Profiling of Memory and Speed': A100-SXM4-80G, CUDA 11.8, "
           "PyTorch 2.0, FlashAttention 2, batch 1, gradient accumulation 8; settings from its finetune/*.sh; "
           "ours: the hf-trainer profile, memory as the whole device (GiB, summed over the GPUs)")
    names = {"lora": "LoRA", "lora-emb": "LoRA (emb)", "qlora": "Q-LoRA", "full": "full"}
    rows: list[Reference] = []
    for key, seq_len, what in ((("7B", "lora", 1, 1), 2048, "memory"), (("7B", "lora", 1, 1), 2048, "speed"),
                               (("14B", "lora", 1, 1), 2048, "memory"), (("7B", "lora-emb", 1, 1), 8192, "memory"),
                               (("72B", "qlora", 1, 1), 2048, "memory"), (("72B", "qlora", 1, 1), 8192, "memory"),
                               (("72B", "lora", 1, 4), 8192, "speed")):
        size, method, nodes, per_node = key
        gib, s_per_it = TABLE[key][LENGTHS.index(seq_len)]
        gpus = f" on {nodes * per_node} GPUs" if nodes * per_node > 1 else ""
        label = f"Qwen-{size} {names[method]}{gpus}, 1 × {seq_len:,}"
        if what == "memory":
            rows.append(Reference(f"qwen-{size}-{method}-{seq_len}-memory", "Qwen fine-tuning profile (memory)",
                                  f"{label}: peak GPU memory (G)", gib, "GiB", src, _qwen_run(key, seq_len, what),
                                  rel_tol=0.10, kind="measured"))
        else:
            tokens_per_s = 8 * nodes * per_node * seq_len / s_per_it
            rows.append(Reference(f"qwen-{size}-{method}-{seq_len}-speed", "Qwen fine-tuning profile (speed)",
                                  f"{label}: tokens/s (8 × {seq_len:,} per {s_per_it} s iteration)", tokens_per_s,
                                  "tokens/s", src, _qwen_run(key, seq_len, what), rel_tol=0.20, kind="measured"))
    return rows


# ---- FSDP + QLoRA on two 24 GB cards (Answer.AI's fsdp_qlora benchmarks) ---------------------------------

def _answerai_run(name: str, what: str) -> Callable[[], float]:
    def compute() -> float:
        from llmplan.core.engine import estimate
        from llmplan.core.training.limits import longest_sequence
        from tests.core.training.test_fsdp_qlora_answerai import MEMORY, RTX4090, SPEED, scenario

        if what == "context":
            return float(longest_sequence(scenario(*SPEED[name][:1], RTX4090, *SPEED[name][1:5])))
        if what == "allocated":
            est = estimate(scenario(*MEMORY[name][1:7]))
            return (est.memory.total.value - est.memory.overhead.value) / GIB
        return estimate(scenario(SPEED[name][0], RTX4090, *SPEED[name][1:5])).compute.tokens_per_s.value

    return compute


def _answerai_rows() -> list[Reference]:
    from tests.core.training.test_fsdp_qlora_answerai import ALLOCATED, SPEED

    src = ("AnswerDotAI/fsdp_qlora benchmarks_03_2024.md (commit 4cd6923; runs of Feb-Mar 2024, train.py 049515f): "
           "2 GPUs, FSDP FULL_SHARD or NO_SHARD ('DDP'), pure bf16, LoRA r 64, reentrant checkpointing; ours: the "
           "hf-trainer profile with zero_engine native (tests/core/training/test_fsdp_qlora_answerai.py, which "
           "also pins the reserved-memory rows, median −16.4%, not within 10%)")
    names = {"7b-lora-bs1-512": "Llama-2-7B LoRA, 1 × 512", "7b-lora-bs1-2048": "Llama-2-7B LoRA, 1 × 2,048"}
    rows = [Reference(f"answerai-{name}-allocated", "FSDP + QLoRA on 2 × 24 GB (Answer.AI)",
                      f"{names[name]} on 2 × RTX 3090: peak allocated per GPU (GiB)", gib, "GiB", src,
                      _answerai_run(name, "allocated"), rel_tol=0.10, kind="measured")
            for name, gib in ALLOCATED.items()]
    labels = {"7b-lora-bs6": "Llama-2-7B LoRA, 6 × 2,048", "7b-qlora-bs10": "Llama-2-7B QLoRA, 10 × 2,048",
              "70b-qlora-offload-bs2": "Llama-2-70B QLoRA + CPU offload, 2 × 2,048",
              "mistral-qlora-offload-24k": "Mistral-7B QLoRA + CPU offload, 1 × 24,576"}
    for name, label in labels.items():
        context, seconds = SPEED[name][3], SPEED[name][5]
        rows.append(Reference(f"answerai-{name}-speed", "FSDP + QLoRA on 2 × 24 GB (Answer.AI)",
                              f"{label} on 2 × RTX 4090: tokens/s (1,024 samples in {seconds:,} s)",
                              1024 * context / seconds, "tokens/s", src, _answerai_run(name, "speed"), rel_tol=0.20,
                              kind="measured"))
    rows.append(Reference("answerai-mistral-longest-context", "FSDP + QLoRA on 2 × 24 GB (Answer.AI)",
                          "Mistral-7B QLoRA + CPU offload, batch 1, 2 × RTX 4090: longest context that fits "
                          "(24,576 ran; 32,768 did not)", 24_576, "tokens", src,
                          _answerai_run("mistral-qlora-offload-24k", "context"), rel_tol=0.333, kind="measured"))
    return rows


def _axolotl_example(name: str) -> Callable[[], float]:
    def compute() -> float:
        from tests.core.training.test_axolotl_examples import estimate_example

        return estimate_example(name).memory.total.value / GIB

    return compute


def _axolotl_rows() -> list[Reference]:
    from tests.core.training.test_axolotl_examples import EXAMPLES

    src = ("axolotl-ai-cloud/axolotl example READMEs and configs (commit 067b021c8; llama-3 examples at 15f7910d3); "
           "ours: the axolotl profile, total memory (tests/core/training/test_axolotl_examples.py, which also pins "
           "Magistral −13.8% and the 70B QLoRA + FSDP CPU-offload example −64%)")
    labels = {"devstral-small-qlora": "Devstral Small (24B) QLoRA r 32, 2 × 2,048 packed, Cut Cross Entropy: "
                                      "'uses about 21GB VRAM'",
              "llama-3-fft-8b": "Llama 3 8B full fine-tune, 1 × 8,192 packed, paged 8-bit AdamW: 'Single GPU @ 48GB "
                                "VRAM'"}
    return [Reference(f"axolotl-{name}-memory", "axolotl examples (memory)", label, float(EXAMPLES[name][0]), "GB",
                      src, _axolotl_example(name), rel_tol=0.10, kind="measured") for name, label in labels.items()]


# ---- GGUF file sizes -------------------------------------------------------------------------------------

def _gguf(cfg: dict, preset: str, scale: float = GIB) -> Callable[[], float]:
    def compute() -> float:
        from llmplan.core.quant import quantized_weights
        from llmplan.formats.hf_config import spec_from_config

        return quantized_weights(spec_from_config(cfg), preset).total_bytes / scale

    return compute


def _gguf_rows() -> list[Reference]:
    from tests.core.inference.models import (
        LLAMA3_8B,
        LLAMA32_3B,
        LLAMA_7B,
        MISTRAL_7B_V02,
        MIXTRAL_8X7B,
        QWEN25_7B,
    )

    pr3084 = "llama.cpp PR #3084 (2023-09-09), llama-bench size column, LLaMA 7B on M2 Ultra"
    l3 = "llama-bench size column in public benchmark logs (SYCL/Vulkan/CUDA runs), Meta-Llama-3-8B"
    rows = [(LLAMA_7B, "f16", 12.55, pr3084), (LLAMA_7B, "q8_0", 6.67, pr3084), (LLAMA_7B, "q4_0", 3.56, pr3084),
            (LLAMA_7B, "q6_k", 5.15, pr3084), (LLAMA_7B, "q4_k_m", 3.80, pr3084),
            (LLAMA3_8B, "q4_k_m", 4.58, l3), (LLAMA3_8B, "q8_0", 7.95, l3),
            (LLAMA32_3B, "q4_k_m", 1.87, "geerlingguy/ai-benchmarks issues #48/#54, llama-bench, "
             "Llama-3.2-3B-Instruct"),
            (MIXTRAL_8X7B, "q4_k_m", 26.49, "llama-bench Vulkan log, build 067de93: 'llama 8x7B Q4_K - Medium | "
             "26.49 GiB'"),
            (MISTRAL_7B_V02, "q5_k_m", 4.78, "llama.cpp issue #5619: 'model size = 4.78 GiB (5.67 BPW)', "
             "Mistral-7B-Instruct-v0.2")]
    names = {id(LLAMA_7B): "LLaMA 7B", id(LLAMA3_8B): "Llama-3-8B", id(LLAMA32_3B): "Llama-3.2-3B",
             id(MIXTRAL_8X7B): "Mixtral-8x7B", id(MISTRAL_7B_V02): "Mistral-7B-v0.2"}
    out = [Reference(f"gguf-{names[id(cfg)]}-{preset}".lower().replace(" ", "-"), "GGUF file sizes",
                     f"{names[id(cfg)]} {preset.upper()}: tensor data", gib, "GiB", src, _gguf(cfg, preset),
                     rel_tol=0.02, kind="measured")
           for cfg, preset, gib, src in rows]
    out.append(Reference("gguf-qwen2.5-7b-q4_k_m", "GGUF file sizes", "Qwen2.5-7B-Instruct Q4_K_M: model_size",
                         4_677_120_000, "bytes", "llama.cpp examples/llama-bench/README.md (build 5163), "
                         "CSV/JSON output: model_size 4677120000", _gguf(QWEN25_7B, "q4_k_m", 1), kind="measured"))
    for model, gib, src in (("gpt-oss-20b", 11.27, "llama.cpp PR #16991, llama-bench: 'gpt-oss 20B MXFP4 MoE | "
                             "11.27 GiB'"),
                            ("gpt-oss-120b", 59.02, "llama.cpp PR #19922, llama-bench: 'gpt-oss 120B MXFP4 MoE | "
                             "59.02 GiB'")):
        out.append(Reference(f"gguf-{model}-mxfp4_moe", "GGUF file sizes", f"{model} MXFP4_MOE: tensor data", gib,
                             "GiB", src, _gguf_catalog(f"openai/{model}", "mxfp4_moe"), abs_tol=0.005,
                             kind="measured"))
    out.append(Reference("gguf-gpt-oss-120b-ollama", "GGUF file sizes", "gpt-oss:120b (Ollama, mxfp4_bf16): model "
                         "buffers on the GPU", 61_223, "MiB", "ollama/ollama issue #16416 (Ollama 0.30, 2026-06-02), "
                         "memory breakdown: ROCm0 model 61223 MiB (the BF16 input embedding, 1104 MiB, on the host)",
                         _gguf_catalog("openai/gpt-oss-120b", "mxfp4_bf16", on_gpu=True), abs_tol=1.0,
                         kind="measured"))
    return out


def _gguf_catalog(model_id: str, preset: str, on_gpu: bool = False) -> Callable[[], float]:
    """GiB of a catalog model's tensors in ``preset``; ``on_gpu``: MiB without the input embedding (llama.cpp keeps
    it in host RAM)."""
    def compute() -> float:
        from llmplan.catalog.models import load_model_catalog
        from llmplan.core.quant import quantized_weights

        q = quantized_weights(load_model_catalog().get(model_id).spec, preset)
        if on_gpu:
            return (q.total_bytes - q.bytes_where(lambda g: g.name == "embed_tokens")) / 2**20
        return q.total_bytes / GIB

    return compute


# ---- KV cache --------------------------------------------------------------------------------------------

def _kv(cfg: dict, dtype: str) -> Callable[[], float]:
    def compute() -> float:
        from llmplan.core.kvcache import kv_layout
        from llmplan.formats.hf_config import spec_from_config

        return kv_layout(spec_from_config(cfg), dtype).bytes_per_token

    return compute


def _kv_rows() -> list[Reference]:
    from tests.core.inference.models import DEEPSEEK_V3, OPT_13B

    return [
        Reference("kv-opt-13b", "KV cache", "OPT-13B fp16 KV cache per token", 800 * 1024, "bytes",
                  "Kwon et al. 2023, vLLM/PagedAttention (SOSP), §2.2: '2 × 5120 × 40 × 2 = 800 KB'",
                  _kv(OPT_13B, "fp16"), kind="published"),
        Reference("kv-deepseek-v3-mla", "KV cache", "DeepSeek-V3 MLA cache per token, bf16: (d_c + d_h^R)·layers·2 B",
                  (512 + 64) * 61 * 2, "bytes", "DeepSeek-V2 report (arXiv:2405.04434) §2.1.4 closed form with the "
                  "V3 config (kv_lora_rank 512, qk_rope_head_dim 64, 61 layers)", _kv(DEEPSEEK_V3, "bf16"),
                  kind="formula"),
    ]


# ---- decode speed (llama-bench tg128) -------------------------------------------------------------------

def _decode(cfg: dict, gpu_name: str, fmt: str) -> Callable[[], float]:
    def compute() -> float:
        from llmplan.catalog.engines import engine_profile
        from llmplan.core.engine import estimate
        from llmplan.core.hardware import ClusterSpec
        from llmplan.core.workload import InferenceSettings, ParallelLayout, Scenario
        from llmplan.formats.hf_config import spec_from_config
        from tests.core.inference import gpus

        sc = Scenario(model=spec_from_config(cfg), cluster=ClusterSpec(gpu=getattr(gpus, gpu_name)),
                      workload="inference", parallelism=ParallelLayout(tp=1), engine_profile=engine_profile("llama-cpp"),
                      inference=InferenceSettings(engine="llama-cpp", weight_format=fmt, prompt_tokens=1,
                                                  output_tokens=128, kv_dtype="fp16"))
        return estimate(sc).inference.tokens_per_s_per_user.value

    return compute


def _decode_rows() -> list[Reference]:
    from tests.core.inference.models import LLAMA3_8B, LLAMA_7B, QWEN25_7B

    rows = [
        (LLAMA_7B, "LLaMA 7B", "M2_ULTRA", "M2 Ultra", "q4_0", 88.54, "calibration",
         "llama.cpp PR #2917 (2023-08-30), llama-bench tg128"),
        (LLAMA_7B, "LLaMA 7B", "M2_ULTRA", "M2 Ultra", "q8_0", 62.05, "calibration",
         "llama.cpp PR #2917 (2023-08-30), llama-bench tg128"),
        (LLAMA_7B, "LLaMA 7B", "RTX4090", "RTX 4090", "f16", 61.03, "measured",
         "llama.cpp PR #4766 (2024-01-10), llama-bench tg128"),
        (LLAMA_7B, "LLaMA 7B", "RTX4090", "RTX 4090", "q8_0", 98.13, "measured",
         "llama.cpp PR #4766 (2024-01-10), llama-bench tg128"),
        (LLAMA3_8B, "Llama-3.1-8B", "M1_MAX", "M1 Max", "q4_k_m", 46.2, "measured",
         "brand-o/normiebench issue #40 (2026-03-08), llama-bench tg128"),
        (QWEN25_7B, "Qwen2.5-7B", "RTX4080", "RTX 4080", "q4_k_m", 119.84, "measured",
         "llama.cpp examples/llama-bench/README.md (build 5163), tg128"),
    ]
    return [Reference(f"decode-{model}-{gpu_label}-{fmt}".lower().replace(" ", "-").replace(".", ""),
                      "Decode speed (llama.cpp)", f"{model} {fmt.upper()} on {gpu_label}: tokens/s, one stream",
                      tps, "tokens/s", src, _decode(cfg, gpu, fmt), rel_tol=0.20, kind=kind)
            for cfg, model, gpu, gpu_label, fmt, tps, kind, src in rows]


# ---- Apple Silicon: llama.cpp discussion #4167 and MLX (tests/core/inference/test_apple_*_table.py) ----------

def _apple_4167(chip: str, cores: int, fmt: str, which: int) -> Callable[[], float]:
    def compute() -> float:
        from tests.core.inference import test_apple_llama_cpp_table as t

        row = next(r for r in t.TABLE_A if (r.chip, r.cores, r.fmt) == (chip, cores, fmt))
        return t.ours(row)[which]

    return compute


# ---- llama.cpp b2843 on NVIDIA cards (XiongjieDai table, May 2024) ------------------------------------------

def _table_cell(gpu: str, cards: int, model: str, fmt: str, kind: str, tokens: int) -> Callable[[], float]:
    def compute() -> float:
        from tests.core.inference.xiongjiedai_table import Cell, estimate_cell

        return estimate_cell(Cell(gpu, cards, model, fmt, kind, tokens, None)).tokens_per_s

    return compute


def _apple_mlx(case: str) -> Callable[[], float]:
    def compute() -> float:
        from tests.core.inference import test_apple_mlx_table as t

        return t.ours(case)

    return compute


def _apple_rows() -> list[Reference]:
    """Representative rows of the Apple tables; the tests assert the whole tables (medians, worst row)."""
    src = ("llama.cpp discussion #4167 (Performance of llama.cpp on Apple Silicon M-series), LLaMA 2 7B, "
           "llama-bench {test}, reference build 8e672ef (2023-11-21; M4 rows on later builds)")
    rows = [("M1 Max", 32, "q4_0", 1, 61.19), ("M3 Max", 40, "q8_0", 1, 42.75), ("M4 Max", 40, "q4_0", 1, 83.06),
            ("M1 Pro", 16, "q4_0", 0, 266.25), ("M2 Max", 38, "f16", 0, 755.67), ("M4 Pro", 20, "q4_0", 0, 439.78)]
    out = [Reference(f"apple-4167-{chip}-{cores}c-{fmt}-{'tg128' if which else 'pp512'}".lower().replace(" ", "-"),
                     "Apple Silicon (llama.cpp, MLX)",
                     f"LLaMA 2 7B {fmt.upper()} on {chip} {cores}-core: {'decode' if which else 'prompt'} tokens/s",
                     ref, "tokens/s", src.format(test="tg128" if which else "pp512"),
                     _apple_4167(chip, cores, fmt, which), rel_tol=0.20 if which else 0.25, kind="measured")
           for chip, cores, fmt, which, ref in rows]
    out += [Reference("apple-mlx-m2-pro-llama31-8b-4bit", "Apple Silicon (llama.cpp, MLX)",
                      "Llama 3.1 8B MLX 4-bit on M2 Pro: decode tokens/s", 36.2, "tokens/s",
                      "AlexsJones/llmfit PR #1031 (2026-09-13), llmfit bench, mlx-community/Llama-3.1-8B-Instruct-4bit",
                      _apple_mlx("m2-pro-mlx-4bit"), rel_tol=0.15, kind="measured"),
            Reference("apple-mlx-m2-ultra-llama31-70b-bf16", "Apple Silicon (llama.cpp, MLX)",
                      "Llama 3.1 70B bf16 on M2 Ultra (MLX, wired): decode tokens/s", 4.7, "tokens/s",
                      "ml-explore/mlx-examples PR #1069 (2024-10-24), mlx_lm.generate, 100 tokens",
                      _apple_mlx("m2-ultra-mlx-70b-bf16"), rel_tol=0.15, kind="measured")]
    return out


def _cuda_table_rows() -> list[Reference]:
    from tests.core.inference.xiongjiedai_table import SOURCE

    rows = [  # (gpu, cards, label, model, fmt, kind, tokens, measured)
        ("nvidia-rtx-4090-24gb", 1, "RTX 4090", "8B", "Q4_K_M", "tg", 512, 130.58),
        ("nvidia-rtx-3090-24gb", 1, "RTX 3090", "8B", "F16", "tg", 512, 47.40),
        ("nvidia-rtx-a6000-48gb", 1, "RTX A6000", "70B", "Q4_K_M", "tg", 512, 14.71),
        ("nvidia-rtx-4090-24gb", 2, "2x RTX 4090", "70B", "Q4_K_M", "tg", 512, 19.22),
        ("nvidia-rtx-4090-24gb", 1, "RTX 4090", "8B", "F16", "pp", 512, 9382.00),
        ("nvidia-rtx-3090-24gb", 1, "RTX 3090", "8B", "Q4_K_M", "pp", 512, 4030.40),
        ("nvidia-rtx-4090-24gb", 1, "RTX 4090", "8B", "Q4_K_M", "pp", 8192, 4039.68),
        ("nvidia-rtx-a6000-48gb", 1, "RTX A6000", "8B", "F16", "pp", 4096, 3365.79),
        ("nvidia-a40-48gb", 1, "A40", "8B", "Q4_K_M", "pp", 512, 3324.98),
    ]
    what = {"tg": "decode", "pp": "prompt"}
    return [Reference(f"llama-cpp-b2843-{label}-{model}-{fmt}-{kind}{tokens}".lower().replace(" ", "-"),
                      "llama.cpp on NVIDIA (b2843, 2024)",
                      f"Llama 3 {model} {fmt} on {label}, llama-bench {kind}{tokens}: {what[kind]} tokens/s",
                      measured, "tokens/s", f"{SOURCE}; ours: the default llama-cpp engine (2024 builds)",
                      _table_cell(gpu, cards, model, fmt, kind, tokens), rel_tol=0.20, kind="measured")
            for gpu, cards, label, model, fmt, kind, tokens, measured in rows]


# ---- small-batch decode on the GPU serving engines (tests/core/inference/serving_published.py) ------------------

def _serving_decode_rows() -> list[Reference]:
    """vLLM's nightly latency test and NVIDIA's NIM (TensorRT-LLM) figures. llmplan is 19-35% fast on each (host
    work per step is not modelled: docs/inference.md); ±40% is the band the rows are pinned in, not a claim.
    The DeepSeek-V3 rows (SGLang with DP attention) stay 2-3.4x fast and are pinned apart (test_serving_decode_published.py)."""
    from tests.core.inference.serving_published import ROWS, estimate_row

    return [Reference(f"serving-{r.key}", "Decode speed (serving engines)",
                      f"{r.model.split('/')[1]} {r.weight_format} on {r.gpu} TP{r.tp}, {r.engine}, batch {r.batch}: "
                      f"{r.what} (s)", r.measured_s, "s", r.source, (lambda r=r: estimate_row(r)), rel_tol=0.40,
                      kind="measured")
            for r in ROWS]


@cache
def references() -> tuple[Reference, ...]:
    """Every row, in the order docs/accuracy.md shows them."""
    return tuple(_param_rows() + _zero_rows() + _korthikanti_rows() + _narayanan_rows() + _published_run_rows()
                 + _fsdp_run_rows() + _foundry_rows() + _megatron_h100_rows() + _megascale_rows() + _dgxc_rows()
                 + _held_gemm_rows() + _adamw_rows() + _fsdp_memory_rows()
                 + _nccl_rows() + _hf_rows() + _qwen_rows() + _answerai_rows() + _axolotl_rows()
                 + _gguf_rows() + _kv_rows() + _decode_rows() + _serving_decode_rows() + _cuda_table_rows()
                 + _apple_rows())
