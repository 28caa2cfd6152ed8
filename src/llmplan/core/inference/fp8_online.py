"""A bf16 checkpoint converted to fp8 as the engine loads it (weight format ``fp8-online``: TGI ``--quantize fp8``,
vLLM and SGLang ``--quantization fp8`` on an unquantised model), told apart from a pre-quantised fp8 checkpoint.

What TGI v3.3.7 (huggingface/text-generation-inference dfb3fbe7, 2025-12-18) does, read from its code:

- ``utils/quantization.py``: ``--quantize fp8`` gives ``HybridFP8UnquantLoader(to_fp8=True)``; ``layers/fp8.py``
  then turns every weight the model code loads through the loader (``get_weights``, ``get_multi_weights_col``,
  ``get_weights_row``) that is not already fp8 into an ``Fp8Weight``, quantised at load by ``Fp8Linear.from_unquant``:
  ``fp8_quantize(weight, scalar=not CUTLASS_FP8_AVAILABLE)``, i.e. one fp32 scale per output row where CUTLASS fp8
  runs (compute capability 9.x), per tensor otherwise (capability 8.x loads FP8-Marlin instead).
- The embedding (``TensorParallelEmbedding``) and the head (``TensorParallelHead.load``: ``get_tensor``, not the
  loader) stay bf16 whatever the flag.
- ``models/custom_modeling/flash_llama_modeling.py`` (model types llama, phi3, granite, baichuan and phimoe:
  ``models/__init__.py``) wraps every layer's attention, and the first and the last layer whole, in ``no_fp8``:
  those stay bf16. Other model files convert every linear layer.
- Decode: ``Fp8Linear.forward`` quantises the activations per token (``fp8_quantize(input, scalar=False)``: one
  kernel) before each CUTLASS scaled GEMM, the same count as an fp8 checkpoint's; a GEMM left bf16 has none.

An fp8 checkpoint (weight format ``fp8``) holds every block's linear layers in fp8 as the file stores them; the
engine converts nothing (``get_weights`` sees fp8 tensors).
"""

from __future__ import annotations

from llmplan.core.engine_profile import EngineProfile
from llmplan.core.model import ModelSpec
from llmplan.core.quant import GroupBytes, QuantizedWeights

ONLINE = "online"  # WeightFormat.variant of ``fp8-online``
_LINEAR = ("attention", "mlp", "expert", "shared_expert")


def is_online_fp8(q: QuantizedWeights) -> bool:
    return q.format.kind == "fp8" and q.format.variant == ONLINE


def keeps_layers_bf16(spec: ModelSpec, engine: EngineProfile) -> bool:
    """Whether the engine leaves the attention and the first and last layers bf16 for this model (TGI's no_fp8)."""
    return spec.model_type in engine.fp8_online_no_fp8_model_types


def online_fp8_weights(q: QuantizedWeights, spec: ModelSpec, engine: EngineProfile) -> QuantizedWeights:
    """``q`` (``fp8-online`` priced as a checkpoint whose blocks' linear layers are all fp8) with what the engine
    leaves bf16 for this model: every attention projection, and the first and last layer's other linear layers."""
    if not is_online_fp8(q) or not keeps_layers_bf16(spec, engine):
        return q
    L = spec.num_layers
    out = []
    for gb in q.groups:
        g = gb.group
        if g.place != "layer" or gb.dtype == "bf16" or g.count % L:
            out.append(gb)
        elif g.category == "attention":
            out.append(GroupBytes(g, g.params * 2, "bf16 (no_fp8)"))
        else:  # per layer: the fp8 bytes of one instance; the first and last layers' instances in bf16
            per = g.count // L
            one_fp8 = gb.bytes // g.count
            out.append(GroupBytes(g, (g.count - 2 * per) * one_fp8 + 2 * per * g.numel * 2,
                                  f"{gb.dtype}; first and last layers bf16 (no_fp8)"))
    groups = tuple(out)
    return QuantizedWeights(q.format, groups, sum(g.bytes for g in groups), q.params)


def bf16_share(q: QuantizedWeights, spec: ModelSpec, engine: EngineProfile) -> float:
    """Share of the blocks' linear-layer parameters the engine leaves bf16 with ``fp8-online`` (0 for any other
    format, or where it converts them all): their matmuls run at the bf16 rate, the rest at the fp8 rate."""
    if not is_online_fp8(q) or not keeps_layers_bf16(spec, engine):
        return 0.0
    total = wide = 0.0
    for gb in q.groups:
        g = gb.group
        if g.place != "layer" or len(g.shape) != 2 or g.category not in _LINEAR or g.count % spec.num_layers:
            continue
        total += g.params
        wide += g.params if g.category == "attention" else g.params * 2 / spec.num_layers
    return wide / total if total else 0.0


def bf16_gemms(spec: ModelSpec, engine: EngineProfile, layers: int, attn_gemms: int, ffn_gemms: float,
               head_gemms: int) -> float:
    """GEMMs of a decode step over ``layers`` layers that run bf16 with ``fp8-online`` weights (no activation
    quantisation before them): the head always; with TGI's no_fp8 model types also every attention GEMM and the
    first and last layers' feed-forward GEMMs (``ffn_gemms`` per layer)."""
    if not keeps_layers_bf16(spec, engine):
        return head_gemms
    return head_gemms + layers * attn_gemms + min(2, layers) * ffn_gemms
