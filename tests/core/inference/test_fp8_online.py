"""Weight format ``fp8-online``: a bf16 checkpoint the engine converts to fp8 at load (TGI ``--quantize fp8``), told
apart from an fp8 checkpoint (``fp8``). Read from huggingface/text-generation-inference v3.3.7 (dfb3fbe7,
2025-12-18): layers/fp8.py (HybridFP8UnquantLoader(to_fp8=True), Fp8Linear.from_unquant: one fp32 scale per output
row with CUTLASS), layers/tensor_parallel.py (the head through get_tensor: bf16), models/custom_modeling/
flash_llama_modeling.py (no_fp8 around every layer's attention and the first and last layers).

Llama-3.1-8B (config.json: hidden 4096, 32 layers, 32 heads, 8 KV heads, intermediate 14,336, vocab 128,256), by
hand, bytes exact:
- attention per layer q 4096² + k 1024x4096 + v 1024x4096 + o 4096² = 41,943,040; x 32 in bf16 = 2,684,354,560;
- MLP per layer 3 x 14,336 x 4096 = 176,160,768 weights and 32,768 rows: layers 1-30 fp8 with a 4 B scale a row,
  30 x 176,291,840 = 5,288,755,200; layers 0 and 31 bf16, 2 x 352,321,536 = 704,643,072;
- embedding and head 2 x 128,256 x 4096 x 2 = 2,101,346,304; norms (65 x 4096) x 2 = 532,480.
TGI: 10,779,631,616 B, 1,698,430,080 more than the fp8 checkpoint (9,081,201,536 B: every linear layer fp8, one
scale per tensor).
"""

import pytest

from llmplan.catalog.engines import engine_profile
from llmplan.catalog.hardware import load_hardware_catalog
from llmplan.catalog.models import load_model_catalog
from llmplan.core.engine import estimate
from llmplan.core.hardware import ClusterSpec
from llmplan.core.inference.fp8_online import bf16_share, online_fp8_weights
from llmplan.core.inference.memory import plan_memory
from llmplan.core.inference.serving_floor import step_kernels
from llmplan.core.quant import parse_weight_format, quantized_weights
from llmplan.core.quant_words import format_words
from llmplan.core.workload import InferenceSettings, ParallelLayout, Scenario

HW, MODELS = load_hardware_catalog(), load_model_catalog()
LLAMA8 = "meta-llama/Llama-3.1-8B"
TGI_LLAMA8 = 2_684_354_560 + 5_288_755_200 + 704_643_072 + 2_101_346_304 + 532_480


def _scenario(engine: str, fmt: str, model: str = LLAMA8, tp: int = 1) -> Scenario:
    return Scenario(model=MODELS.get(model).spec,
                    cluster=ClusterSpec(gpu=HW.gpu("nvidia-h100-sxm-80gb").spec, gpus_per_node=8),
                    workload="inference", parallelism=ParallelLayout(tp=tp), engine_profile=engine_profile(engine),
                    inference=InferenceSettings(engine=engine, weight_format=fmt, batch=1, prompt_tokens=128,
                                                output_tokens=256))


def test_tgi_llama_bytes_by_hand():
    assert TGI_LLAMA8 == 10_779_631_616
    assert plan_memory(_scenario("tgi", "fp8-online"), engine_profile("tgi")).weights.total_bytes == TGI_LLAMA8
    assert quantized_weights(MODELS.get(LLAMA8).spec, "fp8").total_bytes == 9_081_201_536
    assert TGI_LLAMA8 - 9_081_201_536 == 1_698_430_080


def test_per_gpu_share_under_tp():
    """TP 2: the column/row-split linear layers and the vocabulary-split embedding and head halve (norms do not)."""
    one, two = (plan_memory(_scenario("tgi", "fp8-online", tp=t), engine_profile("tgi")).weights_gpu for t in (1, 2))
    assert two == pytest.approx((TGI_LLAMA8 - 532_480) / 2 + 532_480, abs=1)
    assert one == TGI_LLAMA8


def test_engines_that_convert_every_linear_layer():
    """Without TGI's no_fp8 (vLLM; TGI's own non-Llama model files) every block linear layer is converted, one fp32
    scale per output row: 6,979,321,856 weights + 1,376,256 rows x 4 B + 2,101,878,784 B of embedding, head, norms."""
    spec = MODELS.get(LLAMA8).spec
    generic = quantized_weights(spec, "fp8-online")
    assert generic.total_bytes == 6_979_321_856 + 1_376_256 * 4 + 2_101_878_784
    assert plan_memory(_scenario("vllm", "fp8-online"), engine_profile("vllm")).weights.total_bytes == \
        generic.total_bytes
    qwen = MODELS.get("Qwen/Qwen2.5-7B").spec  # TGI serves qwen2 from flash_qwen2_modeling.py: no no_fp8 there
    q = quantized_weights(qwen, "fp8-online")
    assert online_fp8_weights(q, qwen, engine_profile("tgi")) is q


def test_only_converted_gemms_quantise_activations():
    """TGI, Llama-3.1-8B: 368 kernels + 129 GEMMs a step; an fp8 checkpoint adds 129 activation quantisations, the
    converted bf16 checkpoint 60 (gate_up and down of layers 1-30)."""
    spec, tgi = MODELS.get(LLAMA8).spec, engine_profile("tgi")
    assert step_kernels(spec, tgi, 32, fp8=True) == (368 + 129, 129)
    assert step_kernels(spec, tgi, 32, fp8=True, online_fp8=True) == (368 + 60, 129)


def test_bf16_share_sets_the_prompt_rate():
    """(attention 1,342,177,280 + 2 of 32 MLPs 352,321,536) / 6,979,321,856 linear weights run at the bf16 rate."""
    spec, tgi = MODELS.get(LLAMA8).spec, engine_profile("tgi")
    q = plan_memory(_scenario("tgi", "fp8-online"), tgi).weights
    assert bf16_share(q, spec, tgi) == pytest.approx(1_694_498_816 / 6_979_321_856, rel=1e-12)
    assert bf16_share(quantized_weights(spec, "fp8"), spec, tgi) == 0.0


def test_decode_reads_the_bf16_layers():
    """Batch-1 decode on one H100 is bandwidth bound: the converted checkpoint sits between fp8 and bf16 and above
    fp8 by more than its extra bytes alone cost at the H100's datasheet bandwidth, less its fewer kernels."""
    tpot = {f: estimate(_scenario("tgi", f)).inference.tpot_s.value for f in ("bf16", "fp8", "fp8-online")}
    assert tpot["fp8"] < tpot["fp8-online"] < tpot["bf16"]
    assert tpot["fp8-online"] - tpot["fp8"] > 1_698_430_080 / HW.gpu("nvidia-h100-sxm-80gb").spec.memory_bandwidth \
        - 69 * 0.875e-6


def test_named_and_described():
    fmt = parse_weight_format("fp8-online")
    assert (fmt.kind, fmt.variant, fmt.compute_dtype) == ("fp8", "online", "fp8")
    assert "TGI --quantize fp8" in format_words("fp8-online")
