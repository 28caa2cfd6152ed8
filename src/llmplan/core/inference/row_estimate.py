"""A plan of N identical GPUs in one machine with llama.cpp's row split (``inference.split_mode = row``) as an
``Estimate``: the numbers are those of ``row_split.split_rows`` over the machine's N cards, the function the
CLI's ``estimate --gpu X --gpus N --split-mode row`` and a plan listing its cards go through, so the search,
Auto…, the app's verdict and ``--this-machine`` say what the CLI says ("one truth").

llama.cpp runs one process per machine over every card it sees, so the row split ignores the plan's
``parallelism`` (the search's one llama.cpp layout is already the node's cards: ``search.inference``). The memory
figures are those of the card with the least memory to spare (``MixedPlan.fullest``), as for any plan of several
GPUs ("memory per GPU, worst GPU"); the per-card table is the CLI's ``estimate`` output.
"""

from __future__ import annotations

from llmplan.core.engine_profile import EngineProfile
from llmplan.core.explain import Figure, total, zero
from llmplan.core.hardware import GpuSpec
from llmplan.core.inference.backend import backend_of, runtime_context_bytes
from llmplan.core.inference.cpu_moe import host_moe_layers
from llmplan.core.inference.multi_gpu import MixedPlan, split_cards
from llmplan.core.inference.report_figures import context_warning, cost_figures, experts_figure
from llmplan.core.kvcache import kv_layout
from llmplan.core.params import count_params
from llmplan.core.quant import QuantizedWeights, quantized_weights
from llmplan.core.result import Bottleneck, Estimate, InferenceReport, MemoryBreakdown
from llmplan.core.workload import Scenario
from llmplan.errors import LayoutError

SOURCE = "llama.cpp-row-split"
GIB = 2**30


def row_cards(scenario: Scenario) -> list[GpuSpec]:
    """The cards a row split of ``scenario`` runs over: every GPU of its one machine. A plan of several machines
    is refused (llama.cpp splits rows over one process's cards; one card is ``row_split.check``'s to refuse)."""
    c = scenario.cluster
    if c.nodes > 1:
        raise LayoutError(nodes_refusal(c.nodes))
    return [c.gpu] * c.gpus_per_node


def nodes_refusal(nodes: int) -> str:
    """Why a row split over ``nodes`` machines is refused (llama.cpp splits rows over one process's cards)."""
    return (f"inference.split_mode=row splits each matrix over the cards of one machine, and this plan has {nodes} "
            "nodes; set hardware.nodes = 1 or split_mode = layer")


def estimate_rows(scenario: Scenario) -> Estimate:
    """The row split over the machine's identical cards (``split_cards``), its figures in an ``Estimate``."""
    s, inf = scenario, scenario.inference
    engine = s.engine_profile or EngineProfile()
    plan = split_cards(s, row_cards(s), None, inf.gpu_layers)
    memory = _memory(s, engine, plan)
    n = len(plan.cards)
    tpot_s, ttft_s = plan.tpot_s, plan.ttft_s
    where = f"the row split over {n} × {s.cluster.gpu.name} (core/inference/row_split.py)"
    tpot = Figure.of(tpot_s, "s", formula="Σ over layers of each split matmul's slowest card + copies between cards "
                     "+ one hand-over per 128 columns, + each layer's floor without CUDA graphs + host layers",
                     inputs={"cards": n, "batch": inf.batch, "host_layers": plan.host_layers}, source=SOURCE,
                     assumptions=(where,))
    ttft = Figure.of(ttft_s, "s", formula="Σ over layers of each split matmul's slowest card at its prompt rate + "
                     "copies between cards + host layers' uploads",
                     inputs={"cards": n, "batch": inf.batch, "prompt_tokens": inf.prompt_tokens}, source=SOURCE,
                     assumptions=(where,))
    agg = inf.batch / tpot_s
    prefill_tps = inf.batch * inf.prompt_tokens / ttft_s
    cost_in, cost_out = cost_figures(s.cluster.hourly_price, n, agg, prefill_tps)
    kv = kv_layout(s.model, inf.kv_dtype, engine.mla_cache)
    q = quantized_weights(s.model, inf.weight_format)
    concurrency, pool = _concurrency(plan, inf.batch)
    report = InferenceReport(
        ttft_s=ttft, tpot_s=tpot,
        tokens_per_s=Figure.of(agg, "tokens/s", formula="batch ÷ tpot", inputs={"batch": inf.batch, "tpot_s": tpot_s},
                               source=SOURCE),
        tokens_per_s_per_user=Figure.of(1 / tpot_s, "tokens/s", formula="1 ÷ tpot", inputs={"tpot_s": tpot_s},
                                        source=SOURCE),
        max_concurrency=Figure.of(concurrency, "1", formula="min over cards of floor(room left ÷ the card's KV bytes "
                                  "per sequence)", inputs={"cards": n}, source=SOURCE),
        kv_bytes_per_token=Figure.of(kv.bytes_per_token, "B", formula="KV bytes one token adds (all layers)",
                                     source="vllm"),
        weight_bytes=Figure.of(q.total_bytes, "B", formula="Σ tensor bytes in the format (all cards and host RAM)",
                               inputs={"bits_per_weight": round(q.bits_per_weight, 4)}, source=q.format.source),
        prefill_bound="split matmuls (the slowest card's rows and the copies between cards)",
        decode_bound="split matmuls (the slowest card's rows and the copies between cards)",
        cost_per_million_input=cost_in, cost_per_million_output=cost_out,
        gpu_layers=Figure.of(plan.gpu_layers, "1", formula="inference.gpu_layers" if inf.gpu_layers is not None
                             else "largest n whose row split fits every card", inputs={"layers": s.model.num_layers,
                                                                                        "cards": n}, source=SOURCE),
        cpu_moe_layers=_experts(s, engine, q),
        kv_pool_bytes=Figure.of(pool, "B", formula="the fullest card's usable memory − its weights and runtime",
                                source=SOURCE),
        request_latency_s=Figure.of(ttft_s + inf.output_tokens * tpot_s, "s", formula="ttft + output × tpot",
                                    inputs={"output_tokens": inf.output_tokens}, source="roofline"),
        prefill_tokens_per_s=Figure.of(prefill_tps, "tokens/s", formula="batch × prompt ÷ ttft",
                                       inputs={"ttft_s": ttft_s}, source="roofline"),
        host_weight_bytes=Figure.of(plan.host_bytes, "B", formula="weights and KV of layers in host RAM, routed "
                                    "experts kept there, and the input embedding", source=SOURCE),
        weight_format=q.format.name, engine=engine.id,
    )
    return Estimate(params=count_params(s.model), memory=memory, compute=None, communication=None, inference=report,
                    bottleneck=_bottleneck(memory, plan), warnings=context_warning(s))


