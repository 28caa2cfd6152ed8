"""The shipped model catalog: every entry loads, and our exact count equals the measured total.

Each entry's ``reference_params.source`` says where its total was measured (mostly the
Hugging Face model API's ``safetensors.total``, i.e. the sum of every stored tensor's
element count, or a safetensors index ``total_size`` / bytes per parameter). Tolerance:
exact (0 parameters). Where a checkpoint legitimately stores more than the model's
parameters, ``EXTRA_STORED`` computes the extra tensors from the config and says why;
the assertion stays exact.
"""

from __future__ import annotations

import pytest

from llmplan.catalog.models import ModelEntry, load_model_catalog
from llmplan.core.params import count_params

CATALOG = load_model_catalog(include_user=False)  # the shipped data only, whatever the user added
WITH_REFERENCE = [e for e in CATALOG.entries if e.reference_params and not e.user]


def _rotary_inv_freq(e: ModelEntry) -> int:
    """Llama 2 conversions saved each layer's rotary ``inv_freq`` buffer (head_dim/2 floats)."""
    return e.spec.num_layers * e.spec.head_dim // 2


def _separate_lm_head(e: ModelEntry) -> int:
    """The checkpoint stores ``lm_head.weight`` as its own tensor although the config ties it."""
    assert e.spec.tie_embeddings
    return e.spec.vocab_size * e.spec.hidden_size


