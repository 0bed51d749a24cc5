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

import re
from pathlib import Path
from typing import Any, Iterator, Mapping

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from arena.io.configfile import read_yaml, validation_error
from arena.errors import InputError


# Keys come only from the environment variable named by ``api_key_env``. Anything in params or
# headers that is named like a credential, or whose value looks like one, is refused, so a key
# can never ride along into request logs, caches or provenance.
_CREDENTIAL_NAME = re.compile(
    r"^(authorization|proxy_authorization|cookie|api_key|apikey|x_api_key|x_goog_api_key|token|access_token|"
    r"auth_token|bearer|secret|client_secret|password|passwd|default_headers|.*_api_key|.*_secret)$"
)
_SECRET_VALUE = re.compile(
    r"^\s*(?:(?:bearer|basic|token)\s+\S{8,}"
    r"|(?:sk|pk|rk)[-_][A-Za-z0-9_-]{8,}"
    r"|(?:hf|gsk|ghp|gho|ghs|xai|pplx|nvapi|r8|github_pat)[-_][A-Za-z0-9_-]{12,}"
    r"|AIza[A-Za-z0-9_-]{20,}|AKIA[A-Z0-9]{12,}|eyJ[A-Za-z0-9_-]{20,}\.[A-Za-z0-9_.-]+)\s*$",
    re.I,
)
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def looks_like_secret(value: object) -> bool:
    """A string shaped like an API key or bearer token (known prefixes, JWTs)."""
    return isinstance(value, str) and bool(_SECRET_VALUE.match(value))


def _walk(value: Any, path: str) -> Iterator[tuple[str, str | None, Any]]:
    if isinstance(value, Mapping):
        for k, v in value.items():
            yield f"{path}.{k}" if path else str(k), str(k), v
            yield from _walk(v, f"{path}.{k}" if path else str(k))
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            yield f"{path}.{i}", None, v
            yield from _walk(v, f"{path}.{i}")


def find_credential(params: Mapping[str, Any]) -> tuple[str, str] | None:
    """``(dotted field, reason)`` for the first credential in ``params`` (headers included)."""
    for path, name, value in _walk(params, ""):
        if name is not None and _CREDENTIAL_NAME.match(name.lower().replace("-", "_")):
            return path, "credentials are not accepted here; put the key in an environment variable and name it in api_key_env"
        if looks_like_secret(value):
            return path, "looks like an API key or bearer token (value not shown); put keys in an environment variable and name it in api_key_env"
    return None


def base_url_problem(url: str) -> str | None:
    """A credential inside the URL (``user:pass@``, ``?api_key=``, a key-shaped path segment)."""
    from urllib.parse import parse_qsl, urlsplit

    parts = urlsplit(url)
    if parts.password or (parts.username and looks_like_secret(parts.username)):
        return "credentials in the URL are not accepted (value not shown); name the key's variable in api_key_env"
    query = dict(parse_qsl(parts.query, keep_blank_values=True))
    if find_credential(query) or any(looks_like_secret(seg) for seg in parts.path.split("/")):
        return "credentials in the URL are not accepted (value not shown); name the key's variable in api_key_env"
    return None


def api_key_env_problem(name: str) -> str | None:
    """Why ``name`` is not a usable variable name, never quoting it (it may be the key itself)."""
    if looks_like_secret(name) or not _ENV_NAME.match(name):
        hint = "looks like a key; " if looks_like_secret(name) or len(name) >= 16 else ""
        return f"expected an environment variable NAME ({hint}value not shown)"
    return None


class Price(BaseModel):
    """USD per million tokens."""

    model_config = ConfigDict(extra="forbid")
    input: float = 0.0
    output: float = 0.0


class Endpoint(BaseModel):
    """One OpenAI-compatible model endpoint (OpenAI, vLLM, Ollama, llama.cpp, LiteLLM, ...)."""

    # hide_input_in_errors: a rejected field may hold a key; its value must not reach a traceback.
    model_config = ConfigDict(extra="forbid", frozen=True, hide_input_in_errors=True)

    name: str
    model: str
    base_url: str | None = None
    # A stable name for the server in cache keys, for a server whose address changes between
    # runs (the embedded model listens on a free port each time); otherwise base_url is used.
    cache_id: str | None = None
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
        found = find_credential(v)
        if found:
            raise ValueError(f"'{found[0]}': {found[1]}")
        return v

    @field_validator("base_url")
    @classmethod
    def _no_key_in_url(cls, v: str | None) -> str | None:
        problem = base_url_problem(v) if v else None
        if problem:
            raise ValueError(problem)
        return v

    @field_validator("api_key_env")
    @classmethod
    def _a_name_not_a_key(cls, v: str | None) -> str | None:
        problem = api_key_env_problem(v) if v is not None else None
        if problem:
            raise ValueError(problem)
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
        # Checked before pydantic so errors name the exact field and never echo a value.
        for field in ("api_key", "default_headers", "headers", "extra_headers"):
            if field in spec:
                raise InputError(
                    "literal API keys and headers are not accepted here; set api_key_env to the name of an environment variable",
                    path=source,
                    field=f"endpoints.{name}.{field}",
                )
        url = spec.get("base_url")
        if isinstance(url, str) and base_url_problem(url):
            raise InputError(base_url_problem(url), path=source, field=f"endpoints.{name}.base_url")
        key_env = spec.get("api_key_env")
        if isinstance(key_env, str) and api_key_env_problem(key_env):
            raise InputError(api_key_env_problem(key_env), path=source, field=f"endpoints.{name}.api_key_env")
        params = spec.get("params")
        found = find_credential(params) if isinstance(params, Mapping) else None
        if found:
            raise InputError(found[1], path=source, field=f"endpoints.{name}.params.{found[0]}")
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
