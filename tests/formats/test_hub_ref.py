"""Hub references as people paste them, and the GGUF file grouping: pure functions, no network."""

import pytest

from llmplan.formats.hub_files import gguf_choices, pick_gguf, quant_of
from llmplan.formats.hub_ref import HubRef, HubRefError, looks_like_hub_ref, parse_hub_ref


@pytest.mark.parametrize(("text", "expected"), [
    ("Qwen/Qwen3-8B", HubRef("Qwen/Qwen3-8B")),
    ("  Qwen/Qwen3-8B  ", HubRef("Qwen/Qwen3-8B")),
    ("Qwen/Qwen3-8B@main", HubRef("Qwen/Qwen3-8B", "main")),
    ("Qwen/Qwen3-8B@refs/pr/3", HubRef("Qwen/Qwen3-8B", "refs/pr/3")),
    ("unsloth/Qwen3-8B-GGUF:Q4_K_M", HubRef("unsloth/Qwen3-8B-GGUF", None, "Q4_K_M")),
    ("hf:meta-llama/Meta-Llama-3-8B", HubRef("meta-llama/Meta-Llama-3-8B")),
    ("https://huggingface.co/Qwen/Qwen3-8B", HubRef("Qwen/Qwen3-8B")),
    ("https://huggingface.co/Qwen/Qwen3-8B/", HubRef("Qwen/Qwen3-8B")),
    ("https://huggingface.co/Qwen/Qwen3-8B/tree/v1.0", HubRef("Qwen/Qwen3-8B", "v1.0")),
    ("https://huggingface.co/Qwen/Qwen3-8B/tree/refs%2Fpr%2F3", HubRef("Qwen/Qwen3-8B", "refs/pr/3")),
    ("https://hf.co/unsloth/Qwen3-8B-GGUF/blob/main/Qwen3-8B-Q4_K_M.gguf",
     HubRef("unsloth/Qwen3-8B-GGUF", "main", "Qwen3-8B-Q4_K_M.gguf")),
    ("https://huggingface.co/unsloth/X-GGUF/resolve/abc123/Q8_0/X-Q8_0-00001-of-00002.gguf?download=true",
     HubRef("unsloth/X-GGUF", "abc123", "Q8_0/X-Q8_0-00001-of-00002.gguf")),
])
def test_references_people_paste(text, expected):
    assert parse_hub_ref(text) == expected
    assert looks_like_hub_ref(text)


@pytest.mark.parametrize("text", ["llama", "a/b/c", "./config.json", "/tmp/x", "meta--llama/x", "a/..b", "",
                                  "two words/here", "C:/models"])
def test_things_that_are_not_references(text):
    assert parse_hub_ref(text) is None
    assert not looks_like_hub_ref(text)


@pytest.mark.parametrize(("text", "why"), [
    ("https://huggingface.co/Qwen", "not a model page"),
    ("https://huggingface.co/Qwen/Qwen3-8B/blob/main/../../etc/passwd", "not a file inside"),
    ("https://huggingface.co/Qwen/Qwen3-8B/edit", "expected /tree/REVISION"),
    ("Qwen/Qwen3-8B@..", "not a revision"),
    ("hf:not a repo", "not a Hub repository id"),
])
def test_malformed_references_say_why(text, why):
    with pytest.raises(HubRefError, match=why):
        parse_hub_ref(text)


def test_quant_names_in_file_names():
    assert quant_of("Qwen3-8B-Q4_K_M.gguf") == "Q4_K_M"
    assert quant_of("qwen2.5-7b-instruct-q5_k_m-00001-of-00002.gguf") == "Q5_K_M"
    assert quant_of("Qwen3-235B-A22B-UD-Q4_K_XL-00001-of-00003.gguf") == "UD-Q4_K_XL"
    assert quant_of("BF16/Qwen3-235B-A22B-BF16-00001-of-00010.gguf") == "BF16"
    assert quant_of("Q8_0/model-00001-of-00002.gguf") == "Q8_0"  # only the folder names it
    assert quant_of("model.gguf") is None


def test_split_files_are_summed_per_quant_and_projectors_kept_apart():
    files = {
        "README.md": 5_000,
        "Qwen3-8B-Q4_K_M.gguf": 5_027_783_488,
        "Q8_0/Qwen3-8B-Q8_0-00002-of-00002.gguf": 3_000_000_000,
        "Q8_0/Qwen3-8B-Q8_0-00001-of-00002.gguf": 5_000_000_000,
        "mmproj-F16.gguf": 600_000_000,
        "Qwen3-8B-IQ4_XS.gguf": 4_593_524_928,
    }
    choices = gguf_choices(files)
    assert [c.label for c in choices] == ["IQ4_XS", "Q4_K_M", "Q8_0", "F16"]
    q8 = pick_gguf(choices, "q8_0")
    assert q8.size == 8_000_000_000 and q8.complete
    assert q8.files == ("Q8_0/Qwen3-8B-Q8_0-00001-of-00002.gguf", "Q8_0/Qwen3-8B-Q8_0-00002-of-00002.gguf")
    assert choices[-1].projector
    assert pick_gguf(choices, "Qwen3-8B-Q4_K_M.gguf").size == 5_027_783_488
    assert pick_gguf(choices, "Q2_K") is None


def test_a_missing_split_part_is_noticed():
    choices = gguf_choices({"m-Q4_K_M-00001-of-00003.gguf": 10, "m-Q4_K_M-00003-of-00003.gguf": 7})
    assert choices[0].size == 17 and choices[0].parts_expected == 3 and not choices[0].complete