def siglip_vision_tower(vc: dict) -> int:
    """Gemma 3's SigLIP vision encoder (no pooling head), from its vision_config: patch conv with bias,
    learned positions, per layer q/k/v/o with biases + 2 LayerNorms + fc1/fc2 with biases, post LayerNorm."""
    h, inter, n = vc["hidden_size"], vc["intermediate_size"], vc["num_hidden_layers"]
    patches = (vc["image_size"] // vc["patch_size"]) ** 2
    embed = 3 * vc["patch_size"] ** 2 * h + h + patches * h
    layer = 4 * (h * h + h) + 2 * 2 * h + (h * inter + inter) + (inter * h + h)
    return embed + n * layer + 2 * h


def _gemma3_vision(e: ModelEntry) -> int:
    """Multimodal Gemma 3 checkpoints add the vision tower and the projector (Linear(1152, h) + RMSNorm(1152))."""
    vc = e.config["vision_config"]
    return siglip_vision_tower(vc) + vc["hidden_size"] * e.spec.hidden_size + vc["hidden_size"]


def pixtral_vision(e: ModelEntry) -> int:
    """Mistral 3's Pixtral encoder (patch conv without bias, ln_pre, per layer q/k/v/o + 2 RMSNorms + gated
    SiLU MLP, no biases) and its projector (RMSNorm, 2x2 patch merger, two Linears to the text width)."""
    vc, h = e.config["vision_config"], e.spec.hidden_size
    d, inter, n, merge = vc["hidden_size"], vc["intermediate_size"], vc["num_hidden_layers"], e.config["spatial_merge_size"]
    tower = vc["num_channels"] * vc["patch_size"] ** 2 * d + d + n * (4 * d * d + 2 * d + 3 * d * inter)
    projector = d + merge * merge * d * d + d * h + h * h
    return tower + projector


def deepseek_fp8_split(e: ModelEntry) -> tuple[int, int]:
    """(FP8 weights, their 128x128 block scales) of DeepSeek-V3's checkpoint: every 2-D projection inside
    the blocks is FP8 except the router gates and the MTP eh_proj; each carries one F32 weight_scale_inv
    per 128x128 block."""
    fp8 = scales = 0
    for g in count_params(e.spec).groups:
        if len(g.shape) != 2 or any(k in g.name for k in ("embed_tokens", "lm_head", "shared_head.head",
                                                            "router", "eh_proj")):
            continue
        fp8 += g.params
        scales += -(-g.shape[0] // 128) * -(-g.shape[1] // 128) * g.count
    return fp8, scales


EXTRA_STORED = {
    "meta-llama/Llama-2-13b-hf": _rotary_inv_freq,
    "meta-llama/Llama-2-70b-hf": _rotary_inv_freq,
    "Qwen/Qwen3-0.6B": _separate_lm_head,
    "Qwen/Qwen3-1.7B": _separate_lm_head,
    "tiiuae/falcon-180B": _separate_lm_head,
    "google/gemma-3-4b-it": _gemma3_vision,
    "google/gemma-3-12b-it": _gemma3_vision,
    "google/gemma-3-27b-it": _gemma3_vision,
    "deepseek-ai/DeepSeek-V3": lambda e: deepseek_fp8_split(e)[1],
    "mistralai/Mistral-Small-3.2-24B-Instruct-2506": pixtral_vision,
}


def test_catalog_is_large_and_clean():
    assert len(CATALOG) >= 60
    assert CATALOG.problems == []
    assert len(WITH_REFERENCE) >= 60
    assert {"llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe", "gemma", "gemma2", "gemma3",
            "phi3", "deepseek", "gpt_oss", "olmo2", "falcon", "gpt2", "opt", "bloom", "gpt_neox", "gptj",
            "starcoder2", "phi", "gpt_bigcode"} <= set(CATALOG.families)


def test_no_entry_is_approximate():
    assert [e.id for e in CATALOG.entries if e.spec.approximate] == []


@pytest.mark.parametrize("entry", WITH_REFERENCE, ids=lambda e: e.id)
def test_count_equals_measured_total(entry):
    extra = EXTRA_STORED.get(entry.id, lambda e: 0)(entry)
    assert count_params(entry.spec).total + extra == entry.reference_params.total


def test_siglip_tower_matches_all_three_gemma3_sizes():
    # The three multimodal checkpoints share one vision tower: the residual must be the same number.
    towers = {e.id: e.reference_params.total - count_params(e.spec).total - e.config["vision_config"]["hidden_size"]
              * (e.spec.hidden_size + 1) for e in CATALOG.entries if e.id.startswith("google/gemma-3-") and "1b" not in e.id}
    assert len(towers) == 3 and set(towers.values()) == {416_866_032}


def test_deepseek_v3_dtype_breakdown():
    # HF API safetensors.parameters of deepseek-ai/DeepSeek-V3:
    # {'BF16': 3918786560, 'F8_E4M3': 680571043840, 'F32': 41555600}; F32 = block scales + e_score_correction_bias.
    e = CATALOG.get("deepseek-ai/DeepSeek-V3")
    pc = count_params(e.spec)
    fp8, scales = deepseek_fp8_split(e)
    score_bias = sum(g.params for g in pc.groups if g.name.endswith("e_score_correction_bias"))
    assert fp8 == 680_571_043_840
    assert scales + score_bias == 41_555_600
    assert pc.total - fp8 - score_bias == 3_918_786_560


def test_deepseek_v3_main_model_and_mtp():
    # DeepSeek-V3 README: "685B ... includes 671B of the Main Model weights and 14B of the MTP Module weights";
    # report: "37B activated for each token". The README's 685 is the stored total (684.53B with the FP8 block
    # scales), so its MTP share (13.46B here) is rounded up to make the sum read 685. Tolerance: those roundings.
    pc = count_params(CATALOG.get("deepseek-ai/DeepSeek-V3").spec)
    assert round((pc.total - pc.mtp) / 1e9) == 671
    assert 13e9 < pc.mtp < 14e9
    assert abs(pc.active / 1e9 - 37) <= 1  # 37.55B; one unit of the digit the report shows


@pytest.mark.parametrize(("model_id", "active_b"), [
    ("openai/gpt-oss-20b", 3.61),  # OpenAI gpt-oss model card, table 1: 3.61B active (embedding table excluded)
    ("openai/gpt-oss-120b", 5.13),  # same table: 5.13B active
])
def test_gpt_oss_active_without_embedding_table(model_id, active_b):
    spec = CATALOG.get(model_id).spec
    pc = count_params(spec)
    assert round((pc.active - spec.vocab_size * spec.hidden_size) / 1e9, 2) == active_b


@pytest.mark.parametrize(("model_id", "active_b"), [
    ("Qwen/Qwen3-30B-A3B", 3.3),  # model card: "30.5B in total and 3.3B activated"
    ("Qwen/Qwen3-235B-A22B", 22),  # model card: "235B in total and 22B activated"
    ("deepseek-ai/DeepSeek-V2", 21),  # DeepSeek-V2 paper abstract: "236B total ... 21B activated"
    ("Qwen/Qwen1.5-MoE-A2.7B", 2.7),  # model card: "2.7B activated"
])
def test_moe_active_matches_model_cards(model_id, active_b):
    # Cards give one significant decimal (some truncate, 3.35 -> "3.3", some round, 2.69 -> "2.7"):
    # tolerance one unit of the last digit shown.
    pc = count_params(CATALOG.get(model_id).spec)
    unit = 0.1 if active_b < 10 else 1.0
    assert abs(pc.active / 1e9 - active_b) <= unit


def test_get_is_case_insensitive_and_accepts_the_name_after_the_org():
    assert CATALOG.get("META-LLAMA/meta-llama-3-8b").id == "meta-llama/Meta-Llama-3-8B"
    assert CATALOG.get("Meta-Llama-3-8B").id == "meta-llama/Meta-Llama-3-8B"
    assert "qwen/qwen3-8b" in CATALOG


def test_get_unknown_suggests_close_matches():
    from llmplan.errors import CatalogError

    with pytest.raises(CatalogError, match=r"Did you mean: .*meta-llama/Meta-Llama-3-8B"):
        CATALOG.get("meta-llama/Meta-Llama-3-8b-instruct")


def test_search_by_words_and_family():
    ids = [e.id for e in CATALOG.search("qwen3 a3b")]
    assert ids == ["Qwen/Qwen3-30B-A3B"]
    assert {e.family for e in CATALOG.search(family="gemma2")} == {"gemma2"}
    assert CATALOG.search("no such model anywhere") == []


# bigcode-project/starcoder2 README and the models' cards, "Memory footprint" printed by
# model.get_memory_footprint() / 1e6 (MB, two decimals): parameters plus buffers, in the load dtype.
# The transformers Starcoder2 of that release kept, in every attention layer, a rotary inv_freq
# (head_dim/2, made with .float(): always fp32) and cos/sin caches of max_position_embeddings × head_dim
# each (in the load dtype): those are the buffers.
STARCODER2_FOOTPRINTS = [  # (model id, bytes per element, printed MB)
    ("bigcode/starcoder2-3b", 4, 12624.81),  # full precision
    ("bigcode/starcoder2-3b", 2, 6312.41),  # torch.bfloat16
    ("bigcode/starcoder2-15b", 2, 32251.33),  # torch.bfloat16
]


@pytest.mark.parametrize(("model_id", "nbytes", "printed_mb"), STARCODER2_FOOTPRINTS)
def test_starcoder2_matches_the_published_memory_footprint(model_id, nbytes, printed_mb):
    """No exact parameter total was published for StarCoder2, but the footprints were. Tolerance: the
    printed rounding (±0.005 MB = ±5,000 bytes). The 15B figure is only met with an untied lm_head
    (tied: 31,647.35 MB): the 15B stores its output head, the 3B does not (untied: 13,228.79 MB)."""
    e = CATALOG.get(model_id)
    s = e.spec
    caches = s.num_layers * 2 * s.max_position_embeddings * s.head_dim
    inv_freq = s.num_layers * s.head_dim // 2
    footprint = nbytes * (count_params(s).total + caches) + 4 * inv_freq
    assert footprint == pytest.approx(printed_mb * 1e6, abs=5_000)
