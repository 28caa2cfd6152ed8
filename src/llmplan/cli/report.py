"""An ``Estimate`` as the stable ``--json`` object and as aligned, unit-labelled tables.

The JSON keys are a contract (DESIGN.md §3, documented in docs/plans-and-cli.md): add
keys, never rename them. Values are SI (bytes, seconds, FLOP, bytes/s); a section that
does not apply (``compute`` for inference, ``inference`` for training) is ``null``.
The tables format every number with ``llmplan.core.present``, as the app and its exports do.
"""

from __future__ import annotations

import json
import math
from typing import Any

from llmplan.core import present
from llmplan.core.explain import Figure
from llmplan.core.framework_profile import SWITCH_NAMES
from llmplan.core.inference.context_fit import longest_context
from llmplan.core.present import MemoryUnit
from llmplan.core.result import Estimate
from llmplan.core.system import Evaluation, system_json
from llmplan.core.workload import Scenario
from llmplan.errors import LlmplanError
from llmplan.fit.tiers import plan_verdict
from llmplan.plan.released import released_words

LAYOUT_SOURCE = {"auto": "chosen automatically", "plan": "from the plan", "this-machine": "chosen for this machine"}
MEMORY_KEYS = ("weights", "master_weights", "gradients", "optimizer", "activations", "kv_cache", "buffers",
               "overhead")


def _v(fig: Figure | None) -> float | None:
    return None if fig is None else fig.value


