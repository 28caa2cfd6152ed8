"""llama.cpp's row split (``--split-mode row``, core/inference/row_split.py; docs/inference.md "Row split"): bytes
per card by hand for a dense and an MoE model, the row boundaries, one published run, and the refusals.

Bytes are exact (tolerance 0 B): Q8_0 34 B per 32 values, MXFP4 17 B per 32 (ggml-common.h), F32 4 B; shapes from
the models' config.json; the placement as llama.cpp's 2025 code places it (src/llama-model.cpp make_gpu_buft_list /
load_tensors; ggml-cuda.cu get_row_split, get_row_rounding, ggml_backend_cuda_split_buffer_init_tensor,
ggml_backend_cuda_device_supports_op): layers by the split as with --split-mode layer, every 2-D matrix multiplied
by MUL_MAT split by rows over the cards when the layer's own card gets a row, boundaries rounded down to 128 rows
(MMQ tile, Volta and later), each card's slice padded by one fragment to a multiple of 512 values per row."""

from __future__ import annotations

import pytest

from llmplan.catalog.engines import engine_profile
from llmplan.catalog.hardware import load_hardware_catalog
from llmplan.catalog.models import load_model_catalog
from llmplan.core.hardware import ClusterSpec
from llmplan.core.inference.row_split import row_counts, split_rows
from llmplan.core.workload import InferenceSettings, Scenario
from llmplan.errors import InputError

HW = load_hardware_catalog()
RTX3090 = HW.gpu("nvidia-rtx-3090-24gb").spec
RTX3060 = HW.gpu("nvidia-rtx-3060-12gb").spec


def scenario(model: str, fmt: str, engine: str = "llama-cpp-2026", **inf) -> Scenario:
    settings = dict(engine=engine, weight_format=fmt, kv_dtype="fp16", prompt_tokens=1024, output_tokens=256,
                    split_mode="row") | inf
    return Scenario(model=load_model_catalog().get(model).spec, workload="inference", cluster=ClusterSpec(gpu=RTX3090),
                    inference=InferenceSettings(**settings), engine_profile=engine_profile(engine))


def q8(rows: int, cols: int) -> int:
    return rows * cols * 34 // 32


def test_row_boundaries():
    """get_row_split: cumulative shares, each boundary rounded down to the tile height, the last card the rest."""
    assert row_counts(4096, [1, 1], 128) == [2048, 2048]
    assert row_counts(2880, [1, 1], 128) == [1408, 1472]  # 1,440 rounds down to 1,408
    assert row_counts(32, [1, 1], 128) == [0, 32]  # a router of 32 rows: the first card gets none
    assert row_counts(4096, [2, 1, 1], 128) == [2048, 1024, 1024]


def test_dense_llama_8b_q8_0_bytes_by_hand():
    """Llama-3.1-8B Q8_0 on 2 x RTX 3090, --tensor-split 1,1: layers 0-16 on card 0 and 17-31 with the head on card
    1 (the head counts as a layer: 17/33 < 0.5); every matrix halves (rows multiples of 256, columns of 512: no
    padding); norms whole with their layer; the head's 128,256 rows half each; the embedding in host RAM."""
    layer = 2 * q8(4096, 4096) + 2 * q8(1024, 4096) + 3 * q8(14336, 4096)  # q, o; k, v; gate, up, down
    assert layer == 231_735_296
    norms = 2 * 4096 * 4
    half_head = q8(128256, 4096) // 2
    plan = split_rows(scenario("meta-llama/Llama-3.1-8B", "q8_0"), [RTX3090, RTX3090], [1, 1])
    c0, c1 = plan.cards
    assert (c0.layers, c0.has_output, c1.layers, c1.has_output) == (17, False, 15, True)
    assert c0.weights == 32 * layer // 2 + 17 * norms + half_head == 3_987_406_848
    assert c1.weights == 32 * layer // 2 + 15 * norms + half_head + 4096 * 4 == 3_987_357_696
    assert plan.host_bytes == q8(128256, 4096)  # token_embd only
    assert plan.split_mode == "row"


