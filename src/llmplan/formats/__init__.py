"""llmplan.formats: readers of files that come from outside (untrusted input).

A model's ``config.json`` (``hf_config``), a GGUF header (``gguf_header``) and a safetensors
index (``safetensors_index``) become frozen core specs, with size limits and one-line errors.
Below the catalog: formats know nothing of catalogs, plans, hardware or front ends.
"""