def estimate_json(est: Estimate | Evaluation, scenario: Scenario, layout_source: str = "plan") -> dict[str, Any]:
    """The documented ``--json`` object; ``system`` is null for the engine's bare ``Estimate``."""
    mem = est.memory
    parts = {k: getattr(mem, k).value for k in MEMORY_KEYS}
    memory = dict(parts, total=sum(parts.values()))
    p = scenario.parallelism
    c = scenario.cluster
    out: dict[str, Any] = {
        "model": scenario.model.name,
        "workload": scenario.workload,
        "hardware": {"gpu": c.gpu.name, "gpu_id": c.gpu.id, "gpus_per_node": c.gpus_per_node, "nodes": c.nodes,
                     "gpus": c.total_gpus, "network": c.network.name, "gpu_vendor": c.gpu.vendor,
                     "unified_memory": c.gpu.unified_memory, "gpu_memory_total_bytes": c.gpu.memory_bytes,
                     "gpu_memory_usable_bytes": c.gpu.usable_memory_bytes},
        "params": {"total": est.params.total, "active": est.params.active, "embedding": est.params.embedding},
        "memory_per_gpu": memory,
        "worst_gpu": mem.worst_gpu,
        "gpu_memory_bytes": mem.capacity.value,
        "fits": memory["total"] <= mem.capacity.value, "tight": mem.tight, "verdict": _verdict(scenario, est),
        "headroom_bytes": mem.capacity.value - memory["total"],
        "host_ram_per_node_bytes": mem.host_ram.value,
        "nvme_per_node_bytes": mem.nvme.value,
        "compute": None,
        "communication": None,
        "inference": None,
        "layout": {"tp": p.tp, "pp": p.pp, "dp": p.dp, "cp": p.cp, "ep": p.ep,
                   "sequence_parallel": p.sequence_parallel, "virtual_stages": p.virtual_stages,
                   "gpus": p.gpus, "chosen_by": layout_source},
        "bottleneck": {"kind": est.bottleneck.kind, "statement": est.bottleneck.statement},
        "warnings": list(est.warnings),
    }
    if scenario.workload != "inference":
        t = scenario.training
        out["training"] = {"method": t.method, "precision": t.precision, "optimizer": t.optimizer,
                           "seq_len": t.seq_len, "micro_batch": t.micro_batch,
                           # the batch the estimate trains with (fixed in tokens or by the published rule)
                           "global_batch": int(est.compute.global_batch.value) if est.compute and
                           est.compute.global_batch else t.global_batch,
                           "accumulation": int(est.compute.accumulation.value) if est.compute and
                           est.compute.accumulation else 1,
                           "global_batch_tokens": t.global_batch_tokens, "batch_rule": t.batch_rule,
                           "zero_stage": t.zero_stage, "offload": t.offload, "recompute": t.recompute,
                           "recompute_modules": list(t.recompute_modules) if t.recompute == "selective" else [],
                           "framework": scenario.framework.id, "regime": t.regime, "loss": t.loss,
                           "grad_clip": t.grad_clip,
                           "switches_on": [n for n in SWITCH_NAMES if getattr(t, n)]}
        if scenario.workload == "finetune":
            out["training"] |= training_limits(scenario)
    if est.compute is not None:
        k = est.compute
        out["compute"] = {
            "flops_per_step": k.flops_per_step.value, "hardware_flops_per_step": k.hardware_flops_per_step.value,
            "step_time_s": k.step_time_s.value, "compute_time_s": k.compute_time_s.value,
            "bubble_fraction": k.bubble_fraction.value, "tokens_per_s": k.tokens_per_s.value,
            "mfu": k.mfu.value, "hfu": k.hfu.value, "training_days": k.training_days.value,
            "gpu_hours": k.gpu_hours.value, "cost_usd": _v(k.cost_usd),
            "exposed_offload_s": _v(k.offload_time_s) or 0.0, "grad_clip_s": _v(k.grad_clip_s) or 0.0,
            "breakdown": dict(k.breakdown),
        }
    if est.communication is not None:
        m = est.communication
        out["communication"] = {
            "intra_node_bytes": m.intra_node_bytes.value, "inter_node_bytes": m.inter_node_bytes.value,
            "intra_node_bandwidth_needed": m.intra_node_bandwidth_needed.value,
            "inter_node_bandwidth_needed": m.inter_node_bandwidth_needed.value,
            "exposed_time_s": m.exposed_time_s.value, "bottleneck_link": m.bottleneck_link,
            "collectives": [
                {"name": x.name, "group": x.group, "group_size": x.group_size, "link": x.link,
                 "bytes_per_step": x.bytes_per_step.value, "time_s": x.time_s.value, "exposed_s": x.exposed_s.value,
                 "algorithm": x.algorithm, "span": x.span, "nodes": x.nodes, "message_bytes": x.message_bytes,
                 "calls": x.calls, "bus_bandwidth": x.bus_bandwidth, "latency_s": x.latency_s, "limit": x.limit,
                 "hides_behind": x.hides_behind, "unhidden_s": x.unhidden_s}
                for x in m.collectives
            ],
        }
    if est.inference is not None:
        i = est.inference
        out["inference"] = {
            "ttft_s": i.ttft_s.value, "tpot_s": i.tpot_s.value, "tokens_per_s": i.tokens_per_s.value,
            "tokens_per_s_per_user": i.tokens_per_s_per_user.value, "max_concurrency": i.max_concurrency.value,
            "kv_bytes_per_token": i.kv_bytes_per_token.value, "weight_bytes": i.weight_bytes.value,
            "prefill_bound": i.prefill_bound, "decode_bound": i.decode_bound,
            "cost_per_million_input": _v(i.cost_per_million_input),
            "cost_per_million_output": _v(i.cost_per_million_output),
            "gpu_layers": _v(i.gpu_layers),
            "cpu_moe_layers": _v(i.cpu_moe_layers),
            **({"experts_in_host": present.experts_figure(i.cpu_moe_layers)} if i.cpu_moe_layers is not None else {}),
            # the settings the figures are for: the engine profile, the formats, the request shape
            "engine": i.engine, "engine_name": scenario.engine_profile.name if scenario.engine_profile else i.engine,
            "weight_format": i.weight_format, "kv_dtype": scenario.inference.kv_dtype,
            "batch": scenario.inference.batch, "prompt_tokens": scenario.inference.prompt_tokens,
            "output_tokens": scenario.inference.output_tokens,
            "dp_attention": scenario.inference.dp_attention,  # SGLang's --enable-dp-attention: changes every figure
        }
        fit = longest_context(scenario)
        out["inference"] |= {"longest_context_tokens": fit.tokens, "trained_context_tokens": fit.trained_context,
                             "longest_context_batch": fit.batch,
                             # llama.cpp: the routed experts kept in host RAM for it (--n-cpu-moe N), N or 0
                             "longest_context_cpu_moe_layers": fit.first_layers,
                             "longest_context_experts_flag": fit.experts_flag}
    out["system"] = system_json(est.system) if isinstance(est, Evaluation) else None
    return out


