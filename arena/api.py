"""Python API for notebooks: every function reads stored files and returns a pandas DataFrame.

Nothing here calls a model. ``leaderboard`` goes through the same functions as ``arena show``
(:func:`arena.show.compute_leaderboard`), so the two agree to the last bit; the static report
(:mod:`arena.report`) is built from these frames too.

    >>> from arena import api
    >>> lb = api.leaderboard("runs/quickstart/model_judgment", baseline="smollm2-brief")
    >>> b = api.battles("runs/quickstart/model_judgment", baseline="smollm2-brief")
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence, Union

import numpy as np
import pandas as pd

PathLike = Union[str, Path]
Paths = Union[PathLike, Sequence[PathLike]]


def _paths(p: Paths | None) -> list[Path]:
    if p is None:
        return []
    if isinstance(p, (str, Path)):
        return [Path(p)]
    return [Path(x) for x in p]


# --------------------------------------------------------------------------- ranks
def with_rank_intervals(table: pd.DataFrame, replicates: pd.DataFrame, baseline: str, ci: float = 0.95) -> pd.DataFrame:
    """``rank, rank_lower, rank_upper, tied_with`` (see :mod:`arena.stats.ranks`) unless the
    table has them already; the style-controlled board gets them here."""
    from arena.stats.ratings import with_ranks

    if {"rank_lower", "rank_upper", "tied_with"} <= set(table.columns):
        return table
    return with_ranks(table, replicates, baseline, ci)


# --------------------------------------------------------------------------- leaderboard
def leaderboard(
    judgments_dir: Paths,
    baseline: str,
    *,
    n_bootstrap: int = 100,
    seed: int = 0,
    ci: float = 0.95,
    strong_weight: float = 3.0,
    answers_dir: Paths | None = None,
    questions: PathLike | None = None,
    category: str | None = None,
    judge: str | None = None,
) -> pd.DataFrame:
    """Win rate (%) against ``baseline`` with percentile bootstrap CIs over prompts, as
    ``arena show`` prints it (same seed, same numbers), plus rank intervals.

    Columns: model, score, lower, upper, n_battles, n_unparsed, avg_tokens, rank_lower,
    rank_upper, tied_with (the columns ``arena show`` already has are kept as they are).
    ``judge`` keeps one judge's games; ``category`` one category's (needs categories in the
    judgments or a ``questions`` file)."""
    from arena.errors import InputError
    from arena.show import ShowOptions, attach_categories, compute_leaderboard, load_judgments, locate_answer_dir

    dirs = _paths(judgments_dir)
    judgments = attach_categories(load_judgments(dirs), Path(questions) if questions else None)
    if judge is not None:
        judgments = [j for j in judgments if j.judge == judge]
    if category is not None:
        judgments = [j for j in judgments if j.category == category]
        if not judgments:
            raise InputError(f"no judgment has category '{category}'", field="category")
    answers = _paths(answers_dir) or [d for d in (locate_answer_dir(p) for p in dirs) if d is not None]
    lb = compute_leaderboard(judgments, ShowOptions(baseline, n_bootstrap, seed, ci, strong_weight), answers)
    table = with_rank_intervals(lb.table, lb.replicates, baseline, ci)
    table.attrs.update(method=lb.method, ci=ci, n_bootstrap=n_bootstrap, baseline=baseline)
    return table


# --------------------------------------------------------------------------- battles
_SIGN = {"A>>B": 2, "A>B": 1, "A=B": 0, "B>A": -1, "B>>A": -2}


def _model_view(label: str | None, game: int) -> int | None:
    """The verdict as a signed strength for the model (+ model better), swap undone."""
    if label is None:
        return None
    s = _SIGN[label]
    return -s if game == 1 else s  # game 1: model is B; game 2: model is A


def battles(
    judgments_dir: Paths,
    baseline: str,
    *,
    answers_dir: Paths | None = None,
    questions: PathLike | None = None,
    strong_weight: float = 3.0,
) -> pd.DataFrame:
    """One row per (judge, model, question): the prompt, both answers, both games' judgments.

    Columns: judge, model, baseline, question_id, category, prompt, model_answer,
    baseline_answer, g1_label, g1_status, g1_judgment, g1_reasked (and g2_*), score (the model's
    weighted mean score over parsed games, NaN when none parsed), verdict ('win', 'loss', 'tie',
    'unparsed'), swap_disagree (both games parsed and their winners differ once the swap is
    undone), judges_disagree (another judge gave this model and question another verdict).
    Missing texts are None."""
    from arena.io.formats import read_answers, read_questions
    from arena.show import load_judgments, locate_answer_dir

    dirs = _paths(judgments_dir)
    answers: dict[str, dict] = {}
    for d in _paths(answers_dir) or [d for d in (locate_answer_dir(p) for p in dirs) if d is not None]:
        answers.update(read_answers(d, allow_empty=True))
    qs = {q.question_id: q for q in read_questions(questions)} if questions else {}
    return battle_table(load_judgments(dirs), baseline, answers, qs, strong_weight=strong_weight)


def battle_table(judgments, baseline: str, answers: dict, questions: dict, *, strong_weight: float = 3.0) -> pd.DataFrame:
    """:func:`battles` over judgments, answers (``{model: {qid: Answer}}``) and questions
    (``{qid: Question}``) already read."""
    rows = []
    for j in judgments:
        base = j.baseline or baseline
        q = questions.get(j.question_id)
        ma = answers.get(j.model, {}).get(j.question_id)
        ba = answers.get(base, {}).get(j.question_id)
        row = {
            "judge": j.judge, "model": j.model, "baseline": base, "question_id": j.question_id,
            "category": j.category or (q.category if q else None),
            # Without a question file, the first game's prompt (AlpacaEval imports keep the instruction there).
            "prompt": q.prompt if q else (j.games[0].user_prompt if j.games else None),
            "model_answer": ma.text if ma else None, "baseline_answer": ba.text if ba else None,
        }
        sw = wsum = 0.0
        views = []
        for k in (1, 2):
            g = j.games[k - 1] if len(j.games) >= k else None
            row[f"g{k}_label"] = g.score if g else None
            row[f"g{k}_status"] = (g.status if g.score is None else "ok") if g else "missing"
            row[f"g{k}_judgment"] = g.judgment if g else None
            row[f"g{k}_reasked"] = bool(g.extra.get("reasked")) if g else False
            if g is not None and g.score is not None:
                v = _model_view(g.score, k)
                views.append(v)
                w = strong_weight if abs(v) == 2 else 1.0
                sw += w * (1.0 if v > 0 else 0.5 if v == 0 else 0.0)
                wsum += w
        row["score"] = sw / wsum if wsum else np.nan
        row["verdict"] = "unparsed" if not wsum else "win" if row["score"] > 0.5 else "loss" if row["score"] < 0.5 else "tie"
        row["swap_disagree"] = len(views) == 2 and bool(np.sign(views[0]) != np.sign(views[1]))
        rows.append(row)
    df = pd.DataFrame(rows)
    if df.empty:
        return df
    decided = df[df["verdict"] != "unparsed"]
    n_verdicts = decided.groupby(["model", "question_id"])["verdict"].nunique()
    df["judges_disagree"] = pd.MultiIndex.from_frame(df[["model", "question_id"]]).map(lambda k: n_verdicts.get(k, 0) > 1).astype(bool)
    return df


# --------------------------------------------------------------------------- judges
def judge_audit(judgments_dir: Paths, baseline: str, *, strong_weight: float = 3.0) -> pd.DataFrame:
    """One row per judge: verdict shares, unparsed rate, re-ask rate and position consistency
    (``arena.audit.judges`` over every category)."""
    from arena.audit.judges import position_consistency, verdict_distribution
    from arena.show import load_judgments
    from arena.stats.ratings import battles_from_judgments

    judgments = load_judgments(_paths(judgments_dir))
    b = battles_from_judgments(judgments, baseline, strong_weight=strong_weight)
    dist = verdict_distribution(b, by=("judge",))
    cons = position_consistency(b, by=("judge",))
    reask = pd.DataFrame(
        [(j.judge, sum(bool(g.extra.get("reasked")) for g in j.games), len(j.games)) for j in judgments],
        columns=["judge", "reasked", "games"],
    ).groupby("judge").sum()
    out = dist.merge(cons, on="judge", how="left")
    out["reask_rate"] = out["judge"].map(reask["reasked"] / reask["games"])
    return out


# --------------------------------------------------------------------------- curation
def curation_topics(run_dir: PathLike, n_examples: int = 3) -> pd.DataFrame:
    """The curation run's topic table: cluster, label, size, annotated, mean_score, examples
    (scores from the last annotation stage; none when the run was not annotated)."""
    import json

    from benchbuilder.annotate import load_annotations
    from benchbuilder.cluster import load_assignments
    from benchbuilder.report import cluster_table

    run = Path(run_dir)
    clusters, labels = load_assignments(run / "clusters.jsonl")
    prompts = _curation_prompts(run)
    scores = {sid: a.score for sid, a in _last_annotations(run, load_annotations).items() if getattr(a, "score", None) is not None}
    meta = json.loads((run / "topics.json").read_text(encoding="utf-8"))
    examples = {int(k): v for k, v in meta.get("examples", {}).items()} or None
    return cluster_table(clusters, labels, prompts, scores, n_examples=n_examples, examples=examples)


def curation_categories(run_dir: PathLike) -> pd.DataFrame:
    """The curation run's broad categories: category, prompts, topics, keywords and the labels of
    its topics (empty when the run has no topic hierarchy)."""
    import json

    from benchbuilder.report import hierarchy_table

    # topics.json holds the topic labels too (load_assignments reads them there): no need to
    # read clusters.jsonl, one line per prompt
    path = Path(run_dir) / "topics.json"
    meta = json.loads(path.read_text(encoding="utf-8"))
    return hierarchy_table(meta.get("hierarchy") or {}, {int(k): v for k, v in meta.get("labels", {}).items()}, path=str(path))


def curation_contamination(run_dir: PathLike) -> pd.DataFrame:
    """The contamination gate's flags, most similar first: similarity, prompt, nearest benchmark
    prompt and its ``file:id`` (empty when the gate flagged nothing or did not run)."""
    from benchbuilder.report import read_contamination_table

    return read_contamination_table(Path(run_dir) / "contamination.jsonl")


def _curation_prompts(run: Path) -> dict[str, str]:
    from arena.io.jsonl import read_jsonl

    path = run / "prompts.jsonl"
    if not path.exists():
        return {}
    return {str(r["source_id"]): str(r.get("prompt") or r.get("text") or "") for _, r in read_jsonl(path)}


def _last_annotations(run: Path, load) -> dict:
    d = run / "annotations"
    if not d.is_dir():
        return {}
    out: dict = {}
    for p in sorted(d.glob("*.jsonl"), key=lambda p: p.stat().st_mtime):
        out.update({k: v for k, v in load(p).items() if getattr(v, "status", "ok") == "ok"})
    return out


# --------------------------------------------------------------------------- index
def index_results(output_dir: PathLike, *, seed: int = 0, rounds: int = 1000) -> pd.DataFrame:
    """Per-eval accuracy with CIs for every model in an index output folder
    (``<output>/<model>/<eval>.jsonl``); columns as ``arena index show`` plus ``model``."""
    from arena.index.report import summarize

    out = Path(output_dir)
    frames = []
    for d in sorted(p for p in out.iterdir() if p.is_dir()) if out.is_dir() else []:
        recs = read_index_records(out, d.name)
        if recs:
            table, _ = summarize(recs, rng=np.random.default_rng(seed), rounds=rounds)
            frames.append(table.assign(model=d.name))
    if not frames:
        return pd.DataFrame(columns=["model", "eval", "score", "low", "high", "items"])
    df = pd.concat(frames, ignore_index=True)
    return df[["model", *[c for c in df.columns if c != "model"]]]


def index_summary(output_dir: PathLike, model: str, *, seed: int = 0, rounds: int = 1000) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(per-eval table, indices table) for one model, as ``arena index show`` computes them."""
    from arena.index.report import summarize

    return summarize(read_index_records(Path(output_dir), model), rng=np.random.default_rng(seed), rounds=rounds)


def read_index_records(output_dir: PathLike, model: str) -> dict[str, list[dict]]:
    """``{eval: [record]}`` from ``<output>/<model>/<eval>.jsonl``; for a repeated (item, repeat)
    the last record wins (a resumed or retried item is appended after the one it replaces), and
    a torn last line left by a kill is skipped, as the index runner reads them."""
    from arena.io.jsonl import read_jsonl

    base = Path(output_dir) / model
    out: dict[str, list[dict]] = {}
    for path in sorted(base.glob("*.jsonl")) if base.is_dir() else []:
        last: dict[tuple, dict] = {}
        for _, rec in read_jsonl(path, torn_tail="skip"):
            last[(rec.get("item_id"), rec.get("repeat"))] = rec
        if last:
            out[path.stem] = list(last.values())
    return out
