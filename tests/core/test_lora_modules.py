"""LoRA adapters per checkpoint module (``core.lora_modules``): a fused module gets one adapter, as PEFT adds them.

Sources: PEFT wraps each module whose name matches ``target_modules`` and gives it lora_A = Linear(in, r) and
lora_B = Linear(r, out) (huggingface/peft ``src/peft/tuners/lora/layer.py`` ``LoraLayer.update_layer``), so one
module gets r · (in + out) parameters whatever it holds. The module layouts are transformers' modeling code
(huggingface/transformers ``models/phi3/modular_phi3.py`` at 06053b8: ``qkv_proj`` = Linear(h, q + 2·kv),
``gate_up_proj`` = Linear(h, 2·intermediate); ``models/gpt_neox/modeling_gpt_neox.py`` at 006bd23:
``query_key_value`` = Linear(h, 3·h)) and Qwen's modeling_qwen.py (``c_attn`` = Linear(h, 3·h)); the dimensions
are the catalog's config.json of each checkpoint. Every count here is exact (tolerance 0).
"""

from __future__ import annotations

import pytest

from llmplan.catalog.models import ModelEntry, load_model_catalog
from llmplan.core.bytes_per_param import lora_params, trainable_params
from llmplan.core.lora_modules import adapted_modules, lora_modules
from llmplan.core.model import ModelSpec
from llmplan.core.params import count_params
from llmplan.core.search.shape import model_shape
from llmplan.core.training.memory import lora_activation_bytes
from llmplan.core.training.ops import layer_gemms
from llmplan.core.training.timing import OpShape
from llmplan.core.workload import TrainingSettings
from llmplan.errors import ConfigError
from llmplan.plan.document import PlanDocument

ALL = ("q", "k", "v", "o", "gate", "up", "down")
CATALOG = load_model_catalog(include_user=False)


def spec(model_id: str) -> ModelSpec:
    return CATALOG.get(model_id).spec


def test_qwen_7b_r64_all_linear():
    """Qwen-7B (h 4096, 32 layers, w1/w2 11,008 wide; c_attn fused): 32 · 64 · ((4096 + 12,288) + (4096 + 4096)
    + 3 · (4096 + 11,008)) = 143,130,624, what PEFT trains with Qwen's finetune.py (c_attn, c_proj, w1, w2; r 64).
    llmplan counted 159,907,840 (three adapters on c_attn) before."""
    m = spec("Qwen/Qwen-7B")
    assert m.fused == ("qkv",)
    assert lora_params(count_params(m), 64, ALL) == 32 * 64 * (16_384 + 8192 + 3 * 15_104) == 143_130_624


def test_phi3_mini_r16_all_linear():
    """Phi-3-mini-4k (config: h 3072, 32 heads and 32 KV heads of 96, intermediate 8192, 32 layers): qkv_proj
    3072 → 3072 + 2 · 32 · 96 = 9216, o_proj 3072 → 3072, gate_up_proj 3072 → 16,384, down_proj 8192 → 3072;
    r 16: 32 · 16 · (12,288 + 6144 + 19,456 + 11,264) = 25,165,824 (29,884,416 counted as seven adapters)."""
    m = spec("microsoft/Phi-3-mini-4k-instruct")
    assert m.fused == ("qkv", "gate_up")
    assert (m.hidden_size, m.kv_width, m.intermediate_size, m.num_layers) == (3072, 3072, 8192, 32)
    pb = count_params(m)
    assert {g.name: g.shape for g in lora_modules(pb, ALL)} == {
        "attn.qkv_proj": (9216, 3072), "attn.o_proj": (3072, 3072), "mlp.gate_up_proj": (16_384, 3072),
        "mlp.down_proj": (3072, 8192)}
    assert lora_params(pb, 16, ALL) == 32 * 16 * (12_288 + 6144 + 19_456 + 11_264) == 25_165_824


