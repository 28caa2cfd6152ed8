"""llmplan.formats: bounded readers of untrusted input (files, and the Hugging Face Hub)."""
