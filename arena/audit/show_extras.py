"""`arena show` extras: judge ensembles, style control and a scores JSONL with bootstrap replicates.

Kept apart from :mod:`arena.show` so the plain leaderboard path stays as it is; ``arena show``
calls :func:`show_extras` only when one of ``--ensemble``, ``--min-judges``, ``--style-control``
or ``--scores-jsonl`` is given.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from arena.errors import InputError


@dataclass
class ExtrasResult:
    table: pd.DataFrame  # model, score, lower, upper (+ avg_tokens etc. when known)
    replicates: pd.DataFrame  # bootstrap scores, one column per model
    title: str
    coefficients: pd.DataFrame | None = None
    leave_one_out: pd.DataFrame | None = None
    notes: list[str] = field(default_factory=list)


def _style_meta(answer_dirs: Sequence[Path], battles: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame, np.ndarray]:
    """Per battle, the style metadata of the model's and the opponent's answers, and a mask of
    battles whose two answers were both found."""
    from arena.io.formats import jsonl_files, model_name_from_file, read_answer_file
    from arena.stats.markdown_stats import answer_metadata, emoji_count

    needed = set(battles["model"]) | set(battles["opponent"])
    meta: dict[tuple[str, str], dict] = {}
    for d in answer_dirs:
        for p in jsonl_files(d):
            model = model_name_from_file(p)
            if model not in needed:
                continue
            for qid, a in read_answer_file(p).items():
                m = dict(a.metadata or {})
                if not all(k in m for k in ("token_len", "header_count", "list_count", "bold_count")):
                    m = answer_metadata(a.text, a.token_len if a.token_len is not None else m.get("token_len"))
                if "emoji_count" not in m:  # conv_metadata written before emoji were counted
                    m["emoji_count"] = emoji_count(a.text)
                meta[(model, qid)] = m
    keys = ("token_len", "header_count", "list_count", "bold_count", "emoji_count")
    empty = {k: None for k in keys}
    mm = [meta.get((m, q)) for m, q in zip(battles["model"], battles["question_id"])]
    om = [meta.get((o, q)) for o, q in zip(battles["opponent"], battles["question_id"])]
    found = np.array([a is not None and b is not None for a, b in zip(mm, om)])
    model_meta = pd.DataFrame([{k: (x or empty).get(k) for k in keys} for x in mm])
    opp_meta = pd.DataFrame([{k: (x or empty).get(k) for k in keys} for x in om])
    return model_meta, opp_meta, found


def _length_controlled(battles: pd.DataFrame, answer_dirs: Sequence[Path], baseline: str, *, bootstrap: int, ci: float,
                       seed: int) -> tuple[pd.DataFrame, str]:
    """AlpacaEval's length-controlled win rate (arena/stats/length_control.py) from the games
    against the baseline: per prompt, the model's weighted score over its games, and the answer
    length difference in tokens (conv_metadata's token_len, or the text's estimate)."""
    from arena.stats.length_control import length_controlled_win_rates

    usable = battles[(battles["weight"] > 0) & (battles["opponent"] == baseline) & (battles["model"] != baseline)]
    usable = usable.reset_index(drop=True)
    mm, om, found = _style_meta(answer_dirs, usable)
    lengths = pd.DataFrame({"ml": pd.to_numeric(mm["token_len"], errors="coerce"),
                            "bl": pd.to_numeric(om["token_len"], errors="coerce")})
    found &= lengths.notna().all(axis=1).to_numpy()
    if not found.any():
        raise InputError("no answer lengths found for the judged games", field="--answers")
    g = usable[found].assign(delta=(lengths["ml"] - lengths["bl"])[found].to_numpy(),
                             ws=lambda f: f["score"] * f["weight"])
    per_prompt = g.groupby(["model", "question_id"], sort=True).agg(ws=("ws", "sum"), w=("weight", "sum"), delta=("delta", "first"))
    per_prompt = per_prompt.reset_index()
    res = length_controlled_win_rates(per_prompt["model"], per_prompt["question_id"], per_prompt["ws"] / per_prompt["w"],
                                      per_prompt["delta"], n_boot=bootstrap, ci=ci, rng=np.random.default_rng(seed))
    out = pd.DataFrame({"model": res.models, "lc_win_rate": res.lc_win_rate, "lc_lower": res.lc_lower,
                        "lc_upper": res.lc_upper, "length_coef": res.length_coef})
    left = int((~found).sum())
    note = (f"length-controlled win rate (AlpacaEval GLM, instruction difficulty estimated from these "
            f"{per_prompt['question_id'].nunique()} prompts){f'; {left} games without both answer lengths left out' if left else ''}")
    return out, note


def show_extras(
    judgment_dirs: Sequence[Path],
    baseline: str,
    *,
    bootstrap: int = 100,
    seed: int = 0,
    ci: float = 0.95,
    strong_weight: float = 3.0,
    ensemble: str | None = None,
    min_judges: int = 1,
    style_control: Sequence[str] = (),
    answer_dirs: Sequence[Path] = (),
    scores_jsonl: Path | None = None,
    style_anchor: Path | None = None,
    style_anchor_out: Path | None = None,
    length_control: bool = False,
) -> ExtrasResult:
    """Leaderboard with an optional judge ensemble and optional style control; optionally writes
    ``scores_jsonl`` (``model, score, lower, upper, results``) for ``arena audit benchmark``."""
    from arena.audit.io import scores_from_leaderboard, write_scores
    from arena.stats.ensemble import combine_judges, leave_one_judge_out
    from arena.soft_verdicts import soft_battles
    from arena.stats.ratings import average_tokens, leaderboard
    from arena.show import load_judgments, locate_answer_dir

    judgments = load_judgments(judgment_dirs)
    # The same scores as the plain leaderboard: soft verdicts and AlpacaEval preferences included.
    battles = soft_battles(judgments, baseline, strong_weight=strong_weight)
    if battles.empty:
        raise InputError("the judgments hold no games")
    notes: list[str] = []
    loo = None
    mode = ensemble or "pool"
    n_judges = battles["judge"].nunique()
    if ensemble or min_judges > 1:
        combined = combine_judges(battles, mode, min_judges=min_judges, strong_weight=strong_weight)
        if n_judges >= 2:
            loo = leave_one_judge_out(
                battles, lambda b: leaderboard(b, baseline, n_bootstrap=0).table, mode, min_judges=min_judges, strong_weight=strong_weight
            )
        notes.append(f"ensemble {mode} of {n_judges} judges ({', '.join(sorted(battles['judge'].unique()))}), min {min_judges} judges per game")
        battles = combined
    if not answer_dirs:
        answer_dirs = [d for d in (locate_answer_dir(Path(p)) for p in judgment_dirs) if d is not None]
    rng = np.random.default_rng(seed)
    coefs = None
    anchor = None
    if style_anchor is not None:
        from arena.stats.style import load_style_anchor

        anchor = load_style_anchor(Path(style_anchor))
        if style_control and tuple(style_control) != anchor.groups and set(style_control) != set(anchor.groups):
            raise InputError(f"the anchor controls for {', '.join(anchor.groups)}, not {', '.join(style_control)}", field="--style-control")
        style_control = list(anchor.groups)
    if style_control:
        from arena.stats.style import style_control as fit_style_control

        if not answer_dirs:
            raise InputError("style control needs the answers (--answers DIR)", field="--answers")
        usable = battles[battles["weight"] > 0].reset_index(drop=True)
        mm, om, found = _style_meta(answer_dirs, usable)
        if not found.any():
            raise InputError("no answer metadata found for the judged games", field="--answers")
        if not found.all():
            notes.append(f"{int((~found).sum())} games left out of style control: an answer is missing")
        usable, mm, om = usable[found].reset_index(drop=True), mm[found].reset_index(drop=True), om[found].reset_index(drop=True)
        try:
            res, fitted = fit_style_control(usable, mm, om, baseline, groups=list(style_control), anchor=anchor, n_bootstrap=bootstrap, ci=ci, rng=rng)
        except ValueError as exc:  # e.g. an anchor fitted against another baseline
            raise InputError(str(exc), path=None if style_anchor is None else str(style_anchor)) from None
        table, reps, coefs = res.table, res.replicates, res.coefficients
        frozen = f"; frozen anchor {style_anchor}" if anchor is not None else ""
        title = f"Style-controlled win rate against {baseline} (%; controls: {', '.join(style_control)}{frozen}; {ci:.0%} CI, {bootstrap} rounds; grad norm {res.grad_norm:.1e})"
        if style_anchor_out is not None:
            fitted.save(Path(style_anchor_out))
            notes.append(f"wrote style anchor {style_anchor_out}")
    else:
        lb = leaderboard(battles, baseline, n_bootstrap=bootstrap, ci=ci, rng=rng)
        table, reps = lb.table, lb.replicates
        title = f"Win rate against {baseline} (%; {ci:.0%} CI over {bootstrap} prompt-bootstrap rounds, {lb.method})"
    if length_control:
        if not answer_dirs:
            raise InputError("the length-controlled win rate needs the answers (--answers DIR)", field="--answers")
        lc, note = _length_controlled(battles, answer_dirs, baseline, bootstrap=bootstrap, ci=ci, seed=seed)
        table = table.merge(lc, on="model", how="left")
        notes.append(note)
    tokens: dict[str, float] = {}
    for d in answer_dirs:
        try:
            tokens.update(average_tokens(_read_answers(d, set(table["model"]))))
        except InputError:
            pass
    if tokens:
        table = table.assign(avg_tokens=table["model"].map(tokens))
    if scores_jsonl is not None:
        write_scores(scores_jsonl, scores_from_leaderboard(table, reps))
        notes.append(f"wrote {scores_jsonl}")
    return ExtrasResult(table=table, replicates=reps, title=title, coefficients=coefs, leave_one_out=loo, notes=notes)


def _read_answers(d: Path, models: set[str]):
    from arena.io.formats import jsonl_files, model_name_from_file, read_answer_file

    return {model_name_from_file(p): read_answer_file(p) for p in jsonl_files(d) if model_name_from_file(p) in models}
