"""`arena audit ...` and `arena import ...` commands."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from arena.console import clip, cli_errors, fail, make_console
from arena.errors import InputError

audit_app = typer.Typer(help="Audit benchmarks and judges.", no_args_is_help=True)
import_app = typer.Typer(help="Import judgments from other tools.", no_args_is_help=True)

def _out():
    # Wide enough that audit tables are not truncated when piped to a file or a CI log.
    return make_console(wide=True)


def _fmt(v) -> str:
    # values include model names (untrusted): clipped and escaped before rich renders them
    return f"{v:.4f}" if isinstance(v, float) else clip(v, 500)


@audit_app.command("benchmark")
@cli_errors()
def benchmark_cmd(
    scores: Path = typer.Option(..., "--scores", help="Leaderboard JSONL: model, score, lower, upper[, results]."),
    reference: Path = typer.Option(..., "--reference", help="Human-preference CSV: model, rating, lower, upper."),
    names: Optional[Path] = typer.Option(None, "--names", help="JSON map from benchmark names to reference names."),
    ci: float = typer.Option(0.95, "--ci", help="CI level used with bootstrap replicates."),
    output: Optional[Path] = typer.Option(None, "--output", help="Write the metrics as JSON."),
    random_baseline: int = typer.Option(0, "--random-baseline", help="K random prompt subsets of the benchmark's size from --pool."),
    pool: Optional[list[Path]] = typer.Option(None, "--pool", help="Judgment dirs (or AlpacaEval preference CSV) holding the prompt pool."),
    subset_size: int = typer.Option(0, "--subset-size", help="Prompts per random subset (default: all prompts of the pool / the benchmark)."),
    rounds: int = typer.Option(100, "--rounds", help="Bootstrap rounds for each random subset."),
    seed: int = typer.Option(0, "--seed"),
    baseline: Optional[str] = typer.Option(None, "--baseline", help="Baseline of the pool (default: the one the records name)."),
) -> None:
    """Separability, agreement (paper / reference variants), Brier, Spearman, Kendall vs a human reference."""
    from arena.audit.benchmark import BenchmarkAudit, audit_benchmark
    from arena.audit.io import read_names, read_reference, read_scores

    try:
        score_frame = read_scores(scores)
        ref = read_reference(reference)
        mapping = read_names(names)
        result = audit_benchmark(score_frame, ref, mapping, ci=ci)
        columns = {"benchmark": result.to_dict()}
        if random_baseline:
            if not pool:
                raise InputError("--random-baseline needs --pool", field="pool")
            from arena.audit.random_baseline import random_subset_audits

            frame = random_subset_audits(
                pool, ref, mapping, k=random_baseline, subset_size=subset_size or None, rounds=rounds, ci=ci, seed=seed, baseline=baseline
            )
            columns["random_mean"] = frame[list(BenchmarkAudit.METRICS)].mean().to_dict()
            columns["random_sd"] = frame[list(BenchmarkAudit.METRICS)].std(ddof=1).to_dict()
    except InputError as exc:
        fail(exc)
    from rich.table import Table

    table = Table(title=f"Benchmark audit: {result.n_models} models, {result.n_pairs} pairs")
    table.add_column("metric")
    for name in columns:
        table.add_column(name, justify="right")
    for metric in ("n_models", "n_pairs", *BenchmarkAudit.METRICS):
        table.add_row(metric, *(_fmt(columns[c].get(metric, "")) for c in columns))
    _out().print(table)
    if result.unmatched_benchmark:
        names_ = clip(", ".join(result.unmatched_benchmark), 2000)
        _out().print(f"unmatched benchmark models ({len(result.unmatched_benchmark)}): {names_}", soft_wrap=True)
    if output:
        output.write_text(json.dumps(columns, indent=2))


@import_app.command("alpaca-eval")
@cli_errors()
def import_alpaca_eval_cmd(
    files: list[Path] = typer.Argument(..., help="AlpacaEval annotations.json(.gz) files or the flat preference CSV."),
    output: Path = typer.Option(..., "--output", help="Judgment directory to write (<output>/<model>.jsonl)."),
    baseline: Optional[str] = typer.Option(None, "--baseline", help="Baseline model (default: generator_1 of each row)."),
    instructions: Optional[Path] = typer.Option(
        None, "--instructions", help="JSONL of instructions in official order; line k gets question id k."
    ),
    judge: Optional[str] = typer.Option(None, "--judge", help="Annotator name where the file does not say (CSV)."),
    answers_output: Optional[Path] = typer.Option(
        None, "--answers-output", help="Also write the annotated answers (<dir>/<model>.jsonl), for --length-control and --style-control."
    ),
) -> None:
    """Convert AlpacaEval annotations (soft preference in [1, 2]) into our judgment format."""
    from arena.io.alpaca_eval import read_annotations, to_judgments, write_answer_dir, write_judgment_dir
    from arena.io.formats import read_jsonl

    try:
        ids = None
        if instructions is not None:
            ids = {}
            for k, (line, rec) in enumerate(read_jsonl(instructions)):
                if not isinstance(rec.get("instruction"), str):
                    raise InputError("missing instruction", path=str(instructions), line=line, field="instruction")
                ids.setdefault(rec["instruction"], str(k))
        annotations = [a for f in files for a in read_annotations(f, instruction_ids=ids, annotator=judge)]
        counts = write_judgment_dir(to_judgments(annotations, baseline), output)
        if answers_output is not None:
            written = write_answer_dir(annotations, answers_output)
            if not written:
                raise InputError("the annotations carry no output_1/output_2 texts", field="--answers-output")
            _out().print(f"wrote answers of {len(written)} models to {answers_output}")
    except InputError as exc:
        fail(exc)
    failed = sum(a.preference is None for a in annotations)
    _out().print(f"wrote {sum(counts.values())} judgments for {len(counts)} models to {output} ({failed} failed annotations kept as failed games)")


def _answer_lengths(answers_dir: Path, battles) -> "tuple[list[float], list[float]]":
    """Token lengths of the model's and the opponent's answer for every battle (NaN if missing)."""
    import numpy as np

    from arena.io.formats import jsonl_files, model_name_from_file, read_answer_file
    from arena.stats.markdown_stats import approx_tokens

    needed = set(battles["model"]) | set(battles["opponent"])
    lengths: dict[tuple[str, str], float] = {}
    for p in jsonl_files(answers_dir):
        model = model_name_from_file(p)
        if model not in needed:
            continue
        for qid, a in read_answer_file(p).items():
            tl = a.token_len if a.token_len is not None else a.metadata.get("token_len")
            lengths[(model, qid)] = float(tl if tl is not None else approx_tokens(a.text))
    ml = [lengths.get((m, q), np.nan) for m, q in zip(battles["model"], battles["question_id"])]
    ol = [lengths.get((o, q), np.nan) for o, q in zip(battles["opponent"], battles["question_id"])]
    return ml, ol


def _print_frame(title: str, frame, max_rows: int = 40) -> None:
    from rich.table import Table

    table = Table(title=clip(title, 2000))
    for c in frame.columns:
        table.add_column(str(c), justify="right" if frame[c].dtype.kind in "fiu" else "left")
    for _, row in frame.head(max_rows).iterrows():
        table.add_row(*(_fmt(v) if not isinstance(v, float) or v == v else "-" for v in row.tolist()))
    _out().print(table)


@audit_app.command("judges", context_settings={"allow_extra_args": True})
@cli_errors()
def judges_cmd(
    ctx: typer.Context,
    judgments: list[Path] = typer.Option(..., "--judgments", help="Judgment dirs (model files, or judge sub-dirs); a judge found in several dirs is treated as repeated runs."),
    baseline: str = typer.Option("gpt-4-0314", "--baseline", help="Baseline for records that do not name one."),
    answers: Optional[Path] = typer.Option(None, "--answers", help="Answer dir, for length bias."),
    families: Optional[Path] = typer.Option(None, "--families", help="JSON {family: [regex, ...]} for self-preference."),
    human: Optional[Path] = typer.Option(None, "--human", help="CSV/JSONL of human labels: question_id, model, winner (model|opponent|tie)."),
    bootstrap: int = typer.Option(200, "--bootstrap", help="Bootstrap rounds for the length-bias slope CI."),
    seed: int = typer.Option(0, "--seed"),
    output: Optional[Path] = typer.Option(None, "--output", help="Directory for CSV/JSON outputs."),
    questions: Optional[Path] = typer.Option(None, "--questions", help="Question file whose 'category' fills in judgments without one."),
) -> None:
    """Verdict distribution, position consistency, unparsed rate, length bias, self-preference,
    run-to-run variance, inter-judge agreement and human agreement."""
    import numpy as np
    import pandas as pd

    from arena.audit import judges as ja
    from arena.io.formats import read_judgments
    from arena.stats.ratings import battles_from_judgments

    # `--judgments A B C` as in the docs: click takes one value per option, the rest arrive here.
    extra = [a for a in ctx.args]
    if any(a.startswith("-") for a in extra):
        fail(InputError(f"unexpected options {extra}; put options before the judgment directories"))
    judgments = list(judgments) + [Path(a) for a in extra]
    try:
        per_dir = {str(d): battles_from_judgments(read_judgments(d), baseline) for d in judgments}
        fam = ja.DEFAULT_FAMILIES
        if families is not None:
            fam = json.loads(families.read_text(encoding="utf-8"))
            if not isinstance(fam, dict) or not all(isinstance(v, list) for v in fam.values()):
                raise InputError("expected {family: [regex, ...]}", path=str(families))
        hum = None
        if human is not None:
            hum = pd.read_json(human, lines=True) if human.suffix == ".jsonl" else pd.read_csv(human)
            missing = {"question_id", "model", "winner"} - set(hum.columns)
            if missing:
                raise InputError(f"missing columns {sorted(missing)}", path=str(human), line=1)
            bad = ~hum["winner"].isin(["model", "opponent", "tie"])
            if bad.any():
                raise InputError(f"winner must be model|opponent|tie, got {hum['winner'][bad].iloc[0]!r}", path=str(human), line=int(bad.idxmax()) + 2, field="winner")
    except (InputError, json.JSONDecodeError) as exc:
        fail(exc)
    if questions is not None:
        from arena.io.formats import read_questions

        try:
            cats = {q.question_id: q.category for q in read_questions(questions)}
        except InputError as exc:
            fail(exc)
        for b in per_dir.values():
            b["category"] = b["category"].where(b["category"].notna(), b["question_id"].map(cats))
    battles = pd.concat(per_dir.values(), ignore_index=True)
    # The first directory holding a judge is its primary run; later ones are repeats.
    seen: dict[str, str] = {}
    for d, b in per_dir.items():
        for judge in b["judge"].unique():
            seen.setdefault(judge, d)
    primary = battles[[seen[j] == d for d, bb in per_dir.items() for j in bb["judge"]]]
    outputs: dict[str, object] = {}
    def with_overall(fn):
        """Per judge over all categories ("(all)"), then per judge and category when there are any."""
        overall = fn(primary, by=("judge",)).assign(category="(all)")
        overall = overall[["judge", "category"] + [c for c in overall.columns if c not in ("judge", "category")]]
        if primary["category"].notna().any():
            return pd.concat([overall, fn(primary)], ignore_index=True)
        return overall

    vd = with_overall(ja.verdict_distribution)
    pc = with_overall(ja.position_consistency)
    outputs["verdict_distribution"], outputs["position_consistency"] = vd, pc
    _print_frame("Verdict distribution (positional labels) and unparsed rate", vd)
    _print_frame("Position consistency (game 1 vs swapped game 2)", pc)
    if answers is not None:
        ml, ol = _answer_lengths(answers, primary)
        slopes, bins = ja.length_bias(primary, np.array(ml), np.array(ol), n_bootstrap=bootstrap, rng=np.random.default_rng(seed))
        outputs["length_bias"], outputs["length_bias_bins"] = slopes, bins
        _print_frame("Length bias: logit slope of (L_model - L_opp)/(L_model + L_opp)", slopes)
    sp = ja.self_preference(primary, fam)
    if len(sp):
        outputs["self_preference"] = sp
        _print_frame("Self-preference (judge and model of one family)", sp)
    if primary["judge"].nunique() >= 2:
        pairs, overall = ja.judge_agreement(primary)
        outputs["judge_agreement"], outputs["judge_agreement_overall"] = pairs, overall
        _print_frame("Inter-judge agreement (Cohen's kappa)", pairs)
        _out().print(f"Fleiss' kappa {overall['fleiss_kappa']:.4f} on {overall['n_games_all_judges']} games; Krippendorff's alpha {overall['krippendorff_alpha']:.4f}")
    for judge in battles["judge"].unique():
        runs = {d: b[b["judge"] == judge] for d, b in per_dir.items() if (b["judge"] == judge).any()}
        if len(runs) >= 2:
            rv = ja.run_variance(runs)
            outputs[f"run_variance_{judge}"] = rv
            _print_frame(f"Run-to-run variance of {judge} ({len(runs)} runs)", rv)
    if hum is not None:
        ha = ja.human_agreement(primary, hum)
        outputs["human_agreement"] = ha
        _print_frame("Agreement with human labels", ha)
    from arena.judge_repeats import stability

    # judge.repeats (arena/judge_repeats.py): flip rate between repeats of a game, with its CI
    stab = stability([j for d in judgments for j in read_judgments(d)], n_bootstrap=bootstrap, rng=np.random.default_rng(seed))
    if len(stab) and (stab["n_games"] > 0).any():
        outputs["stability"] = stab
        _print_frame("Judge stability (repeats): flip rate between repeats, implied per-repeat flip p, verdict entropy", stab)
    if output is not None:
        output.mkdir(parents=True, exist_ok=True)
        for name, obj in outputs.items():
            if isinstance(obj, dict):
                (output / f"{name}.json").write_text(json.dumps(obj, indent=2))
            else:
                obj.to_csv(output / f"{name}.csv", index=False)


@audit_app.command("quality")
@cli_errors()
def quality_cmd(
    judgments: list[Path] = typer.Option(..., "--judgments", help="Judgment dir(s)."),
    questions: Path = typer.Option(..., "--questions", help="question.jsonl with a quality 'score' per question (benchbuilder), or any annotations JSONL with question_id and score."),
    baseline: str = typer.Option(..., "--baseline", help="The baseline every model was judged against."),
    pairs: Optional[str] = typer.Option(None, "--pairs", help="Model pairs a:b,c:d whose win rate is shown per bucket (b may be the baseline)."),
    width: float = typer.Option(2.0, "--bucket-width", min=0.5, help="Width of a quality-score bucket."),
    per_bucket: Optional[int] = typer.Option(None, "--per-bucket", min=1, help="Prompts drawn per bucket (default: the smallest bucket's size)."),
    bootstrap: int = typer.Option(200, "--bootstrap", min=1),
    seed: int = typer.Option(0, "--seed"),
    reference: Optional[Path] = typer.Option(None, "--reference", help="Human-preference CSV (model, rating, lower, upper) for agreement; default: the leaderboard on all prompts."),
    output: Optional[Path] = typer.Option(None, "--output", help="JSON file for both tables."),
) -> None:
    """Quality score against separability (BenchBuilder Figure 4): per score bucket, pair win
    rates with CIs and the leaderboard's separability and agreement (arena/audit/quality.py)."""
    import numpy as np

    from arena.audit.quality import quality_buckets, read_quality_scores
    from arena.io.formats import read_judgments
    from arena.soft_verdicts import soft_battles

    pair_list = []
    for item in (pairs.split(",") if pairs else []):
        a, sep, b = item.strip().partition(":")
        if not sep or not a or not b:
            raise InputError(f"expected model_a:model_b, got {clip(item, 80)!r}", field="--pairs")
        pair_list.append((a, b))
    ref = None
    if reference is not None:
        import pandas as pd

        ref = pd.read_csv(reference)
        missing = {"model", "lower", "upper"} - set(ref.columns)
        if missing:
            raise InputError(f"missing columns {sorted(missing)}", path=str(reference), line=1)
    scores = read_quality_scores(questions)
    battles = soft_battles([j for d in judgments for j in read_judgments(d)], baseline)
    rep = quality_buckets(battles, scores, baseline, pairs=pair_list, width=width, per_bucket=per_bucket, n_bootstrap=bootstrap,
                          rng=np.random.default_rng(seed), reference=ref)
    _print_frame("Leaderboard per quality-score bucket (same number of prompts per bucket)", rep.buckets)
    if len(rep.pairs):
        _print_frame("Pair win rates per quality-score bucket (%, bootstrap CI)", rep.pairs)
    if output is not None:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(json.dumps(rep.to_dict(), indent=2))
        _out().print(f"wrote {clip(str(output), 500)}", markup=False, highlight=False)