def test_pythia_1_4b_r16_all_linear():
    """Pythia-1.4B (GPT-NeoX; h 2048, 24 layers, MLP 8192, no gate): query_key_value 2048 → 6144, dense 2048 → 2048,
    dense_h_to_4h 2048 → 8192, dense_4h_to_h 8192 → 2048; r 16: 24 · 16 · (8192 + 4096 + 10,240 + 10,240) =
    12,582,912 (14,155,776 counted as seven adapters before). The default targets name a gate the plain MLP
    does not have: no adapter for it."""
    m = spec("EleutherAI/pythia-1.4b")
    assert adapted_modules(m, ALL) == (("q", "k", "v"), ("o",), ("up",), ("down",))
    assert lora_params(count_params(m), 16, ALL) == 24 * 16 * (8192 + 4096 + 10_240 + 10_240) == 12_582_912


def test_llama_keeps_one_adapter_per_projection():
    """Llama-3.1-8B (h 4096, 8 KV heads of 128, MLP 14,336, 32 layers): seven modules, as before:
    32 · 16 · (8192 + 2 · 5120 + 8192 + 3 · 18,432) = 41,943,040."""
    m = spec("meta-llama/Llama-3.1-8B")
    assert m.fused == ()
    assert adapted_modules(m, ALL) == tuple((t,) for t in ALL)
    assert lora_params(count_params(m), 16, ALL) == 32 * 16 * (8192 + 2 * 5120 + 8192 + 3 * 18_432) == 41_943_040


@pytest.mark.parametrize(("model_id", "fused"), [
    ("openai-community/gpt2", ("qkv",)), ("bigcode/starcoderbase", ("qkv",)), ("bigscience/bloom-560m", ("qkv",)),
    ("tiiuae/falcon-7b", ("qkv",)), ("microsoft/Phi-4-mini-instruct", ("qkv", "gate_up")),
    ("microsoft/phi-4", ("qkv", "gate_up")), ("EleutherAI/gpt-j-6b", ()), ("microsoft/phi-2", ()),
    ("bigcode/starcoder2-7b", ()), ("Qwen/Qwen2.5-7B", ()), ("deepseek-ai/DeepSeek-V2-Lite", ())])
def test_each_familys_modules_follow_its_modeling_code(model_id, fused):
    """GPT-2's and StarCoder's ``c_attn``, BLOOM's and Falcon's ``query_key_value``, Phi-3-style ``qkv_proj`` and
    ``gate_up_proj`` (Phi-4 and Phi-4-mini are model_type phi3); GPT-J, Phi-2, StarCoder2, Qwen2 and DeepSeek keep
    their projections apart (core.model.FUSED_LINEARS)."""
    assert spec(model_id).fused == fused


def test_falcon_7b_multi_query_qkv_width():
    """Falcon-7B: FalconAttention's query_key_value is (heads + 2 · 1) · 64 = 4672 wide for its one KV head."""
    qkv = next(g for g in lora_modules(count_params(spec("tiiuae/falcon-7b")), ("q",)))
    assert (qkv.name, qkv.shape) == ("attn.qkv_proj", (4544 + 2 * 64, 4544))


def test_a_target_inside_a_fused_module_adapts_the_whole_module():
    """PEFT cannot adapt part of a Linear: "q" alone on Phi-3-mini adapts all of qkv_proj (32 · 16 · 12,288)."""
    m = spec("microsoft/Phi-3-mini-4k-instruct")
    assert adapted_modules(m, ("q",)) == (("q", "k", "v"),)
    assert lora_params(count_params(m), 16, ("q",)) == 32 * 16 * (3072 + 9216) == 6_291_456
    assert lora_params(count_params(m), 16, ("up",)) == 32 * 16 * (3072 + 16_384)


