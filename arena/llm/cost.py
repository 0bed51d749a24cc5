"""Token usage and cost, summed per stage and endpoint, and dry-run estimates."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field, fields

import pandas as pd


@dataclass
class UsageTotals:
    calls: int = 0          # requests sent to the API (attempts excluded)
    cache_hits: int = 0     # answered from the cache, free
    failures: int = 0       # ended as failures (after retries)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    reasoning_tokens: int = 0
    cost: float = 0.0       # USD paid in this run
    cost_saved: float = 0.0  # USD the cache saved in this run


@dataclass
class UsageLedger:
    """Accumulates usage per ``(stage, endpoint)``; render with :meth:`to_frame`."""

    totals: dict[tuple[str, str], UsageTotals] = field(default_factory=lambda: defaultdict(UsageTotals))

    def record(
        self,
        stage: str,
        endpoint: str,
        *,
        cached: bool,
        ok: bool,
        prompt_tokens: int = 0,
        completion_tokens: int = 0,
        reasoning_tokens: int = 0,
        cost: float = 0.0,
    ) -> None:
        t = self.totals[(stage, endpoint)]
        if cached:
            t.cache_hits += 1
            t.cost_saved += cost
            return
        t.calls += 1
        t.failures += 0 if ok else 1
        t.prompt_tokens += prompt_tokens
        t.completion_tokens += completion_tokens
        t.reasoning_tokens += reasoning_tokens
        t.cost += cost

    def to_frame(self) -> pd.DataFrame:
        cols = [f.name for f in fields(UsageTotals)]
        rows = [{"stage": s, "endpoint": e, **{c: getattr(t, c) for c in cols}} for (s, e), t in sorted(self.totals.items())]
        return pd.DataFrame(rows, columns=["stage", "endpoint", *cols])

    @property
    def calls(self) -> int:
        return sum(t.calls for t in self.totals.values())

    @property
    def cost(self) -> float:
        return sum(t.cost for t in self.totals.values())


@dataclass
class DryRunEstimate:
    """What a run would cost before anything is paid for."""

    rows: dict[tuple[str, str], dict[str, float]] = field(default_factory=dict)

    def add(self, stage: str, endpoint: str, *, call: bool, prompt_tokens: int, completion_tokens: int, cost: float) -> None:
        r = self.rows.setdefault(
            (stage, endpoint), {"requests": 0, "cached": 0, "calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "cost": 0.0}
        )
        r["requests"] += 1
        if not call:
            r["cached"] += 1
            return
        r["calls"] += 1
        r["prompt_tokens"] += prompt_tokens
        r["completion_tokens"] += completion_tokens
        r["cost"] += cost

    def merge(self, other: "DryRunEstimate") -> None:
        for (stage, ep), r in other.rows.items():
            mine = self.rows.setdefault((stage, ep), {k: 0 for k in r})
            for k, v in r.items():
                mine[k] += v

    def to_frame(self) -> pd.DataFrame:
        rows = [{"stage": s, "endpoint": e, **r} for (s, e), r in sorted(self.rows.items())]
        return pd.DataFrame(rows, columns=["stage", "endpoint", "requests", "cached", "calls", "prompt_tokens", "completion_tokens", "cost"])

    @property
    def calls(self) -> int:
        return int(sum(r["calls"] for r in self.rows.values()))

    @property
    def cost(self) -> float:
        return float(sum(r["cost"] for r in self.rows.values()))


def estimate_tokens(text: str) -> int:
    """Rough token count (4 characters a token): tokenizer files cannot be fetched offline,
    and an estimate is all a dry run promises."""
    return max(1, (len(text) + 3) // 4)