def show_extras_cmd(judgments, baseline, bootstrap, seed, ci, strong_weight, output, answers_dir, ensemble, min_judges, style_control, scores_jsonl, style_anchor=None, style_anchor_out=None, length_control=False) -> None:
    """Body of ``arena show`` when an audit extra (ensemble, style control, scores JSONL) is asked for."""
    from arena.audit.show_extras import show_extras

    if ensemble is not None and ensemble not in ("pool", "mean", "majority"):
        raise InputError(f"unknown ensemble {ensemble!r} (pool, mean, majority)", field="--ensemble")
    groups = [g.strip() for g in style_control.split(",") if g.strip()] if style_control else []
    from arena.stats.style import STYLE_GROUPS

    unknown = set(groups) - set(STYLE_GROUPS)
    if unknown:
        raise InputError(f"unknown style control {sorted(unknown)} ({', '.join(STYLE_GROUPS)})", field="--style-control")
    if style_anchor_out is not None and not groups and style_anchor is None:
        raise InputError("--style-anchor-out needs --style-control (the covariates to fit and freeze)", field="--style-anchor-out")
    res = show_extras(
        judgments, baseline, bootstrap=bootstrap, seed=seed, ci=ci, strong_weight=strong_weight, ensemble=ensemble,
        min_judges=min_judges, style_control=groups, answer_dirs=answers_dir, scores_jsonl=scores_jsonl,
        style_anchor=style_anchor, style_anchor_out=style_anchor_out, length_control=length_control,
    )
    _print_frame(res.title, res.table, max_rows=500)
    if res.coefficients is not None:
        _print_frame("Style coefficients (logit per SD of the covariate)", res.coefficients)
    if res.leave_one_out is not None:
        loo = res.leave_one_out
        summary = loo.groupby("left_out").agg(spearman_vs_all=("spearman_vs_all", "first"), max_abs_delta=("delta", lambda d: d.abs().max())).reset_index()
        _print_frame("Leave-one-judge-out: how each judge moves the ranking", summary)
    for note in res.notes:
        _out().print(note)
    if output is not None:
        from arena.show import write_leaderboard
        from arena.stats.ratings import Leaderboard

        write_leaderboard(Leaderboard(table=res.table, replicates=res.replicates, method="style-bt" if res.coefficients is not None else "closed-form", ci=ci), output)
        _out().print(f"wrote {output}")