def test_tensor_parallel_split_of_a_fused_adapter():
    """qkv_proj and gate_up_proj are column-parallel: A whole, B's rows split; down_proj and o_proj row-parallel."""
    m = spec("microsoft/Phi-3-mini-4k-instruct")
    r, tp = 16, 4
    per_layer = (r * 3072 + r * 9216 / tp) + (r * 3072 / tp + r * 3072) + (r * 3072 + r * 16_384 / tp) + (
        r * 8192 / tp + r * 3072)
    assert lora_params(count_params(m), r, ALL, tp=tp) == pytest.approx(32 * per_layer, rel=1e-15)


def test_memory_time_and_search_count_the_same_adapters():
    """One count everywhere: the search's shape, the engine's trainable parameters, the block's adapter GEMMs (one
    A and one B per module, B as wide as the module) and the adapters' activations (r per module and token)."""
    m = spec("microsoft/Phi-3-mini-4k-instruct")
    tr = TrainingSettings(method="lora", lora_rank=16, lora_targets=ALL, recompute="none")
    pb = count_params(m)
    assert model_shape(m, tr).trainable_params == trainable_params(pb, "lora", 16, ALL) == 25_165_824
    lay = OpShape(tp=1, cp=1, ep=1, micro_batch=1, seq_len=1024, sp=False, kv_replicated=False)
    adapters = {g.name: (g.n, g.k) for g in layer_gemms(m, pb, lay, tr) if ".lora_" in g.name}  # type: ignore[arg-type]
    assert adapters == {
        "attn.qkv_proj.lora_A": (16, 3072), "attn.qkv_proj.lora_B": (9216, 16),
        "attn.o_proj.lora_A": (16, 3072), "attn.o_proj.lora_B": (3072, 16),
        "mlp.gate_up_proj.lora_A": (16, 3072), "mlp.gate_up_proj.lora_B": (16_384, 16),
        "mlp.down_proj.lora_A": (16, 8192), "mlp.down_proj.lora_B": (3072, 16)}
    assert lora_activation_bytes(m, lay, tr) == 2 * 1024 * 16 * 4  # type: ignore[arg-type]


def test_a_catalog_entry_can_override_the_family():
    """A checkpoint laid out unlike its family's modeling code says so in its entry (``fused_linears``)."""
    base = CATALOG.get("microsoft/Phi-3-mini-4k-instruct").model_dump(exclude={"user"})
    split = ModelEntry.model_validate({**base, "fused_linears": []}).spec
    assert split.fused == ()
    assert lora_params(count_params(split), 16, ALL) == 32 * 16 * (3 * 6144 + 6144 + 3 * 11_264) == 29_884_416
    plain = ModelEntry.model_validate({**CATALOG.get("EleutherAI/pythia-1.4b").model_dump(exclude={"user"}),
                                       "fused_linears": ["gate_up"]})
    with pytest.raises(ConfigError, match="fused_linears"):  # a plain MLP has no gate to fuse
        _ = plain.spec


def test_a_plan_saved_before_the_field_takes_its_familys_modules():
    """A plan's inline spec written before ``fused_linears`` existed has no such key: it loads, and the modules
    follow its model_type (Qwen-1: one c_attn)."""
    inline = spec("Qwen/Qwen-7B").model_dump(exclude={"fused_linears"})
    doc = PlanDocument.model_validate({"model": {"spec": inline}})
    assert doc.model.spec.fused_linears is None and doc.model.spec.fused == ("qkv",)


def test_fusion_the_architecture_cannot_have_is_refused():
    with pytest.raises(ValueError, match="no gate projection"):
        spec("EleutherAI/pythia-1.4b").model_validate({**spec("EleutherAI/pythia-1.4b").model_dump(),
                                                         "fused_linears": ["gate_up"]})
    with pytest.raises(ValueError, match="latent attention"):
        ModelSpec.model_validate({**spec("deepseek-ai/DeepSeek-V2-Lite").model_dump(), "fused_linears": ["qkv"]})
