"""Endpoint declarations: which model, where, with which key *name*, limits and prices.

Endpoints live in YAML, either as a file of their own or inline under ``endpoints:`` in a
run config::

    endpoints:
      gpt-4o:
        model: gpt-4o-2024-08-06
        base_url: https://api.openai.com/v1
        api_key_env: OPENAI_API_KEY      # the variable's name, never the key itself
        params: {temperature: 0, max_tokens: 4096}
        max_concurrency: 32
        rpm: 500
        price: {input: 2.5, output: 10.0}  # USD per million tokens
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from arena.io.configfile import read_yaml, validation_error
from arena.errors import InputError


class Price(BaseModel):
    """USD per million tokens."""

    model_config = ConfigDict(extra="forbid")
    input: float = 0.0
    output: float = 0.0


class Endpoint(BaseModel):
    """One OpenAI-compatible model endpoint (OpenAI, vLLM, Ollama, llama.cpp, LiteLLM, ...)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    model: str
    base_url: str | None = None
    api_key_env: str | None = Field(
        default=None, description="Name of the environment variable holding the API key."
    )
    params: dict[str, Any] = Field(default_factory=dict, description="Per-call sampling params.")
    max_concurrency: int = Field(default=8, ge=1)
    rpm: float | None = Field(default=None, gt=0, description="Requests per minute, if limited.")
    price: Price = Field(default_factory=Price)
    timeout: float = Field(default=600.0, gt=0, description="Seconds before one attempt times out.")
    max_retries: int = Field(default=30, ge=0, description="Retries after the first attempt.")
    expected_output_tokens: int | None = Field(
        default=None, ge=0, description="Output tokens assumed by --dry-run cost estimates."
    )
    reasoning: bool = Field(default=False, description="A reasoning model (index-suite prompts differ).")

    @field_validator("params")
    @classmethod
    def _no_keys_in_params(cls, v: dict[str, Any]) -> dict[str, Any]:
        for k in v:
            if "key" in k.lower() and k.lower() not in {"top_k"}:
                raise ValueError(f"'{k}' looks like a credential; put keys in an environment variable and name it in api_key_env")
        return v

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        return (prompt_tokens * self.price.input + completion_tokens * self.price.output) / 1e6


def parse_endpoints(raw: Mapping[str, Any], *, source: str = "<config>") -> dict[str, Endpoint]:
    """Validate a ``{name: {...}}`` mapping into endpoints; errors name the source and field."""
    if not isinstance(raw, Mapping):
        raise InputError("expected a mapping of endpoint name to settings", path=source, field="endpoints")
    out: dict[str, Endpoint] = {}
    for name, spec in raw.items():
        if not isinstance(spec, Mapping):
            raise InputError("expected a mapping of settings", path=source, field=f"endpoints.{name}")
        if "api_key" in spec:
            raise InputError(
                "literal API keys are not accepted; set api_key_env to the name of an environment variable",
                path=source,
                field=f"endpoints.{name}.api_key",
            )
        try:
            out[str(name)] = Endpoint(name=str(name), **dict(spec))
        except ValidationError as exc:
            raise validation_error(exc, source, prefix=f"endpoints.{name}.") from None
    return out


def load_endpoints(path: str | Path) -> dict[str, Endpoint]:
    """Read endpoints from a YAML file: either ``endpoints: {...}`` or the mapping itself."""
    data = read_yaml(path, require_mapping=False)
    if isinstance(data, Mapping) and "endpoints" in data:
        data = data["endpoints"]
    return parse_endpoints(data or {}, source=str(path))
