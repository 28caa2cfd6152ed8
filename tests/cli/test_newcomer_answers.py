"""Answers a new user got wrong or could not read, found by asking the CLI the questions of docs/fit.md's users
(a hobbyist with one 24 GB card, an engineer serving on an H100, a researcher on many nodes), 2026-11-28.
Each test failed before its fix."""

import json

from llmplan.cli import main

LLAMA_70B_Q4_ON_4090 = ["estimate", "--model", "meta-llama/Llama-3.1-70B", "--gpu", "nvidia-rtx-4090-24gb",
                        "--workload", "inference", "--set", "inference.engine=llama.cpp",
                        "--set", "inference.weight_format=q4_k_m"]


def test_offloaded_plan_says_why_no_context_fits_on_the_gpu(capsys):
    # 39.6 GiB of Q4_K_M weights on a 24 GB card: llama.cpp runs it with 32 of 80 layers in host RAM; the
    # context is searched with every layer on the GPU, which no context allows. It printed "0 tokens".
    assert main(LLAMA_70B_Q4_ON_4090) == 0
    out = capsys.readouterr().out
    assert "FITS WITH OFFLOAD" in out
    assert "longest context that fits  none with every layer on the GPU (the weights alone do not fit)" in out
    assert "0 tokens" not in out


def test_llama_cpp_context_names_its_assumption(capsys):
    assert main(["estimate", "--model", "meta-llama/Llama-3.1-8B", "--gpu", "nvidia-rtx-4090-24gb", "--workload",
                 "inference", "--set", "inference.engine=llama.cpp", "--set", "inference.weight_format=q4_k_m",
                 "--set", "inference.kv_dtype=fp16"]) == 0
    assert "89,856 tokens (every layer on the GPU)" in capsys.readouterr().out  # docs/inference.md derives it


def test_context_at_a_batch_is_per_sequence(capsys):
    args = ["estimate", "--model", "meta-llama/Llama-3.1-8B", "--gpu", "nvidia-h100-sxm-80gb", "--workload",
            "inference", "--set", "inference.batch=64"]
    assert main(args) == 0
    assert "tokens per sequence, 64 at once" in capsys.readouterr().out
    assert main([*args, "--json"]) == 0
    inf = json.loads(capsys.readouterr().out)["inference"]
    assert inf["longest_context_batch"] == 64
    # 64 sequences share ~54 GiB of vLLM's pool at 128 KiB a token: ~6,900 tokens each, not the 131,072 one gets
    assert 6_000 < inf["longest_context_tokens"] < 8_000


def test_many_nodes_without_a_network_names_the_flag(capsys):
    # A researcher's first try at 512 GPUs: --gpus 8 --nodes 64. The message named only the plan field.
    assert main(["estimate", "--model", "meta-llama/Meta-Llama-3-70B", "--gpu", "nvidia-h100-sxm-80gb", "--gpus", "8",
                 "--nodes", "64", "--workload", "pretrain"]) == 2
    err = capsys.readouterr().err
    assert "64 nodes need a network between them" in err and "--network ib-ndr-400" in err
    assert "Traceback" not in err