def test_moe_gpt_oss_20b_bytes_by_hand():
    """gpt-oss-20b in llama.cpp's MXFP4_MOE file on 2 x RTX 3090, --tensor-split 1,1: 13 layers on card 0, 11 and
    the head on card 1. Split: q (4096 rows), k, v (512), o (2880 rows: 1,408 + 1,472) and the head (201,088 rows:
    100,480 + 100,608); rows of 2,880 values are padded by 192 values (204 B in Q8_0, 768 B in F32) per slice. The
    router (32 rows, F32) gives card 0 no row: on card 0's layers it stays whole there, on card 1's layers card 1
    takes all 32 (padded). Whole on the layer's card: the 32 routed experts (3-D, MXFP4 with F32 biases), biases,
    sinks and norms."""
    pad_q8, pad_f32 = 192 * 34 // 32, 192 * 4
    qkv = (2048 * 3060 + pad_q8) + 2 * (256 * 3060 + pad_q8)  # per card, every layer
    o0, o1 = 1408 * 4352, 1472 * 4352  # 4,096 columns: no padding
    router = 32 * 2880 * 4
    experts = 3 * (32 * 2880 * 2880 * 17 // 32 + 32 * 2880 * 4)
    whole = experts + 5120 * 4 + 2880 * 4 + 64 * 4 + 2 * 2880 * 4 + 32 * 4  # + biases, sinks, norms, router bias
    head0, head1 = 100480 * 3060 + pad_q8, 100608 * 3060 + pad_q8
    plan = split_rows(scenario("openai/gpt-oss-20b", "mxfp4_moe"), [RTX3090, RTX3090], [1, 1])
    c0, c1 = plan.cards
    assert (c0.layers, c1.layers, c1.has_output) == (13, 11, True)
    assert c0.weights == 24 * (qkv + o0) + 13 * (router + whole) + head0 == 6_161_629_868
    assert c1.weights == 24 * (qkv + o1) + 11 * (router + pad_f32 + whole) + head1 + 2880 * 4 == 5_319_637_420


def test_published_3090_and_two_3060s_qwen3_32b_q8_0():
    """Compared, not fitted. r/LocalLLaMA "Building LocalLlama Machine - Episode 3: Performance Optimizations" (May
    2025, read 2026-11-28 at redlib.private.coffee/r/LocalLLaMA/new?after=t3_1kh4lbl): one RTX 3090 and two RTX 3060
    12 GB, a current llama.cpp build, Qwen3 32B Q8_0: 13.0 t/s with the default split, 15.6 with a hand-tuned
    --tensor-split (values not given), 16.4 with -sm row (tensor split not given; estimated with the default).
    Estimate (llama-cpp-2026, the default split): layer 13.0 t/s (0%); row 19.2 t/s (+17%): per split matmul the
    estimate prices two GeForce peer copies (14 µs each, P2P off) and one 10 µs hand-over, where the run implies
    ~49 µs; the unknown tuned split may also differ. Bands pinned: layer within 10%, row +5% .. +30%."""
    doc_cards = [RTX3090, RTX3060, RTX3060]
    sc = scenario("Qwen/Qwen3-32B", "q8_0")
    from llmplan.core.inference.multi_gpu import split_layers

    layer = 1 / split_layers(sc.model_copy(update={"inference": sc.inference.model_copy(
        update={"split_mode": "layer"})}), doc_cards).tpot_s
    row = 1 / split_rows(sc, doc_cards).tpot_s
    assert 0.90 <= layer / 13.0 <= 1.10
    assert 1.05 <= row / 16.4 <= 1.30
    assert row > layer  # the three cards' bandwidth at once: the run's ordering


def test_row_beats_layer_only_where_bandwidth_dominates():
    """70B Q4_K_M on 2 x RTX 3090 (the 2024 build profile): the row split reads each layer on both cards at once
    where the layer split reads one card at a time (17.6 vs 16.5 t/s: the hand-overs and the lost CUDA graphs eat
    most of the doubled bandwidth); gpt-oss-20b keeps its routed experts whole on the layer's card, so the row split
    only adds hand-overs (115 vs 268 t/s; llama.cpp docs/multi-gpu.md, PR #22729: row "splits only dense
    weights")."""
    from llmplan.core.inference.multi_gpu import split_layers

    def both(model, fmt, engine):
        sc = scenario(model, fmt, engine=engine)
        lay = sc.model_copy(update={"inference": sc.inference.model_copy(update={"split_mode": "layer"})})
        return 1 / split_layers(lay, [RTX3090, RTX3090]).tpot_s, 1 / split_rows(sc, [RTX3090, RTX3090]).tpot_s

    layer, row = both("meta-llama/Llama-3.1-70B", "q4_k_m", "llama-cpp")
    assert row > layer
    layer, row = both("openai/gpt-oss-20b", "mxfp4_moe", "llama-cpp-2026")
    assert row < layer


@pytest.mark.parametrize("engine,match", [
    ("vllm", "vLLM cannot split weight rows.*llama.cpp"),
    ("ollama", "Ollama exposes no split mode"),
])
def test_row_on_other_engines_is_a_field_error(engine, match):
    with pytest.raises(ValueError, match=f"inference.split_mode=row: .*{match}"):
        scenario("meta-llama/Llama-3.1-8B", "bf16" if engine == "vllm" else "q4_k_m", engine=engine)


def test_row_with_one_card_or_no_split_buffer():
    sc = scenario("meta-llama/Llama-3.1-8B", "q8_0")
    with pytest.raises(InputError, match=r"inference\.split_mode=row splits each matrix over several cards"):
        split_rows(sc, [RTX3090])
    with pytest.raises(InputError, match="vulkan back-end has no split buffer"):
        split_rows(sc.model_copy(update={"inference": sc.inference.model_copy(update={"backend": "vulkan"})}),
                   [RTX3090, RTX3090])
