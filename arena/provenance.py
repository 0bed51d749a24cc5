"""Provenance: what each record was made from, and the run log written beside every run's outputs.

An answer records its endpoint (model, base_url, effective params; never a key) and the
template version of its system prompt. A judgment records what it judged: both answers'
ids and content hashes, the question's hash, the judge endpoint, and the template versions.
Resuming compares a stored judgment's provenance with what judging it now would use; any
difference makes it *stale* and it is judged again.

Records without provenance (written before it existed, or imported from arena-hard-auto) are
of *unknown* provenance. They are kept as they are: re-judging them would silently spend money
on public results a user imported on purpose. Delete the file (or the records) to re-judge.
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Any, Mapping, Sequence
from urllib.parse import urlsplit, urlunsplit

PROVENANCE_VERSION = 1
LOOPBACK_HOSTS = {"127.0.0.1", "localhost", "::1", "[::1]"}


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)


def endpoint_record(endpoint: Any, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """An endpoint as recorded in files: name, model, base_url and the effective params.

    Keys never appear: only ``api_key_env``'s *name* lives on the endpoint, and we leave even
    that out, since nothing downstream needs it."""
    return {
        "name": endpoint.name,
        "model": endpoint.model,
        "base_url": endpoint.base_url,
        "params": {**endpoint.params, **(params or {})},
    }


def _identity_url(url: str | None) -> str | None:
    """A base_url for comparison: a loopback server's port is chosen per run (the embedded
    model listens on a free port), so it does not identify the model behind it."""
    if not url:
        return url
    parts = urlsplit(url)
    if parts.hostname in LOOPBACK_HOSTS:
        return urlunsplit((parts.scheme, parts.hostname or "", parts.path.rstrip("/"), "", ""))
    return url.rstrip("/")


def endpoint_identity(rec: Mapping[str, Any] | None) -> str:
    if not rec:
        return ""
    return canonical_json({"model": rec.get("model"), "base_url": _identity_url(rec.get("base_url")), "params": rec.get("params") or {}})


def answer_ref(answer: Any) -> dict[str, Any]:
    """How a judgment names one answer it judged: its id and the hash of the judged text."""
    return {"answer_id": answer.answer_id, "sha256": content_hash(answer.text)}


def judgment_provenance(*, question: Any, model_answer: Any, baseline_answer: Any, judge_endpoint: Mapping[str, Any],
                        template_version: str, reask_version: str | None) -> dict[str, Any]:
    return {
        "version": PROVENANCE_VERSION,
        "question_sha256": content_hash(question.prompt),
        "answers": {"model": answer_ref(model_answer), "baseline": answer_ref(baseline_answer)},
        "judge": dict(judge_endpoint),
        "template_version": template_version,
        "reask_version": reask_version,
    }


def stale_reasons(stored: Mapping[str, Any] | None, current: Mapping[str, Any]) -> list[str]:
    """Why a stored judgment no longer matches what judging it now would use (empty: fresh).

    ``stored=None`` (unknown provenance) is never stale; see the module docstring."""
    if stored is None:
        return []
    reasons = []
    s_ans, c_ans = stored.get("answers") or {}, current["answers"]
    if any((s_ans.get(side) or {}).get("sha256") != c_ans[side]["sha256"] for side in ("model", "baseline")):
        reasons.append("answers changed")
    if stored.get("question_sha256") != current["question_sha256"]:
        reasons.append("question changed")
    if endpoint_identity(stored.get("judge")) != endpoint_identity(current["judge"]):
        reasons.append("judge changed")
    if stored.get("template_version") != current["template_version"] or stored.get("reask_version") != current["reask_version"]:
        reasons.append("template changed")
    return reasons


def config_hash(path: str | Path) -> str | None:
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]
    except OSError:
        return None


def package_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("benchbuilder")
    except PackageNotFoundError:
        import arena

        return getattr(arena, "__version__", "unknown")


def run_log_record(*, command: str, config_path: str | Path | None, endpoints: Mapping[str, Any], used: Sequence[str],
                   templates: Mapping[str, str], seeds: Mapping[str, Any], usage: Sequence[Mapping[str, Any]],
                   cost: float, started: float, finished: float, status: str, stages: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """One line of ``run_log.jsonl``: enough to tell two runs' outputs apart and to price them."""
    return {
        "command": command,
        "status": status,
        "started": started,
        "finished": finished,
        "seconds": round(finished - started, 3),
        "config": str(config_path) if config_path is not None else None,
        "config_sha256": config_hash(config_path) if config_path is not None else None,
        "package_version": package_version(),
        "templates": dict(templates),
        "seeds": dict(seeds),
        "endpoints": {n: endpoint_record(endpoints[n]) for n in dict.fromkeys(used) if n in endpoints},
        "usage": [dict(u) for u in usage],
        "cost": cost,
        "stages": dict(stages or {}),
    }


def now() -> float:
    return time.time()


def _template_versions(cfg: Any) -> dict[str, str]:
    from arena.prompts import load_template

    names: dict[str, str] = {}
    if cfg.answers is not None and cfg.answers.system_prompt:
        names["answers.system_prompt"] = cfg.answers.system_prompt
    if cfg.judge is not None:
        names.update({"judge.system_prompt": cfg.judge.system_prompt, "judge.template": cfg.judge.template, "judge.reask_prompt": cfg.judge.reask_prompt})
    out = {}
    for key, name in names.items():
        try:
            t = load_template(name)
            out[key] = f"{t.name}@{t.version}"
        except (OSError, ValueError):
            out[key] = f"{name}@missing"
    return out


def write_run_log(cfg: Any, client: Any, *, command: str, stages: Sequence[str], started: float, status: str) -> Path:
    """Append one line to ``<output_dir>/run_log.jsonl`` describing this run (never a key)."""
    from arena.io.jsonl import append_jsonl

    used = [*(cfg.answers.models if cfg.answers and "answers" in stages else []), *([cfg.judge.endpoint] if cfg.judge and "judge" in stages else [])]
    usage = client.ledger.to_frame().to_dict("records") if client is not None else []
    rec = run_log_record(
        command=command,
        config_path=cfg.source if cfg.source != "<config>" else None,
        endpoints=client.endpoints if client is not None else {},
        used=used,
        templates=_template_versions(cfg),
        seeds={"show.seed": cfg.show.seed},
        usage=[{k: (v.item() if hasattr(v, "item") else v) for k, v in u.items()} for u in usage],
        cost=float(client.ledger.cost) if client is not None else 0.0,
        started=started,
        finished=now(),
        status=status,
        stages={"run": list(stages)},
    )
    if client is not None:  # belt and braces: no key value may reach a file
        rec = json.loads(client.scrub(json.dumps(rec, default=str)))
    path = Path(cfg.output_dir) / "run_log.jsonl"
    append_jsonl(path, rec)
    return path
