"""llama.cpp's row split (``--split-mode row``) over several cards: every 2-D weight matrix split by rows.

Read from llama.cpp's code of 2025 (src/llama-model.cpp ``make_gpu_buft_list`` and ``load_tensors``;
ggml/src/ggml-cuda/ggml-cuda.cu, the CUDA split buffer ``ggml_backend_cuda_split_buffer_*`` and
``ggml_cuda_op_mul_mat``), the code that published 2 x RTX 3090 runs with ``-sm row`` used:

- Layers go to the cards as in the layer split (``core.inference.layer_split``: contiguous runs by the cards'
  free memory or ``--tensor-split``; the first ``n_layer - n_gpu_layers`` layers and, unless every layer is
  offloaded, the output head stay in host RAM; the input embedding always does). Each card's buffer-type list
  starts with a split buffer whose main device is that card, so a layer's weights are tried there first.
- A weight goes into the split buffer when the CUDA back-end accepts it there
  (``ggml_backend_cuda_device_supports_op``): a 2-D matrix (``ne[2] == ne[3] == 1``) of which the layer's own
  card gets at least one row. 3-D tensors (an MoE layer's stacked routed experts), norms and biases stay whole
  on the layer's card; so do its KV cache and its compute buffer.
- Rows go to card i from ``nrows * start_i`` to ``nrows * start_(i+1)`` (``get_row_split``; starts: the
  cumulative ``--tensor-split`` shares, by default each card's total memory, ``ggml_cuda_info().
  default_tensor_split``), each boundary rounded down to the MMQ tile height (``get_row_rounding``: 128 rows on
  NVIDIA Volta and later and on AMD, 64 before Volta); a card's slice of a quantised matrix is padded by one
  row fragment to a multiple of 512 values (``MATRIX_ROW_PADDING``).
- Per split matmul (``ggml_cuda_op_mul_mat``): the layer's card quantises the activations (q8_1, 36 B per 32
  values, for block-quantised weights; f32 otherwise) and every other card with rows copies them in
  (``cudaMemcpyPeerAsync``), multiplies its rows, and copies its slice of the f32 result back
  (``ggml_cuda_Memcpy2DPeerAsync``); the cards wait on each other's events, one hand-over per 128 activation
  columns (``MUL_MAT_SRC1_COL_STRIDE``). A graph with split weights is never captured as a CUDA graph
  (``check_node_graph_compatibility``), so the host launches every kernel.

Priced here: per card the rows it holds and its layers' whole tensors, KV and runtime (bytes); per split matmul
the slowest card's share (its rows at its bandwidth in decode, at its prompt rate in a prompt) plus, on the
cards other than the layer's, the activation and result copies at the PCIe rate, plus one hand-over
(``allreduce_latency_s``: the profile's small cross-GPU synchronisation, an llmplan assumption) per 128
columns; the layer's floor without CUDA graphs (``decode_layer_s_eager``). Copies between cards are priced at
the slower card's PCIe rate (no NVLink bridge and no peer-to-peer assumed). llama.cpp removed the CUDA split
buffer in build b9890 (2026-07, issue #25594): later builds refuse ``-sm row`` on CUDA (use ``-sm tensor``,
not modelled). Builds before the 2024 loader rewrite kept the small tensors and the KV cache on ``--main-gpu``:
not modelled.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from llmplan.core.engine_profile import EngineProfile
from llmplan.core.hardware import GpuSpec
from llmplan.core.inference.backend import (
    backend_of,
    decode_stream_efficiency,
    engine_prompt_rate,
    is_block_quantised,
    stream_efficiency,
)
from llmplan.core.inference.cpu_moe import OP_OFFLOAD_MIN_BATCH, host_moe_layers
from llmplan.core.inference.latency import score_traffic_s, touched_expert_fraction
from llmplan.core.inference.layer_split import _assign, card_runtime
from llmplan.core.inference.memory import LOGIT_BYTES
from llmplan.core.inference.moe_tiles import moe_prompt_extra_s
from llmplan.core.inference.multi_gpu import CardShare, MixedPlan
from llmplan.core.kvcache import batch_kv_bytes, kv_layout
from llmplan.core.quant import GroupBytes, quantized_weights
from llmplan.core.workload import Scenario
from llmplan.errors import InputError

MATRIX_ROW_PADDING = 512  # ggml-cuda common.cuh: a quantised row is padded to a multiple of 512 values
COL_STRIDE = 128  # ggml-cuda.cu MUL_MAT_SRC1_COL_STRIDE: activation columns per hand-over in a split matmul
Q8_1_BYTES = 36 / 32  # block_q8_1 (ggml-common.h): 32 int8 values + two halves = 36 B per 32 values
# One small GPU-to-GPU copy (p2pBandwidthLatencyTest): GeForce cards run without peer-to-peer access (the driver
# stages the copy through host memory): 14 µs between two RTX 5090s at PCIe 5.0 x8 with P2P off, 0.48 µs with a
# patched driver's P2P on (wumeicn.com, "NVIDIA RTX 5090 P2P Support Enabled by Patched Driver", 2025-12-12; two
# RTX 4090s 24 -> 5 µs). Cards with P2P: 4.10 µs, the best pair of RTX PRO 6000s at PCIe 5.0 (github.com/lukealonso/
# p2pmark README, a kernel reading one 128-byte line from the peer).
PEER_COPY_S_CONSUMER = 14e-6
PEER_COPY_S_P2P = 4.10e-6
SPLIT_BACKENDS = ("cuda", "rocm")  # back-ends with a split buffer here (ROCm builds the CUDA code through HIP)


@dataclass(frozen=True, slots=True)
class _Matrix:
    """One 2-D weight matrix of a layer (or the head): rows (ne[1]), values per row (ne[0]), stored bytes."""

    rows: int
    cols: int
    bytes: float


def mmq_rows(gpu: GpuSpec) -> int:
    """The MMQ tile height a row boundary is rounded to (``get_mmq_y_host``): 64 on NVIDIA before Volta."""
    if gpu.vendor == "nvidia" and gpu.compute_capability:
        try:
            return 128 if float(gpu.compute_capability) >= 7.0 else 64
        except ValueError:
            return 128
    return 128


def row_counts(nrows: int, shares: Sequence[float], rounding: int) -> list[int]:
    """Rows of an ``nrows`` matrix on each card (``get_row_split``): boundaries at the cumulative shares, rounded
    down to ``rounding`` rows, the last card taking the rest."""
    total = sum(shares)
    starts, acc = [], 0.0
    for s in shares:
        starts.append(acc / total)
        acc += s
    out = []
    for i in range(len(shares)):
        low = 0 if i == 0 else int(nrows * starts[i])
        low -= low % rounding
        if i == len(shares) - 1:
            high = nrows
        else:
            high = int(nrows * starts[i + 1])
            high -= high % rounding
        out.append(max(0, high - low))
    return out


def check(scenario: Scenario, engine: EngineProfile, gpus: Sequence[GpuSpec]) -> None:
    """Refuse a row split the engine, the cards or their back-end cannot run, naming the field."""
    field = "inference.split_mode=row"
    if not engine.splits_rows:
        raise InputError(f"{field}: {engine.name or engine.id} cannot split weight rows across cards (llama.cpp "
                         "--split-mode row); set split_mode = layer or choose inference.engine = llama.cpp")
    if len(gpus) < 2:
        raise InputError(f"{field} splits each matrix over several cards, and this plan has one; set split_mode = "
                         "layer (or add a card)")
    other = sorted({backend_of(g, scenario.inference.backend) for g in gpus} - set(SPLIT_BACKENDS))
    if other:
        raise InputError(f"{field}: the {', '.join(other)} back-end has no split buffer (llama.cpp then places "
                         "whole layers, as split_mode = layer); set split_mode = layer")


def split_rows(scenario: Scenario, gpus: Sequence[GpuSpec], tensor_split: Sequence[float] | None = None,
               gpu_layers: int | None = None) -> MixedPlan:
    """llama.cpp's row split of ``scenario``'s model over ``gpus`` (device order) and its speed.

    ``tensor_split``: relative shares per card for the layers and the rows (None: layers by usable memory,
    rows by total memory, llama.cpp's defaults); ``gpu_layers``: layers offloaded (None: as many as fit).
    """
    engine = scenario.engine_profile or EngineProfile()
    check(scenario, engine, gpus)
    return _RowSplit(scenario, engine, gpus, tensor_split).plan(gpu_layers)


class _RowSplit:
    """The bytes and seconds of one row split; built once, priced for any number of offloaded layers."""

    def __init__(self, scenario: Scenario, engine: EngineProfile, gpus: Sequence[GpuSpec],
                 tensor_split: Sequence[float] | None) -> None:
        self.s, self.e, self.gpus = scenario, engine, list(gpus)
        spec, inf = scenario.model, scenario.inference
        if tensor_split is not None and (len(tensor_split) != len(gpus) or sum(tensor_split) <= 0
                                         or any(x < 0 for x in tensor_split)):
            raise InputError(f"tensor_split needs {len(gpus)} non-negative shares with a positive sum")
        self.layer_shares = list(tensor_split) if tensor_split else [g.usable_memory_bytes for g in gpus]
        self.row_shares = list(tensor_split) if tensor_split else [float(g.memory_bytes) for g in gpus]
        self.rounding = max(mmq_rows(g) for g, s in zip(gpus, self.row_shares, strict=True) if s > 0)
        self.q = quantized_weights(spec, inf.weight_format)
        self.L = spec.num_layers
        self.kinds = list(spec.layer_mlp) or ["dense"] * self.L
        n_moe = host_moe_layers(spec, inf.cpu_moe_layers)
        seen, self.experts_host = 0, []
        for kind in self.kinds:  # --n-cpu-moe: the first n_moe MoE layers by index keep their experts in host RAM
            seen += kind == "moe"
            self.experts_host.append(kind == "moe" and seen <= n_moe)
        self.n_moe = n_moe
        kv = kv_layout(spec, inf.kv_dtype, engine.mla_cache)
        context = inf.prompt_tokens + inf.output_tokens
        self.kv_layer = batch_kv_bytes(kv, context, inf.batch, engine.kv_block_tokens,
                                       inf.shared_prefix_tokens) / self.L
        self.tokens = inf.batch * inf.prompt_tokens
        self.chunk = min(engine.prefill_chunk_tokens or self.tokens, self.tokens)
        self.passes = max(1, -(-self.tokens // self.chunk))
        self.backends = [backend_of(g, inf.backend) for g in gpus]
        self.bw = [g.memory_bandwidth * (decode_stream_efficiency(engine, g, b) or scenario.efficiency.memory_bandwidth)
                   for g, b in zip(gpus, self.backends, strict=True)]
        self.stream = [g.memory_bandwidth * (stream_efficiency(engine, g) or scenario.efficiency.memory_bandwidth)
                       for g in gpus]
        fmt = self.q.format
        self.rates, self.dequant = [], []
        for g, b in zip(gpus, self.backends, strict=True):
            rate, dq = engine_prompt_rate(engine, g, b, fmt, self.chunk)
            rate = rate or g.peak_flops.for_dtype(fmt.compute_dtype) * scenario.efficiency.matmul
            if rate <= 0:
                raise InputError(f"{g.name} has no peak FLOP/s for this weight format; set its peak_flops")
            self.rates.append(rate)
            self.dequant.append(dq)
        self.link = min(g.pcie_bandwidth or 16e9 for g in gpus) * scenario.efficiency.pcie
        self.peer_s = PEER_COPY_S_CONSUMER if any(g.segment == "consumer" for g in gpus) else PEER_COPY_S_P2P
        self.act_bytes = Q8_1_BYTES if is_block_quantised(fmt) else 4.0
        self.runtime = card_runtime(scenario, engine, gpus)
        self.read_share = touched_expert_fraction(spec, inf.batch)
        self.embed = self.q.bytes_where(lambda g: g.name == "embed_tokens")
        self.first = self.q.bytes_where(lambda g: g.place == "first" and g.name != "embed_tokens")
        layer_groups = [gb for gb in self.q.groups if gb.group.place == "layer"]
        self.per_kind = {k: self._layer_tensors(layer_groups, k) for k in set(self.kinds)}
        head = [gb for gb in self.q.groups if gb.group.place == "last"]
        self.head_split = [self._matrix(gb) for gb in head if self._splittable(gb)]
        self.head_whole = sum(gb.bytes for gb in head if not self._splittable(gb))
        self.head_bytes = sum(gb.bytes for gb in head)

    # ---- what a layer holds ---------------------------------------------------------------------------------
    @staticmethod
    def _splittable(gb: GroupBytes) -> bool:
        return len(gb.group.shape) == 2 and gb.group.category != "expert" and gb.group.count >= 1

    @staticmethod
    def _matrix(gb: GroupBytes) -> _Matrix:
        rows, cols = gb.group.shape
        return _Matrix(rows, cols, gb.bytes / gb.group.count)

    def _layer_tensors(self, groups: list[GroupBytes], kind: str) -> dict:
        """One layer of ``kind``: its 2-D matrices (with how many per layer), its other tensors' bytes, the routed
        experts' bytes and parameters, and the weights one prompt token multiplies outside the matrices."""
        n_kind = self.kinds.count(kind)
        spec = self.s.model
        active = spec.moe.experts_per_token / spec.moe.num_experts if spec.moe else 1.0
        matrices, whole, experts, expert_params, whole_params = [], 0.0, 0.0, 0.0, 0.0
        for gb in groups:
            g = gb.group
            if g.layer_kind not in ("", kind):
                continue
            per_layer = g.count / (self.L if g.layer_kind == "" else n_kind)
            if self._splittable(gb):
                matrices.append((self._matrix(gb), per_layer))
            elif g.category == "expert":
                experts += gb.bytes / (self.L if g.layer_kind == "" else n_kind)
                expert_params += g.params / (self.L if g.layer_kind == "" else n_kind)
            else:
                whole += gb.bytes / (self.L if g.layer_kind == "" else n_kind)
                whole_params += g.params / (self.L if g.layer_kind == "" else n_kind)
        return {"matrices": matrices, "whole": whole, "experts": experts, "expert_params": expert_params * active,
                "whole_params": whole_params}

    def _rows(self, m: _Matrix, main: int) -> list[int] | None:
        """Rows per card of ``m`` on a layer whose card is ``main``; None when it stays whole there (the main
        card would get no row: ``supports_op`` refuses the split buffer)."""
        rows = row_counts(m.rows, self.row_shares, self.rounding)
        return rows if rows[main] > 0 else None

    def _slice_bytes(self, m: _Matrix, rows: int) -> float:
        """A card's slice of ``m``: its rows, plus one row fragment padding the last row to a multiple of 512
        values when a row is not (``ggml_backend_cuda_split_buffer_init_tensor``, for every type)."""
        if not rows:
            return 0.0
        row_bytes = m.bytes / m.rows
        pad = (MATRIX_ROW_PADDING - m.cols % MATRIX_ROW_PADDING) % MATRIX_ROW_PADDING
        return rows * row_bytes + pad * row_bytes / m.cols

    def _placed(self, n: int) -> tuple[list[int], int]:
        """(the card of each layer, -1 for host RAM; the output head's card or -1)."""
        counts, out = _assign(n, self.layer_shares, with_output=n == self.L)
        where = [-1] * (self.L - n)
        for d, c in enumerate(counts):
            where += [d] * c
        return where, out

    # ---- bytes --------------------------------------------------------------------------------------------------
    def _experts_in_host(self, i: int) -> bool:
        """Layer ``i``'s routed experts stay in host RAM (``--n-cpu-moe``: the first MoE layers by index)."""
        return self.experts_host[i]

    def weights(self, n: int) -> tuple[list[float], float, int]:
        """(weights per card, weights in host RAM, the head's card) with ``n`` layers offloaded."""
        where, out = self._placed(n)
        cards = [0.0] * len(self.gpus)
        host = self.embed
        first_dev = next((d for d in where if d >= 0), -1)
        if first_dev >= 0:
            cards[first_dev] += self.first
        for i, m in enumerate(where):
            part = self.per_kind[self.kinds[i]]
            layer_total = part["whole"] + part["experts"] + sum(mx.bytes * c for mx, c in part["matrices"])
            if m < 0:
                host += layer_total
                continue
            cards[m] += part["whole"]
            if self._experts_in_host(i):
                host += part["experts"]
            else:
                cards[m] += part["experts"]
            for mx, c in part["matrices"]:
                self._add_matrix(cards, mx, c, m)
        if out >= 0:
            cards[out] += self.head_whole
            for mx in self.head_split:
                self._add_matrix(cards, mx, 1, out)
        else:
            host += self.head_bytes
        return cards, host, out

    def _add_matrix(self, cards: list[float], mx: _Matrix, copies: float, main: int) -> None:
        rows = self._rows(mx, main)
        if rows is None:
            cards[main] += mx.bytes * copies
            return
        for d, r in enumerate(rows):
            cards[d] += self._slice_bytes(mx, r) * copies

    def scratch(self) -> list[float]:
        """Per card, the pool memory of the largest split matmul of one micro-batch: the activations' copy
        (q8_1 or f32) and its slice of the f32 result."""
        mats = [mx for part in self.per_kind.values() for mx, _ in part["matrices"]] + self.head_split
        if not mats:
            return [0.0] * len(self.gpus)
        cols = max(mx.cols for mx in mats)
        rows = [max(row_counts(mx.rows, self.row_shares, self.rounding)[d] for mx in mats)
                for d in range(len(self.gpus))]
        return [self.chunk * (cols * self.act_bytes + r * 4.0) if r else 0.0 for r in rows]

    # ---- seconds ------------------------------------------------------------------------------------------------
    def _matmul_s(self, mx: _Matrix, main: int, tokens: int, prompt: bool) -> float:
        """One split matmul over ``tokens`` activation columns with ``main`` the layer's card: the slowest card's
        rows (read at its bandwidth, or multiplied at its prompt rate), plus the copies off the main card, plus
        one hand-over per 128 columns."""
        rows = self._rows(mx, main)
        row_bytes = mx.bytes / mx.rows
        if rows is None:
            rows = [mx.rows if d == main else 0 for d in range(len(self.gpus))]
        slowest = 0.0
        for d, r in enumerate(rows):
            if not r:
                continue
            if prompt:
                t = 2.0 * r * mx.cols * tokens / self.rates[d]
                if self.dequant[d]:
                    t += self.passes * r * (row_bytes + 2 * mx.cols) / self.stream[d]
            else:
                t = r * row_bytes / self.bw[d]
            if d != main:  # the activations in and the result slice out, two copies of one hand-over each
                t += (tokens * mx.cols * self.act_bytes + r * tokens * 4.0) / self.link + \
                    2 * self.peer_s * math.ceil(tokens / COL_STRIDE)
            slowest = max(slowest, t)
        used = sum(1 for r in rows if r)
        return slowest + (self.e.allreduce_latency_s * math.ceil(tokens / COL_STRIDE) if used > 1 else 0.0)

    def _card_times(self, where: list[int], out: int) -> tuple[list[float], list[float], float, float]:
        """(decode seconds per card as the layers' main card, prompt seconds per card, host decode bytes, prompt
        upload seconds)."""
        spec, inf = self.s.model, self.s.inference
        batch = inf.batch
        n_cards = len(self.gpus)
        decode, prefill = [0.0] * n_cards, [0.0] * n_cards
        host_read, upload = 0.0, 0.0
        pcie = min((g.pcie_bandwidth for g in self.gpus if g.pcie_bandwidth), default=0.0)  # as multi_gpu
        host_bw = inf.host_memory_bandwidth or self.e.host_memory_bandwidth
        for i, m in enumerate(where):
            part = self.per_kind[self.kinds[i]]
            if m < 0:
                layer = part["whole"] + part["experts"] + sum(mx.bytes * c for mx, c in part["matrices"])
                host_read += layer - part["experts"] * (1 - self.read_share) + self.kv_layer
                upload += self.passes * layer / (pcie or host_bw)
                continue
            g, backend = self.gpus[m], self.backends[m]
            floor = self.e.decode_layer_s_eager if backend == "cuda" and self.e.decode_layer_s_eager is not None \
                else self.e.decode_floor_per_layer(g.vendor == "apple", spec.moe_layer_count / self.L)
            experts_read = part["experts"] * self.read_share
            if self._experts_in_host(i):
                host_read += experts_read
                moved = part["experts"] * touched_expert_fraction(spec, self.chunk)
                upload += self.passes * moved / ((pcie or host_bw) if self.chunk >= OP_OFFLOAD_MIN_BATCH else host_bw)
                experts_read = 0.0
            decode[m] += (part["whole"] + experts_read + self.kv_layer) / self.bw[m] + floor
            prefill[m] += 2.0 * (part["whole_params"] + part["expert_params"]) * self.tokens / self.rates[m]
            for mx, c in part["matrices"]:
                decode[m] += c * self._matmul_s(mx, m, batch, prompt=False)
                prefill[m] += c * self._matmul_s(mx, m, self.tokens, prompt=True)
        if out >= 0:
            for mx in self.head_split:
                decode[out] += self._matmul_s(mx, out, batch, prompt=False)
                prefill[out] += self._matmul_s(mx, out, batch, prompt=True)  # logits of the last token only
            decode[out] += self.head_whole / self.bw[out]
        else:
            host_read += self.head_bytes
        for d in range(n_cards):
            layers = sum(1 for m in where if m == d)
            if layers:
                prefill[d] += self._prompt_extras(d, layers)
        return decode, prefill, host_read, upload

    def _prompt_extras(self, d: int, layers: int) -> float:
        """The score matrix's traffic without flash attention and llama.cpp's MoE prompt kernels' extra, for the
        ``layers`` layers whose card is ``d`` (as one GPU: ``latency.score_traffic_s``, ``moe_tiles``)."""
        g, inf, spec = self.gpus[d], self.s.inference, self.s.model
        t = score_traffic_s(self.s, g, self.e, layers, self.stream[d], inf.batch, inf.prompt_tokens,
                            min(self.e.prefill_chunk_tokens or inf.prompt_tokens, inf.prompt_tokens))
        experts = [gb for gb in self.q.groups if gb.group.category == "expert"]
        if experts:
            t += moe_prompt_extra_s(spec, self.e, g, self.backends[d], self.q.format,
                                    sum(gb.group.params for gb in experts), sum(gb.bytes for gb in experts),
                                    self.tokens, self.chunk, self.rates[d], self.stream[d], self.bw[d]) \
                * layers / self.L
        return t

    # ---- the plan -----------------------------------------------------------------------------------------------
    def totals(self, n: int) -> list[tuple[float, float, float]]:
        """(weights, KV, runtime) per card with ``n`` layers offloaded."""
        cards, _, out = self.weights(n)
        where, _ = self._placed(n)
        scratch = self.scratch()
        logits = self.s.inference.batch * self.s.model.vocab_size * LOGIT_BYTES
        upload = self._upload_buffer(where)
        return [(cards[d], self.kv_layer * where.count(d),
                 self.runtime[d] + scratch[d] + upload[d] + (logits if d == out else 0.0))
                for d in range(len(self.gpus))]

    def _upload_buffer(self, where: list[int]) -> list[float]:
        """Per card, the compute buffer's copy of one layer's routed experts when some of its layers keep them in
        host RAM and prompts multiply them there (op offload, ``memory._experts_in_host``)."""
        out = [0.0] * len(self.gpus)
        if self.chunk < OP_OFFLOAD_MIN_BATCH or "moe" not in self.per_kind:
            return out
        for i, m in enumerate(where):
            if m >= 0 and self._experts_in_host(i):
                out[m] = self.per_kind["moe"]["experts"]
        return out

    def fits(self, n: int) -> bool:
        return all(w + k + r <= g.usable_memory_bytes for g, (w, k, r) in zip(self.gpus, self.totals(n), strict=True))

    def plan(self, gpu_layers: int | None) -> MixedPlan:
        if gpu_layers is None:
            lo, hi = 0, self.L
            while lo < hi:
                mid = (lo + hi + 1) // 2
                lo, hi = (mid, hi) if self.fits(mid) else (lo, mid - 1)
            n = lo
        else:
            n = min(gpu_layers, self.L)
        where, out = self._placed(n)
        _, host_w, _ = self.weights(n)
        decode, prefill, host_read, upload = self._card_times(where, out)
        host_layers = self.L - n
        host_bw = self.s.inference.host_memory_bandwidth or self.e.host_memory_bandwidth
        if (host_layers or self.n_moe) and not host_bw:
            raise InputError("layers or experts stay in host RAM but no host memory bandwidth is known; set "
                             "inference.host_memory_bandwidth (bytes/s)")
        cards = tuple(CardShare(g, where.count(d), d == out, w, k, r, float(g.usable_memory_bytes), decode[d],
                                prefill[d])
                      for d, (g, (w, k, r)) in enumerate(zip(self.gpus, self.totals(n), strict=True)))
        host_bytes = host_w + self.kv_layer * host_layers
        tpot = sum(decode) + (host_read / host_bw if host_read else 0.0) + self.e.step_overhead_s
        return MixedPlan(cards, host_layers, host_bytes, tpot, sum(prefill) + upload, split_mode="row")