def _verdict(scenario: Scenario, est: Estimate | Evaluation) -> dict[str, Any]:
    """The app's verdict tier (``fit.tiers.plan_verdict``): a plan that runs with layers or optimizer states
    in CPU RAM is "offload", not a plain fit (issue 18: 70B Q4_K_M on a 4090 printed "FITS")."""
    v = plan_verdict(scenario, est, MemoryUnit())
    return {"tier": v.tier, "headline": v.headline, "offload_cost": v.cost or None,
            "layers_in_cpu_ram": v.offloaded_layers,
            "tokens_per_s_all_on_gpu": v.all_gpu.tokens_per_s if v.all_gpu is not None else None}


# ---- human output ---------------------------------------------------------------------------


def json_text(data: Any) -> str:
    """``--json`` output as strict JSON: an unbounded figure (infinite time when goodput is 0) is ``null``,
    because ``Infinity`` is not JSON and breaks the tools that read it."""

    def finite(x: Any) -> Any:
        if isinstance(x, float) and not math.isfinite(x):
            return None
        if isinstance(x, dict):
            return {k: finite(v) for k, v in x.items()}
        if isinstance(x, list | tuple):
            return [finite(v) for v in x]
        return x

    return json.dumps(finite(data), indent=2, allow_nan=False)


def table(rows: list[tuple[str, str]], indent: str = "  ") -> str:
    width = max((len(k) for k, _ in rows), default=0)
    vwidth = max((len(v) for _, v in rows), default=0)
    return "\n".join(f"{indent}{k:<{width}}  {v:>{vwidth}}" for k, v in rows)


