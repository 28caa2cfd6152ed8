"""Figures every inference report states the same way, whichever path priced the plan (``estimate_inference``'s
roofline or llama.cpp's row split, ``row_estimate``): the cost per million tokens, the experts kept in host RAM,
and the warning that the request runs past the trained context."""

from __future__ import annotations

from llmplan.core.explain import Figure
from llmplan.core.inference.cpu_moe import first_layers_for, flag_for, host_expert_bytes
from llmplan.core.model import ModelSpec
from llmplan.core.quant import QuantizedWeights
from llmplan.core.workload import Scenario


def cost_figures(price: float | None, gpus: int, tokens_per_s: float,
                 prefill_tokens_per_s: float) -> tuple[Figure | None, Figure | None]:
    """(USD per million prompt tokens, USD per million output tokens) at ``price`` per GPU-hour; (None, None)
    without a price."""
    if price is None:
        return None, None
    usd_s = price * gpus / 3600
    cost_out = Figure.of(usd_s / tokens_per_s * 1e6, "USD", formula="price/GPU-h × GPUs ÷ 3600 ÷ output tokens/s × 1e6",
                         inputs={"price_per_gpu_hour": price, "gpus": gpus, "tokens_per_s": tokens_per_s},
                         source="assumption", assumptions=("GPUs busy all the time at this batch",))
    cost_in = Figure.of(usd_s / prefill_tokens_per_s * 1e6, "USD",
                        formula="price/GPU-h × GPUs ÷ 3600 ÷ prompt tokens/s × 1e6",
                        inputs={"price_per_gpu_hour": price, "gpus": gpus,
                                "prefill_tokens_per_s": prefill_tokens_per_s},
                        source="assumption")
    return cost_in, cost_out


def experts_figure(model: ModelSpec, weights: QuantizedWeights, n_set: int, n_host: int, formula: str) -> Figure:
    """``--n-cpu-moe``: the leading layers whose routed experts stay in host RAM (``n_set`` MoE layers named by the
    flag, ``n_host`` of them actually there), with the bytes they keep off the GPUs."""
    return Figure.of(first_layers_for(model, n_set) if n_set else 0, "1", formula=formula,
                     inputs={"moe_layers_in_host": n_host, "moe_layers": model.moe_layer_count,
                             "expert_bytes_in_host": host_expert_bytes(model, weights, n_host),
                             "flag": flag_for(model, n_set) if n_set else ""},
                     source="llama.cpp")


def context_warning(s: Scenario) -> tuple[str, ...]:
    """The request (prompt + output) longer than the model was trained on."""
    inf = s.inference
    if inf.prompt_tokens + inf.output_tokens > s.model.max_position_embeddings:
        return (f"prompt + output ({inf.prompt_tokens + inf.output_tokens} tokens) exceeds the model's "
                f"trained context ({s.model.max_position_embeddings})",)
    return ()
