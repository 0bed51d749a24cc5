"""Leaderboards from stored judgments; never calls a model."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from arena.errors import InputError
from arena.io.formats import Judgment, latest_judgments, read_answers, read_judgments
from arena.soft_verdicts import soft_battles
from arena.stats.ratings import Leaderboard, average_tokens, battles_from_judgments, leaderboard  # noqa: F401


@dataclass(frozen=True)
class ShowOptions:
    baseline: str
    n_bootstrap: int = 100
    seed: int = 0
    ci: float = 0.95
    strong_weight: float = 3.0


def locate_answer_dir(judgment_dir: Path) -> Path | None:
    """arena-hard layout: ``<bench>/model_judgment/<judge>/`` next to ``<bench>/model_answer/``."""
    for parent in (judgment_dir.parent, judgment_dir.parent.parent):
        cand = parent / "model_answer"
        if cand.is_dir():
            return cand
    return None


def load_judgments(dirs: Sequence[Path]) -> list[Judgment]:
    """Judgments from every directory, one record per game key (the newest): the same
    directory given twice, or a record left twice by a killed run, never counts twice."""
    out: list[Judgment] = []
    for d in dirs:
        out.extend(read_judgments(d))
    return latest_judgments(out)


def compute_leaderboard(judgments: Sequence[Judgment], opts: ShowOptions, answer_dirs: Sequence[Path] = ()) -> Leaderboard:
    # Games that record a label distribution (soft verdicts, repeats) are scored by its expectation.
    battles = soft_battles(judgments, opts.baseline, strong_weight=opts.strong_weight)
    if battles.empty:
        raise InputError("the judgments hold no games")
    opponents = set(battles["opponent"])
    if opts.baseline not in opponents and opts.baseline not in set(battles["model"]):
        raise InputError(f"baseline '{opts.baseline}' appears in no judgment (opponents found: {', '.join(sorted(opponents))})", field="--baseline")
    tokens: dict[str, float] = {}
    for d in answer_dirs:
        tokens.update(average_tokens(read_answers(d, allow_empty=True)))
    lb = leaderboard(battles, opts.baseline, n_bootstrap=opts.n_bootstrap, ci=opts.ci, rng=np.random.default_rng(opts.seed), avg_tokens=tokens)
    add_verdict_health(lb, judgments)
    return lb


def add_verdict_health(lb: Leaderboard, judgments: Sequence[Judgment]) -> None:
    """Per-model shares of unparsed and re-asked games (%) and the outlier flag (rule in
    ``arena/verdicts.py``) as leaderboard columns."""
    from arena.verdicts import verdict_outliers, verdict_shares

    shares = verdict_shares(judgments)
    flagged = verdict_outliers(shares)
    models = lb.table["model"]
    lb.table["unparsed_pct"] = models.map(shares["unparsed_pct"]).astype(float)
    lb.table["reasked_pct"] = models.map(shares["reasked_pct"]).astype(float)
    lb.table["verdict_flag"] = models.isin(list(flagged))


def verdict_warnings(judgments: Sequence[Judgment]) -> list[str]:
    """One line per model whose unparsed/re-asked share is far above the others'."""
    from arena.verdicts import verdict_outliers, verdict_shares

    return list(verdict_outliers(verdict_shares(judgments)).values())


def attach_categories(judgments: Sequence[Judgment], questions_file: Path | None) -> list[Judgment]:
    """Fill each judgment's category from the question file where the record has none
    (arena-hard v0.1 judgment files carry no category)."""
    if questions_file is None:
        return list(judgments)
    from dataclasses import replace

    from arena.io.formats import read_questions

    cats = {q.question_id: q.category for q in read_questions(questions_file)}
    return [j if j.category else replace(j, category=cats.get(j.question_id)) for j in judgments]


def split_by_category(judgments: Sequence[Judgment]) -> dict[str, list[Judgment]]:
    out: dict[str, list[Judgment]] = {}
    for j in judgments:
        out.setdefault(j.category or "(none)", []).append(j)
    return dict(sorted(out.items()))


def write_leaderboard(lb: Leaderboard, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".json":
        payload = {
            "method": lb.method,
            "ci": lb.ci,
            "leaderboard": lb.table.replace({np.nan: None}).to_dict(orient="records"),
        }
        import json

        path.write_text(json.dumps(payload, indent=2))
    elif path.suffix == ".csv":
        table = lb.table
        if "tied_with" in table.columns:  # a list per model: one ';'-separated cell in CSV
            table = table.assign(tied_with=[";".join(t) if isinstance(t, list) else "" for t in table["tied_with"]])
        table.to_csv(path, index=False)
    else:
        raise InputError("output must end in .csv or .json", path=str(path))