def estimate_text(data: dict[str, Any], decimal: bool = False) -> str:
    """The same object as aligned tables for people (GiB by default, GB with decimal=True)."""
    mem_unit = MemoryUnit.decimal(decimal)

    def b(n: float) -> str:  # as the app's table shows a size (present.figure)
        return mem_unit.fmt_any(n)

    hw = data["hardware"]
    lay = data["layout"]
    lines = [
        f"{data['model']} — {data['workload']} on {hw['gpus']:,} × {hw['gpu']} "
        f"({hw['nodes']} node{'s' if hw['nodes'] != 1 else ''} of {hw['gpus_per_node']})",
        f"layout ({LAYOUT_SOURCE.get(lay['chosen_by'], 'from the plan')}): "
        f"TP {lay['tp']} · PP {lay['pp']}" + (f" (×{lay['virtual_stages']} virtual)" if lay['virtual_stages'] > 1
                                             else "")
        + f" · DP {lay['dp']} · CP {lay['cp']} · EP {lay['ep']}",
    ]
    if "training" in data:
        t = data["training"]
        lines.append(f"training: {t['method']}, {t['precision']}, {t['optimizer']}, seq {t['seq_len']:,}, "
                     f"micro-batch {t['micro_batch']}, global batch {t['global_batch']:,} "
                     f"({t.get('accumulation', 1):,} accumulation step{'s' if t.get('accumulation', 1) != 1 else ''}), "
                     f"ZeRO-{t['zero_stage']}, "
                     f"recompute {_recompute_words(t)}, offload {t['offload']}")
        on = ", ".join(t.get("switches_on") or ()) or "none"
        lines.append(f"framework: {t['framework']} profile, {'pure 16-bit' if t['regime'] == 'pure' else 'AMP'}, "
                     f"loss {t.get('loss', 'auto')}, switches on: {on} (training.framework, training.regime, "
                     f"training.<switch>)")
    if data.get("inference") and "engine" in data["inference"]:
        i = data["inference"]
        lines.append(f"inference: {i.get('engine_name', i['engine'])}, weights {i['weight_format']}, KV cache {i['kv_dtype']}, "
                     f"{i['batch']:,} sequence{'s' if i['batch'] != 1 else ''} of {i['prompt_tokens']:,} tokens in "
                     f"+ {i['output_tokens']:,} out{', DP attention (--enable-dp-attention)' if i.get('dp_attention') else ''} "
                     "(inference.engine, inference.weight_format, inference.<field>)")
    if data.get("released_format"):
        lines.append(released_words(data["released_format"], "--set inference.weight_format=... for another"))
    if data.get("automatic"):  # core.search.policy chose knobs the plan leaves open
        said = data["automatic"].endswith(")")  # it says why itself (policy.usual_offload_words)
        lines.append(data["automatic"] + ("" if said else " (the plan leaves it open and does not fit on the GPUs "
                                                          "without it)"))
    verdict = ("FITS (tight: within the allocator's fragmentation margin)" if data.get("tight") else "FITS") \
        if data["fits"] else "DOES NOT FIT"
    tier = data.get("verdict") or {}
    if data["fits"] and tier.get("tier") == "offload":  # "32 of 80 layers in CPU RAM, ~3.55 tokens/s"
        verdict = f"FITS WITH OFFLOAD ({tier['headline'].split(': ', 1)[-1]})"
    mem = data["memory_per_gpu"]
    where = f" (the worst-loaded GPU: {data['worst_gpu']})" if data.get("worst_gpu") else ""
    lines += ["", f"{verdict}: {b(mem['total'])} of {b(data['gpu_memory_bytes'])} per GPU{where}", "",
              "parameters"]
    p = data["params"]
    lines.append(table([("total", f"{p['total']:,}"), ("active / token", f"{p['active']:,}"),
                        ("embedding", f"{p['embedding']:,}")]))
    lines += ["", "memory per GPU"]
    rows = [(k.replace("_", " "), b(mem[k])) for k in MEMORY_KEYS if mem[k]]
    rows.append(("total", b(mem["total"])))
    rows.append(("capacity", b(data["gpu_memory_bytes"])))
    # what lives off the GPUs, per node as the estimate has it (the app's table and memory bar say the same)
    rows += [(f"{label} per node (offload)", b(data[key])) for label, key in
             (("host RAM", "host_ram_per_node_bytes"), ("NVMe", "nvme_per_node_bytes")) if data.get(key)]
    lines.append(table(rows))
    if note := _unified_note(data["hardware"], b):
        lines.append(note)
    if limits := _limit_rows(data.get("training") or {}):
        lines += ["", "what fits on one GPU (the rest of the plan as it is)", table(limits)]
    if data["compute"]:
        c = data["compute"]
        lines += ["", "time"]
        rows = [("step time", present.duration(c["step_time_s"])), ("throughput (cluster)", present.tokens_per_s(c["tokens_per_s"])),
                ("MFU", present.percent(c["mfu"])), ("pipeline bubble", present.percent(c["bubble_fraction"])),
                *([("offload (exposed)", present.duration(c["exposed_offload_s"]))] if c.get("exposed_offload_s") else []),
                ("FLOPs per step", present.si(c["flops_per_step"], "FLOP")),
                ("training time", present.duration(c["training_days"] * 86400)), ("GPU-hours", present.gpu_hours(c["gpu_hours"]))]
        if c["cost_usd"] is not None:
            rows.append(("cost", present.money(c["cost_usd"])))
        lines.append(table(rows))
    if data["communication"] and data["communication"]["collectives"]:
        m = data["communication"]
        lines += ["", "communication per GPU per step"]
        rows = [(x["name"], f"{b(x['bytes_per_step'])}  {present.duration(x['exposed_s'])} exposed"
                 + (f"  [{x['algorithm']}, {x['span']}, {present.rate(x['bus_bandwidth'])} bus, "
                    f"{present.duration(x['latency_s'])} latency]" if x.get("algorithm") else "")
                 + (f"  hides behind {x['hides_behind']}" if x.get("hides_behind") else "  on the critical path"))
                for x in m["collectives"]]
        if m["inter_node_bytes"] > 0:  # one node: no inter-node traffic ("0 B/s" read as a requirement), as the app
            rows.append(("inter-node bandwidth to hide it", present.rate(m["inter_node_bandwidth_needed"])))
        lines.append(table(rows))
    if data["inference"]:
        i = data["inference"]
        lines += ["", "inference"]
        lines.append(table([
            ("time to first token", present.duration(i["ttft_s"])), ("time per output token", present.duration(i["tpot_s"])),
            ("throughput (all users)", present.tokens_per_s(i["tokens_per_s"])),
            ("throughput per user", present.tokens_per_s(i["tokens_per_s_per_user"])),
            ("max concurrent sequences", present.integer(i["max_concurrency"])),
            ("KV cache per token", mem_unit.fmt_any(i["kv_bytes_per_token"])),
            *([("routed experts", i["experts_in_host"])] if i.get("experts_in_host") else []),
            *([("longest context that fits", longest_context_text(i)),
               ("model's trained context", f"{i['trained_context_tokens']:,} tokens")]
              if "longest_context_tokens" in i else []),
        ]))
    if data.get("system"):
        lines += ["", "beyond the GPU"]
        lines.append(table(system_rows(data["system"], b)))
    lines += ["", f"bottleneck: {data['bottleneck']['kind']} — {data['bottleneck']['statement']}"]
    lines += [f"warning: {w}" for w in data["warnings"]]
    lines += [f"warning: {w}" for w in (data.get("system") or {}).get("warnings", ())]  # the app shows them too
    return "\n".join(lines)


