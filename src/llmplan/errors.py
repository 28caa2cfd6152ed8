"""The exception tree, in one place.

Every error a user can cause (a bad file, an impossible layout, an unknown id) is an
``LlmplanError`` whose message says what is wrong and how to fix it. Front ends show
``str(error)`` as it is: one line in the CLI, a dialog in the GUI, never a traceback.

    LlmplanError
    ├── InputError            bad user input in general
    │   ├── ConfigError       a model config.json / GGUF / safetensors header we cannot use
    │   ├── PlanFileError     a .llmplan document that is corrupt, too new, or invalid
    │   ├── CatalogError      an unknown id, or an invalid catalog entry
    │   ├── HubError          a Hugging Face Hub reference that cannot be fetched (names the cause and the fix)
    │   └── LayoutError       a parallel layout that breaks a rule (names the rule)
    └── DetectionError        a hardware probe failed (always caught inside llmplan.hw)
"""


class LlmplanError(Exception):
    """Base of every error llmplan raises on purpose."""


class InputError(LlmplanError, ValueError):
    """The user's input cannot be used; the message says why and what to do."""


class ConfigError(InputError):
    """A model description (config.json, GGUF header, safetensors index) is unusable."""


class PlanFileError(InputError):
    """A plan file is corrupt, of a newer schema version, or invalid."""


class CatalogError(InputError):
    """An id is not in the catalog, or a catalog file is invalid."""


class HubError(InputError):
    """A model on the Hugging Face Hub cannot be read: unknown, gated, rate-limited, unreachable, malformed."""


class LayoutError(InputError):
    """A parallelism layout breaks a rule; the message names the rule and the fix."""


class DetectionError(LlmplanError):
    """A local hardware probe failed. ``llmplan.hw`` turns these into reasons, never raises them out."""