def _memory(s: Scenario, engine: EngineProfile, plan: MixedPlan) -> MemoryBreakdown:
    """The fullest card's bytes: its weights (its rows of every split matrix, its layers' whole tensors), its
    layers' KV cache, the back-end's runtime context, and the rest of its runtime share (compute buffer, the
    largest split matmul's scratch, the logits on the head's card) as activations."""
    card = plan.fullest
    i = plan.cards.index(card)
    context = float(runtime_context_bytes(engine, backend_of(card.gpu, s.inference.backend)) + engine.framework_bytes)
    parts = {
        "weights": Figure.of(card.weights, "B", formula="the card's rows of every split matrix + its layers' whole "
                             "tensors (norms, routed experts) + the head where it holds it", source=SOURCE),
        "kv_cache": Figure.of(card.kv_cache, "B", formula="batch × KV bytes of the card's layers", source=SOURCE),
        "activations": Figure.of(card.runtime - context, "B", formula="compute buffer of one micro-batch + the "
                                 "largest split matmul's activations and result slice (+ logits on the head's card)",
                                 source=SOURCE),
        "buffers": zero("B", "the logits are counted with the compute buffer"),
        "overhead": Figure.of(context, "B", formula="runtime context of the back-end + engine framework memory",
                              source=engine.source or "assumption"),
    }
    no = "inference does not train"
    return MemoryBreakdown(
        weights=parts["weights"], gradients=zero("B", no), optimizer=zero("B", no), master_weights=zero("B", no),
        activations=parts["activations"], kv_cache=parts["kv_cache"], buffers=parts["buffers"],
        overhead=parts["overhead"], total=total(parts, "B", "memory of the fullest card"),
        capacity=Figure.of(card.capacity, "B", formula="usable GPU memory", source="assumption"),
        host_ram=Figure.of(plan.host_bytes, "B", formula="weights and KV in host RAM (row split)", source=SOURCE),
        nvme=zero("B", "nothing is offloaded to NVMe"),
        worst_gpu=f"card {i} of {len(plan.cards)} (row split)",
    )


def _concurrency(plan: MixedPlan, batch: int) -> tuple[int, float]:
    """(sequences of the plan's length every card has KV room for, the fullest card's KV room in bytes)."""
    most = None
    for c in plan.cards:
        if c.kv_cache > 0:
            room = c.capacity - c.weights - c.runtime
            n = max(0, int(room // (c.kv_cache / batch)))
            most = n if most is None else min(most, n)
    f = plan.fullest
    return (most if most is not None else batch), max(0.0, f.capacity - f.weights - f.runtime)


def _experts(s: Scenario, engine: EngineProfile, q: QuantizedWeights) -> Figure | None:
    """The stated ``--n-cpu-moe`` (the row split keeps what the plan states; it chooses none itself)."""
    if not (engine.experts_in_host and s.model.is_moe):
        return None
    n = host_moe_layers(s.model, s.inference.cpu_moe_layers)
    return experts_figure(s.model, q, n, n, "inference.cpu_moe_layers" if n else "none: every expert on the GPUs")


def _bottleneck(memory: MemoryBreakdown, plan: MixedPlan) -> Bottleneck:
    if not memory.fits:
        short = (memory.total.value - memory.capacity.value) / GIB
        return Bottleneck("memory capacity", f"The row split needs {memory.total.value / GIB:.1f} GiB on its fullest "
                          f"card but {memory.capacity.value / GIB:.1f} GiB is usable ({short:.1f} GiB short): use a "
                          "smaller weight format, a shorter context or smaller batch, or more cards.")
    if plan.host_layers:
        return Bottleneck("memory bandwidth", f"{plan.host_layers} layers stay in host RAM; decode speed is set by "
                          "the CPU's memory bandwidth: fit more layers on the cards.")
    return Bottleneck("split matmuls", "llama.cpp's row split: every matrix of a token waits for its slowest card's "
                      "rows and for the copies between the cards, and no CUDA graph is replayed; compare the layer "
                      "split (inference.split_mode = layer).")