def test_a_pdf_or_a_weights_file_is_named_for_what_it_is(tmp_path, capsys):
    pdf = tmp_path / "paper.pdf"
    pdf.write_bytes(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<<>>\nendobj\n")  # a PDF's header (ISO 32000-2, 7.5.2)
    assert main(["estimate", "--model", str(pdf), "--gpu", "nvidia-rtx-4090-24gb"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith("paper.pdf: this is a PDF document, not a config.json; give the model's config.json, its "
                        "folder, a .gguf file, or a Hugging Face repo id (ORG/NAME)")
    assert main(["estimate", str(pdf)]) == 2  # given as a plan
    assert "this is a PDF document, not a .llmplan file" in capsys.readouterr().err
    weights = tmp_path / "model.bin"
    header = b'{"__metadata__":{"format":"pt"}}'  # safetensors: u64 little-endian header size, then the header
    weights.write_bytes(len(header).to_bytes(8, "little") + header + b"\0" * 16)
    assert main(["params", str(weights)]) == 2
    assert "this is a safetensors weights file" in capsys.readouterr().err


def test_nothing_fits_says_by_how_much(capsys):
    # DeepSeek-V3 in FP8 (671B without its MTP module, ~627 GiB) cannot fit eight 80 GB H100s (8 x 79.6 GiB), as
    # every deployment guide says (DeepSeek-V3 README, "How to Run Locally": 8 x H200 or 2 nodes of H100). The
    # answer was an error without a number; it now says how far the roomiest layout is from fitting.
    assert main(["estimate", "--model", "deepseek-ai/DeepSeek-V3", "--gpu", "nvidia-h100-sxm-80gb", "--gpus", "8",
                 "--workload", "inference", "--set", "inference.weight_format=fp8"]) == 2
    err = capsys.readouterr().err
    assert "the most frugal, TP8 PP1, needs 8" in err and "GiB per GPU, 71.3 GiB usable" in err
    # a full fine-tune of a 70B model on one 24 GB card: the number, and the advice that fits a fine-tune
    assert main(["estimate", "--model", "meta-llama/Llama-3.1-70B", "--gpu", "nvidia-rtx-4090-24gb",
                 "--workload", "finetune"]) == 2
    err = capsys.readouterr().err
    assert "no layout fits: no layout" not in err  # the prefix was doubled
    assert "the most frugal layout needs" in err and "24.0 GiB usable): add GPUs, or use LoRA or QLoRA" in err
    # pre-training advice does not suggest LoRA
    assert main(["estimate", "--model", "meta-llama/Llama-3.1-405B", "--gpu", "nvidia-h100-sxm-80gb", "--gpus", "8",
                 "--workload", "pretrain"]) == 2
    err = capsys.readouterr().err
    assert "LoRA" not in err and "add GPUs or shorten the sequence" in err


def test_fine_tune_says_the_longest_sequence_and_largest_micro_batch(capsys):
    # The engineer's question "what is the longest sequence / largest micro-batch that fits?" had an answer only
    # in the app (its "What fits on one GPU" group) and for this machine; the CLI prints it for any GPU now.
    args = ["estimate", "--model", "meta-llama/Llama-3.1-8B", "--gpu", "nvidia-rtx-4090-24gb", "--workload",
            "finetune", "--set", "training.method=qlora"]
    assert main([*args, "--json"]) == 0
    t = json.loads(capsys.readouterr().out)["training"]
    assert t["seq_len"] == 4096 and t["longest_seq_len_tokens"] > 4096 and t["largest_micro_batch"] >= 1
    held = [*args, "--set", "parallelism.tp=1", *(x for k in ("micro_batch", "zero_stage", "recompute", "offload")
                                                  for x in ("--set", f"training.{k}={t[k]}"))]  # as chosen
    assert main([*held, "--set", f"training.seq_len={t['longest_seq_len_tokens']}", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["fits"]  # the longest sequence does fit
    assert main([*held, "--set", f"training.seq_len={t['longest_seq_len_tokens'] + 64}", "--json"]) == 0
    assert not json.loads(capsys.readouterr().out)["fits"]  # and 64 tokens more does not
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "what fits on one GPU" in out and f"{t['longest_seq_len_tokens']:,} tokens at micro-batch 1" in out


def test_serving_options_count_the_gpus_they_price(capsys):
    # "1 × NVIDIA A100 SXM4 40GB (tp=2)" at $2.58/h read as one GPU at twice its price: it was one replica of
    # tensor parallel 2, two GPUs. Each option now leads with the GPUs it takes.
    assert main(["serve", "--model", "meta-llama/Llama-3.1-8B", "--rate", "10", "--ttft", "1", "--tpot", "0.05",
                 "--gpus", "nvidia-a100-sxm4-40gb", "--top", "5"]) == 0
    out = capsys.readouterr().out
    assert "2 × NVIDIA A100 SXM4 40GB (1 replica of TP 2)" in out and "(tp=" not in out


def test_a_short_gpu_name_gets_the_catalog_ids_it_means(capsys):
    # "--gpu h100" or "--gpu 4090" is what people type; the ids are long (nvidia-h100-sxm-80gb), so spelling
    # distance found nothing to suggest and the message only pointed to the whole catalog.
    assert main(["estimate", "--model", "meta-llama/Llama-3.1-8B", "--gpu", "4090"]) == 2
    assert "did you mean nvidia-rtx-4090-24gb?" in capsys.readouterr().err
    assert main(["estimate", "--model", "meta-llama/Llama-3.1-8B", "--gpu", "h100"]) == 2
    err = capsys.readouterr().err
    assert "nvidia-h100-sxm-80gb" in err and "nvidia-h100-pcie-80gb" in err and "nvidia-h200" not in err
    assert main(["estimate", "--model", "meta-llama/Llama-3.1-8B", "--gpu", "M3 Max"]) == 2
    assert "apple-m3-max-40c-64gb" in capsys.readouterr().err


def test_a_model_released_quantised_is_estimated_as_released(capsys):
    # gpt-oss-20b is released with MXFP4 experts (12.8 GiB, "runs within 16 GB"); the plan's default bf16 made it
    # a 39 GiB model that a 24 GB card could only offload. A model whose config.json carries a
    # quantization_config is now estimated in that format when the command names none and the engine loads it.
    base = ["estimate", "--model", "openai/gpt-oss-20b", "--gpu", "nvidia-rtx-4090-24gb", "--workload", "inference"]
    assert main(base) == 0
    out = capsys.readouterr().out
    assert "inference: vLLM, weights mxfp4, KV cache bf16, 1 sequence of 1,024 tokens in + 256 out" in out
    assert "weights as released: mxfp4" in out and "\nFITS: " in out
    assert main([*base, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["released_format"] == "mxfp4" and data["inference"]["weight_format"] == "mxfp4"
    assert main([*base, "--set", "inference.weight_format=awq-4bit", "--json"]) == 0  # a named format wins
    assert "released_format" not in json.loads(capsys.readouterr().out)
    assert main([*base, "--set", "inference.engine=llama.cpp", "--json"]) == 0  # llama.cpp loads GGUF only:
    data = json.loads(capsys.readouterr().out)  # the MXFP4 GGUF made from the release (ggml-org's, 11.27 GiB)
    assert data["released_format"] == "mxfp4_moe" and data["inference"]["weight_format"] == "mxfp4_moe"


def test_a_vllm_plan_is_never_offered_gguf_weights(capsys):
    # Llama-3.1-8B at 128K tokens on a 24 GB card under vLLM: "auto: weight format iq3_s" was the answer, a
    # llama.cpp type nobody serves with vLLM. The formats tried are the engine's own now, and the message names
    # the change that does fit: an 8-bit KV cache.
    args = ["estimate", "--model", "meta-llama/Llama-3.1-8B", "--gpu", "nvidia-rtx-4090-24gb", "--workload",
            "inference", "--set", "inference.prompt_tokens=130816", "--set", "inference.output_tokens=256"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "iq3_s" not in err and "an 8-bit KV cache (inference.kv_dtype=fp8)" in err
    assert main([*args, "--set", "inference.kv_dtype=fp8", "--json"]) == 0
    fmt = json.loads(capsys.readouterr().out)["inference"]["weight_format"]
    from llmplan.core.quant import parse_weight_format

    assert parse_weight_format(fmt).kind not in ("gguf", "mlx")


def test_llama_cpp_is_offered_gguf_weights_only():
    from llmplan.catalog.engines import engine_profile
    from llmplan.core.quant import parse_weight_format
    from llmplan.core.search.policy import formats_to_try

    assert {parse_weight_format(f).kind for f in formats_to_try((), engine_profile("llama.cpp"))} == {"gguf"}
    assert {parse_weight_format(f).kind for f in formats_to_try((), engine_profile("mlx"))} <= {"float", "mlx"}
    assert formats_to_try(("weight_format",), engine_profile("vllm")) == ()  # a stated format is kept


def test_a_macs_capacity_says_it_is_the_wired_share(capsys):
    # "capacity 48.00 GiB" on a 64 GB Mac, with no word why: the GPU may wire 3/4 of unified memory by default
    # (a 64 GB Mac's recommendedMaxWorkingSetSize; docs/fit.md), raised with sysctl iogpu.wired_limit_mb.
    assert main(["estimate", "--model", "meta-llama/Llama-3.1-70B", "--gpu", "apple-m3-max-40c-64gb", "--workload",
                 "inference", "--set", "inference.engine=llama.cpp", "--set", "inference.weight_format=q4_k_m"]) == 0
    out = capsys.readouterr().out
    assert ("unified memory: the GPU may use 48.00 GiB of the 64.00 GiB by default (raise it with sudo sysctl "
            "iogpu.wired_limit_mb)") in out
    assert main(["estimate", "--model", "meta-llama/Llama-3.1-8B", "--gpu", "nvidia-h100-sxm-80gb", "--workload",
                 "inference"]) == 0
    assert "unified memory" not in capsys.readouterr().out
