"""``training.loss = "te_ce"``: Transformer Engine's parallel cross-entropy, as Megatron-Core calls it under
``cross_entropy_loss_fusion`` with ``cross_entropy_fusion_impl = "te"`` (NeMo's performance scripts set both:
NVIDIA-NeMo/Megatron-Bridge scripts/performance/utils/overrides.py at c0b9a0003).

Source of the bytes: NVIDIA/TransformerEngine transformer_engine/pytorch/triton/cross_entropy.py at 5671fd3 (TE 2.12):
``online_softmax_kernel`` reads the 16-bit logits (2 B per logit), ``cross_entropy_kernel`` reads them again and
writes the gradient over them (2 + 2 B), and the backward's ``element_mul_kernel`` scales that gradient in place by
the per-token loss gradient (2 + 2 B; Megatron-Core asks for per-token losses, reduce_loss False): 10 B per logit.
Memory: the kernel saves the logits tensor it wrote the gradient into, 2 B per logit at both ends. Exact (1e-12).
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from llmplan.catalog.frameworks import load_framework_profiles
from llmplan.catalog.models import load_model_catalog
from llmplan.core.params import count_params
from llmplan.core.training import kernel_rates as kr
from llmplan.core.training.eager_memory import loss_bytes_per_logit
from llmplan.core.training.op_time import Rates, head_time
from llmplan.core.training.ops import head_ops
from llmplan.core.workload import TrainingSettings

R = Rates(gemm=792.1e12, attention_scale=1.0, peak=989.4e12, bandwidth=2.911e12, elem_bytes=2.0)


def _head(loss: str):
    m = load_model_catalog(include_user=False).get("openai/gpt-oss-120b").spec
    lay = SimpleNamespace(micro_batch=1, seq_len=4096, cp=1, ep=8, tp=1, sp=False, kv_replicated=False)
    return head_ops(m, count_params(m), lay, TrainingSettings(loss=loss), load_framework_profiles()["megatron"], 2.0)


def test_te_cross_entropy_moves_ten_bytes_per_logit():
    """GPT-OSS's head on one GPU: 4,096 tokens × 201,088 logits at 10 B, against the measured fp32
    cross-entropy's 55.4 B that Megatron's own vocab-parallel loss is charged."""
    te, fp32 = _head("te_ce"), _head("fp32_logits")
    assert te.logits == 4096 * 201088
    assert head_time(te, R).loss == pytest.approx(4096 * 201088 * 10 / R.bandwidth, rel=1e-12)
    assert head_time(fp32, R).loss == pytest.approx(4096 * 201088 * kr.CE_BYTES_PER_LOGIT / R.bandwidth, rel=1e-12)


def test_te_cross_entropy_holds_the_16_bit_logits_only():
    assert loss_bytes_per_logit("te_ce", False) == (2.0, 2.0)