def _unified_note(hw: dict[str, Any], b) -> str:
    """Why a Mac's capacity is less than its RAM: the GPU wires a share of unified memory by default (2/3 up to
    32 GiB, 3/4 above: docs/fit.md), which ``sysctl iogpu.wired_limit_mb`` raises."""
    total, usable = hw.get("gpu_memory_total_bytes"), hw.get("gpu_memory_usable_bytes")
    if not hw.get("unified_memory") or not total or not usable or usable >= total:
        return ""
    return f"  unified memory: {present.unified_share(b(usable), b(total), hw.get('gpu_vendor') == 'apple')}"


def training_limits(scenario: Scenario) -> dict[str, int | None]:
    """The longest sequence at the plan's micro-batch and the largest micro-batch at its sequence length that
    fit one GPU of the layout (``core.training.limits``, the app's "What fits on one GPU"); None when the plan
    cannot be varied."""
    from llmplan.core.training.limits import largest_micro_batch, longest_sequence

    try:
        return {"longest_seq_len_tokens": longest_sequence(scenario),
                "largest_micro_batch": largest_micro_batch(scenario)}
    except LlmplanError:
        return {"longest_seq_len_tokens": None, "largest_micro_batch": None}


def _limit_rows(t: dict[str, Any]) -> list[tuple[str, str]]:
    s, mb = t.get("longest_seq_len_tokens"), t.get("largest_micro_batch")
    if s is None or mb is None:
        return []
    seqs = "sequence" if mb == 1 else "sequences"
    return [("longest sequence that fits", f"{s:,} tokens at micro-batch {t['micro_batch']}" if s
             else f"none at micro-batch {t['micro_batch']}"),
            ("largest micro-batch that fits", f"{mb:,} {seqs} of {t['seq_len']:,} tokens" if mb
             else f"none: one sequence of {t['seq_len']:,} tokens does not fit")]


