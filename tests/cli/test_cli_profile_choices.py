"""The CLI prints the recompute setting the framework runs (issue 26): a Hugging Face Trainer LoRA run with its
layout given and recompute left on the default printed "recompute selective", which the Trainer does not have
(``gradient_checkpointing`` checkpoints every layer or none); it runs as none there. Exact text."""

from llmplan.cli import main

LORA_8B = ["estimate", "--model", "meta-llama/Llama-3.1-8B", "--gpu", "nvidia-h100-sxm-80gb", "--workload",
           "finetune", "--set", "training.method=lora", "--set", "training.seq_len=2048", "--set", "parallelism.dp=1"]


def test_a_trainer_run_prints_recompute_none_not_selective(capsys):
    assert main([*LORA_8B, "--set", "training.framework=hf-trainer"]) == 0
    out = capsys.readouterr().out
    assert "recompute none" in out and "recompute selective" not in out


def test_megatron_still_prints_selective(capsys):
    assert main([*LORA_8B, "--set", "training.framework=megatron"]) == 0
    assert "recompute selective" in capsys.readouterr().out
