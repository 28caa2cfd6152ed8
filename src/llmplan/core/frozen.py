"""Base class for the engine's specs: frozen, strict about unknown fields, hashable.

Hashable specs let the engine cache derived quantities (parameter counts) per spec.
"""

from pydantic import BaseModel, ConfigDict


class FrozenModel(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", validate_default=True)