def longest_context_text(i: dict[str, Any]) -> str:
    """The longest context in the words of ``present.context_fit`` (the app's results say the same): every
    layer on the GPU where the engine reports ``gpu_layers`` (llama.cpp, Ollama), with the routed experts
    ``--n-cpu-moe`` keeps in host RAM for it (MoE models on llama.cpp)."""
    return present.context_fit(i["longest_context_tokens"], i.get("longest_context_batch", 1),
                               every_layer=i.get("gpu_layers") is not None,
                               experts=i.get("longest_context_experts_flag", ""))


def run_finishes(sysd: dict[str, Any]) -> bool:
    """A training run with goodput > 0 has a finite wall time (``--json`` gives ``null`` otherwise)."""
    g = sysd.get("goodput")
    return bool(g) and g.get("goodput") is not None and g["goodput"] > 0 and \
        g.get("effective_days") is not None and math.isfinite(g["effective_days"])


def data_has_run_length(sysd: dict[str, Any]) -> bool:
    """Energy, cost and CO2 are totals for a training run that finishes; an inference plan has no run length."""
    p = sysd.get("power") or {}
    return run_finishes(sysd) and all(p.get(k) is not None and math.isfinite(p[k])
                                      for k in ("energy_kwh", "cost_usd", "co2_kg"))


def system_rows(sysd: dict[str, Any], b) -> list[tuple[str, str]]:
    """Checkpoints, goodput, data, host, power and cold start as label/value rows."""
    rows: list[tuple[str, str]] = []
    ck = sysd["checkpoint"]
    rows.append(("checkpoint size (all shards)", f"{b(ck['total_bytes'])}  ({ck['bytes_per_param']:.3g} B/param)"))
    rows.append(("checkpoint write / read", f"{present.duration(ck['write_s'])} / {present.duration(ck['read_s'])}"))
    g = sysd.get("goodput")
    if g:
        rows += [("job MTBF", present.duration(g["mtbf_s"])), ("checkpoint interval", present.duration(g["interval_s"]))]
        if run_finishes(sysd):
            rows += [("goodput", present.percent(g["goodput"])),
                     ("effective training time", present.duration(g["effective_days"] * 86400))]
        else:
            rows.append(("goodput", "0%: failures come faster than the job can save and restart; it never finishes"))
    d = sysd.get("data")
    if d:
        rows.append(("data read needed", f"{present.rate(d['read_bandwidth_needed'])} "
                                          f"({present.load(d['storage_load'])} of storage)"))
    h = sysd.get("host")
    if h and h["ram_per_node_bytes"]:
        rows.append(("host RAM per node", b(h["ram_per_node_bytes"])))
    p = sysd.get("power")
    if p:
        rows.append(("power at the wall (× PUE)", present.si(p["facility_watts"], "W")))
        if p.get("energy_kwh") and data_has_run_length(sysd):
            rows.append(("energy for the run", present.energy(p["energy_kwh"])))
            if p.get("cost_usd") is not None:
                rows.append(("electricity cost", present.money(p["cost_usd"])))
            if p.get("co2_kg") is not None:
                rows.append(("CO2", present.mass_co2(p["co2_kg"])))
    cs = sysd.get("cold_start")
    if cs:
        rows.append(("cold start (load weights)", present.duration(cs["total_s"])))
    return rows


def _recompute_words(t: dict) -> str:
    """"selective" alone for the classic attention-core recompute, else with Megatron-Core's module names."""
    mods = t.get("recompute_modules") or []
    return t["recompute"] + (f" ({', '.join(mods)})" if mods and mods != ["core_attn"] else "")
