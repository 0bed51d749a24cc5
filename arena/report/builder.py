"""Build the static report from whatever the given folders hold (arena runs or judgment folders,
curation runs, index outputs). I/O lives here; the numbers come from :mod:`arena.api`, the audit
functions and the curation report functions, never recomputed differently."""

from __future__ import annotations

import json
import math
import shutil
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd

from arena.errors import InputError

ASSETS = Path(__file__).parent / "assets"
# An unparsed or re-asked share "stands out" when it is at least this high and at least twice
# the median over models: a judge failing on everyone is a judge problem, shown on the Judges page.
FLAG_MIN_RATE = 0.05
FLAG_MEDIAN_RATIO = 2.0
MAP_MAX_POINTS = 20000
HOVER_CHARS = 300


@dataclass(frozen=True)
class ReportOptions:
    baseline: str | None = None
    answers: tuple[Path, ...] = ()
    questions: Path | None = None
    n_bootstrap: int = 100
    seed: int = 0
    ci: float = 0.95
    strong_weight: float = 3.0
    style_control: bool = True
    index_config: Path | None = None


@dataclass
class Source:
    kind: str  # arena | curation | index
    path: Path
    judgments: Path | None = None
    answers: Path | None = None
    extra: dict = field(default_factory=dict)


# --------------------------------------------------------------------------- escaping
def _clean(v: Any) -> Any:
    """JSON-safe values: NaN/inf become null, numpy scalars become Python ones."""
    if isinstance(v, dict):
        return {str(k): _clean(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_clean(x) for x in v]
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating, float)):
        f = float(v)
        return f if math.isfinite(f) else None
    if isinstance(v, (np.bool_,)):
        return bool(v)
    if v is pd.NA or v is pd.NaT:
        return None
    return v


def js_json(value: Any, clean: bool = True) -> str:
    """JSON that is safe inside a ``<script>`` element or a ``.js`` file: ``<``, ``>``, ``&`` and
    U+2028/U+2029 are escaped, so no string can close the element or start markup. ``clean=False``
    for payloads built of plain Python values only (the big per-model files): it skips the
    recursive NaN/numpy pass, and ``allow_nan=False`` still refuses anything it missed."""
    s = json.dumps(_clean(value) if clean else value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    return (s.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def _v(x: Any) -> Any:
    """A frame cell as a plain JSON value: pandas writes a missing text or score as NaN."""
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    return x


def write_data_js(path: Path, key: str, value: Any, clean: bool = True) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"window.BBR_LOAD({js_json(key)},{js_json(value, clean)});\n", encoding="utf-8")


def records(df: pd.DataFrame | None) -> list[dict]:
    if df is None or df.empty:
        return []
    return _clean(df.astype(object).where(df.notna(), None).to_dict(orient="records"))


# --------------------------------------------------------------------------- detection
def _has_jsonl(d: Path) -> bool:
    return any(d.glob("*.jsonl")) or any(d.glob("*.jsonl.gz"))


def _is_index_output(d: Path) -> bool:
    for sub in (p for p in d.iterdir() if p.is_dir()):
        for f in sorted(sub.glob("*.jsonl"))[:1]:
            with f.open(encoding="utf-8") as fh:
                first = fh.readline()
            try:
                rec = json.loads(first)
            except json.JSONDecodeError:
                continue
            if isinstance(rec, dict) and "item_id" in rec and "repeat" in rec:
                return True
    return False


def detect_sources(paths: Sequence[Path]) -> list[Source]:
    """What each folder holds. An arena run (``model_judgment/`` and ``model_answer/``), a
    folder of judgment files, a curation run (``clusters.jsonl``), an index output folder
    (``<model>/<eval>.jsonl``); a folder holding several of these is searched one level down."""
    out: list[Source] = []
    for p in paths:
        p = Path(p)
        if not p.exists():
            raise InputError("no such file or directory", path=str(p))
        found = _detect_one(p)
        if not found and p.is_dir():
            for sub in sorted(x for x in p.iterdir() if x.is_dir()):
                found += _detect_one(sub)
        if not found:
            raise InputError("holds no arena run, judgments, curation run or index results", path=str(p))
        out += found
    return out


def _detect_one(p: Path) -> list[Source]:
    if p.is_file():
        return [Source("arena", p, judgments=p)]
    if (p / "model_judgment").is_dir():
        return [Source("arena", p, judgments=p / "model_judgment", answers=(p / "model_answer") if (p / "model_answer").is_dir() else None)]
    if (p / "clusters.jsonl").exists() or (p / "prompts.jsonl").exists():
        return [Source("curation", p)]
    if _is_index_output(p):
        return [Source("index", p)]
    if _has_jsonl(p) or any(_has_jsonl(s) for s in p.iterdir() if s.is_dir()):
        if p.name == "model_answer":
            return []
        return [Source("arena", p, judgments=p)]
    return []


# --------------------------------------------------------------------------- arena
def _infer_baseline(judgments, given: str | None, where: Path) -> str:
    if given:
        return given
    named = Counter(j.baseline for j in judgments if j.baseline)
    if named:
        return named.most_common(1)[0][0]
    raise InputError("the judgments do not name their baseline: pass --baseline", path=str(where), field="--baseline")


def _find_questions(src: Source, opts: ReportOptions) -> Path | None:
    if opts.questions:
        return opts.questions
    for d in (src.path, src.path.parent):
        for name in ("question.jsonl", "questions.jsonl"):
            if (d / name).is_file():
                return d / name
    return None


def _flags(rate: pd.Series) -> pd.Series:
    med = float(rate.median()) if len(rate) else 0.0
    return (rate >= FLAG_MIN_RATE) & (rate >= FLAG_MEDIAN_RATIO * med)


def _board(judgments, baseline: str, opts: ReportOptions, tokens: dict[str, float]) -> pd.DataFrame:
    from arena.api import with_rank_intervals
    from arena.show import ShowOptions, compute_leaderboard

    # The answers were read once already: avg_tokens is filled from them, not re-read per board.
    lb = compute_leaderboard(judgments, ShowOptions(baseline, opts.n_bootstrap, opts.seed, opts.ci, opts.strong_weight), ())
    table = lb.table.assign(avg_tokens=lb.table["model"].map(tokens).astype(float))
    return with_rank_intervals(table, lb.replicates, baseline, opts.ci)


def _ensemble_board(judgments, baseline: str, mode: str, opts: ReportOptions, tokens: dict[str, float]) -> pd.DataFrame:
    from arena.api import with_rank_intervals
    from arena.stats.ensemble import combine_judges
    from arena.stats.ratings import battles_from_judgments, leaderboard

    b = combine_judges(battles_from_judgments(judgments, baseline, strong_weight=opts.strong_weight), mode, strong_weight=opts.strong_weight)
    lb = leaderboard(b, baseline, n_bootstrap=opts.n_bootstrap, ci=opts.ci, rng=np.random.default_rng(opts.seed))
    return with_rank_intervals(lb.table.assign(avg_tokens=lb.table["model"].map(tokens).astype(float)), lb.replicates, baseline, opts.ci)


def _style_meta(answers: dict, battles: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame, np.ndarray]:
    """As :func:`arena.audit.show_extras._style_meta`, over answers already read (a build reads
    every answer file once)."""
    from arena.stats.markdown_stats import answer_metadata, emoji_count

    keys = ("token_len", "header_count", "list_count", "bold_count", "emoji_count")
    cache: dict[tuple[str, str], dict | None] = {}

    def meta(model: str, qid: str) -> dict | None:
        k = (model, qid)
        if k not in cache:
            a = answers.get(model, {}).get(qid)
            if a is None:
                cache[k] = None
            else:
                m = dict(a.metadata or {})
                if not all(x in m for x in keys[:4]):
                    m = answer_metadata(a.text, a.token_len if a.token_len is not None else m.get("token_len"))
                if "emoji_count" not in m:
                    m["emoji_count"] = emoji_count(a.text)
                cache[k] = m
        return cache[k]

    empty = {k: None for k in keys}
    mm = [meta(m, q) for m, q in zip(battles["model"], battles["question_id"])]
    om = [meta(o, q) for o, q in zip(battles["opponent"], battles["question_id"])]
    found = np.array([x is not None and y is not None for x, y in zip(mm, om)], dtype=bool)
    return (pd.DataFrame([{k: (x or empty).get(k) for k in keys} for x in mm]),
            pd.DataFrame([{k: (x or empty).get(k) for k in keys} for x in om]), found)


def _style_board(judgments, baseline: str, opts: ReportOptions, answers: dict) -> pd.DataFrame | None:
    """Style-controlled board (length + markdown) when the answers carry what it needs."""
    from arena.api import with_rank_intervals
    from arena.stats.ratings import battles_from_judgments
    from arena.stats.style import style_controlled_leaderboard, style_features

    b = battles_from_judgments(judgments, baseline, strong_weight=opts.strong_weight)
    usable = b[b["weight"] > 0].reset_index(drop=True)
    if usable.empty:
        return None
    mm, om, found = _style_meta(answers, usable)
    if not found.any():
        return None
    usable, mm, om = usable[found].reset_index(drop=True), mm[found].reset_index(drop=True), om[found].reset_index(drop=True)
    res = style_controlled_leaderboard(usable, style_features(mm, om, ["length", "markdown"]), baseline,
                                       n_bootstrap=opts.n_bootstrap, ci=opts.ci, rng=np.random.default_rng(opts.seed))
    return with_rank_intervals(res.table, res.replicates, baseline, opts.ci)


def build_arena(src: Source, i: int, out: Path, opts: ReportOptions, log: Callable[[str], None]) -> dict:
    from arena.api import battle_table
    from arena.io.formats import read_answers, read_questions
    from arena.show import attach_categories, load_judgments, locate_answer_dir

    jdir = src.judgments
    judgments = load_judgments([jdir])
    if not judgments:
        raise InputError("no judgments found", path=str(jdir))
    qpath = _find_questions(src, opts)
    judgments = attach_categories(judgments, qpath)
    baseline = _infer_baseline(judgments, opts.baseline, jdir)
    answer_dirs = list(opts.answers) or ([src.answers] if src.answers else [d for d in [locate_answer_dir(jdir)] if d])
    answers: dict = {}
    for d in answer_dirs:
        answers.update(read_answers(d, allow_empty=True))
    questions = {q.question_id: q for q in read_questions(qpath)} if qpath else {}
    judges = sorted({j.judge for j in judgments})
    log(f"arena: {jdir} ({len(judgments)} judgment records, judges: {', '.join(judges)})")

    from arena.stats.ratings import average_tokens

    tokens = average_tokens(answers)
    bt = battle_table(judgments, baseline, answers, questions, strong_weight=opts.strong_weight)
    rates = bt.assign(unparsed=bt["verdict"] == "unparsed", reasked=bt["g1_reasked"] | bt["g2_reasked"]).groupby(["judge", "model"])[["unparsed", "reasked"]].mean()

    boards: list[dict] = []
    scopes: list[tuple[str, list]] = [(j, [x for x in judgments if x.judge == j]) for j in judges]
    if len(judges) > 1:
        scopes.insert(0, ("pool", judgments))
    cats = sorted({j.category for j in judgments if j.category})
    for scope, js in scopes:
        for cat in ["(all)", *cats]:
            sub = js if cat == "(all)" else [x for x in js if x.category == cat]
            if not sub:
                continue
            try:
                table = _board(sub, baseline, opts, tokens)
            except InputError as exc:  # a judge whose games hold no usable verdict still shows why
                log(f"  {scope}/{cat}: {exc}")
                continue
            table = _attach_flags(table, rates, scope)
            boards.append({"judge": scope, "category": cat, "variant": "raw", "rows": records(table)})
        # Style control for the first scope only (all judges pooled, or the only judge): the
        # fit with its bootstrap is the slowest step of a build.
        if opts.style_control and answers and scope == scopes[0][0]:
            try:
                st = _style_board(js, baseline, opts, answers)
            except (InputError, ValueError, KeyError) as exc:
                log(f"  style control skipped for {scope}: {exc}")
                st = None
            if st is not None:
                boards.append({"judge": scope, "category": "(all)", "variant": "style", "rows": records(_attach_flags(st, rates, scope))})
    if len(judges) > 1:  # the per-game judge ensembles of `arena show --ensemble`
        for mode in ("mean", "majority"):
            try:
                boards.append({"judge": f"ensemble:{mode}", "category": "(all)", "variant": "raw",
                               "rows": records(_attach_flags(_ensemble_board(judgments, baseline, mode, opts, tokens), rates, "pool"))})
            except (InputError, ValueError) as exc:
                log(f"  {mode} ensemble skipped: {exc}")

    all_rows = pd.concat([pd.DataFrame(b["rows"]).assign(judge=b["judge"], category=b["category"], variant=b["variant"]) for b in boards], ignore_index=True) if boards else pd.DataFrame()
    (out / "data").mkdir(parents=True, exist_ok=True)
    all_rows.to_csv(out / "data" / f"leaderboard_{i}.csv", index=False)
    (out / "data" / f"leaderboard_{i}.json").write_text(json.dumps(_clean(records(all_rows)), indent=1), encoding="utf-8")

    # Prompts and the baseline's answers once per source; each model's battles in its own file.
    qinfo = {}
    for qid, g in bt.groupby("question_id", sort=True):
        first = g.iloc[0]
        base_ans = answers.get(first["baseline"], {}).get(qid)
        qinfo[qid] = {"p": first["prompt"], "c": first["category"], "b": base_ans.text if base_ans else None, "bn": first["baseline"]}
    write_data_js(out / "data" / f"q_{i}.js", f"q_{i}", qinfo)
    models = []
    for k, (model, g) in enumerate(bt.groupby("model", sort=True)):
        rows = [
            {"q": r.question_id, "j": r.judge, "a": _v(r.model_answer), "v": r.verdict, "s": _v(r.score),
             "sd": bool(r.swap_disagree), "jd": bool(r.judges_disagree),
             "g": [[_v(r.g1_label), r.g1_status, _v(r.g1_judgment), bool(r.g1_reasked)], [_v(r.g2_label), r.g2_status, _v(r.g2_judgment), bool(r.g2_reasked)]]}
            for r in g.itertuples(index=False)
        ]
        key = f"b_{i}_{k}"
        write_data_js(out / "data" / f"{key}.js", key, rows, clean=False)
        models.append({"name": model, "key": key, "n": len(rows)})

    return {
        "name": str(src.path), "baseline": baseline, "judges": judges, "categories": cats, "boards": boards,
        "models": models, "questions_key": f"q_{i}", "has_prompts": bool(questions), "has_answers": bool(answers),
        "csv": f"data/leaderboard_{i}.csv", "json": f"data/leaderboard_{i}.json",
        "audit": _judge_audit(judgments, baseline, answers, opts, log),
        "run_log": _run_log(src.path), "usage": _usage(src.path),
    }


def _attach_flags(table: pd.DataFrame, rates: pd.DataFrame, scope: str) -> pd.DataFrame:
    r = rates.groupby("model").mean() if scope == "pool" else rates.xs(scope, level="judge") if scope in rates.index.get_level_values(0) else rates.iloc[0:0].droplevel(0)
    t = table.copy()
    t["unparsed_rate"] = t["model"].map(r["unparsed"])
    t["reask_rate"] = t["model"].map(r["reasked"])
    t["flag_unparsed"] = _flags(t["unparsed_rate"].fillna(0))
    t["flag_reask"] = _flags(t["reask_rate"].fillna(0))
    return t


def _judge_audit(judgments, baseline: str, answers: dict, opts: ReportOptions, log) -> dict:
    from arena.audit.judges import judge_agreement, length_bias, position_consistency, verdict_distribution
    from arena.stats.ratings import battles_from_judgments

    b = battles_from_judgments(judgments, baseline, strong_weight=opts.strong_weight)
    out: dict[str, Any] = {
        "verdicts": records(verdict_distribution(b, by=("judge",))),
        "consistency": records(position_consistency(b, by=("judge",))),
    }
    tok = {(m, q): float(a.token_len) for m, by_q in answers.items() for q, a in by_q.items() if a.token_len}
    ml = pd.Series([tok.get(k, np.nan) for k in zip(b["model"], b["question_id"])], dtype=float)
    ol = pd.Series([tok.get(k, np.nan) for k in zip(b["opponent"], b["question_id"])], dtype=float)
    ok = ml.notna() & ol.notna() & (b["weight"] > 0)
    if len(b) and ok.sum() >= 20:
        try:
            slopes, bins = length_bias(b[ok].reset_index(drop=True), ml[ok].to_numpy(float), ol[ok].to_numpy(float),
                                       n_bootstrap=min(opts.n_bootstrap, 100), ci=opts.ci, rng=np.random.default_rng(opts.seed))
            if "len_diff_bin" in bins.columns:  # "(lo, hi]" -> its midpoint, a numeric x for the plot
                ends = bins["len_diff_bin"].astype(str).str.extract(r"([-\d.eE+]+),\s*([-\d.eE+]+)").astype(float)
                bins = bins.assign(len_diff_mid=ends.mean(axis=1))
            out["length_slopes"], out["length_bins"] = records(slopes), records(bins)
        except (ValueError, np.linalg.LinAlgError) as exc:
            log(f"  length bias skipped: {exc}")
    if b["judge"].nunique() >= 2:
        pairs, overall = judge_agreement(b)
        out["kappa"], out["kappa_overall"] = records(pairs), _clean(overall)
    return out


def _run_log(run: Path) -> list[dict]:
    from arena.io.jsonl import read_jsonl

    for name in ("run_log.jsonl", "run_log.json"):
        p = run / name
        if p.is_file():
            if name.endswith(".json"):
                v = json.loads(p.read_text(encoding="utf-8"))
                return v if isinstance(v, list) else [v]
            return [rec for _, rec in read_jsonl(p, torn_tail="skip")]
    return []


def _usage(run: Path) -> list[dict]:
    p = run / "usage.csv"
    return records(pd.read_csv(p)) if p.is_file() else []


# --------------------------------------------------------------------------- curation
def build_curation(src: Source, i: int, out: Path, opts: ReportOptions, log) -> dict:
    from arena.api import _curation_prompts, _last_annotations, curation_categories, curation_contamination, curation_topics
    from arena.io.jsonl import read_jsonl
    from benchbuilder.annotate import load_annotations
    from benchbuilder.cluster import load_assignments
    from benchbuilder.report import quality_shares

    run = src.path
    log(f"curation: {run}")
    res: dict[str, Any] = {"name": str(run)}
    prompts = _curation_prompts(run)
    if (run / "clusters.jsonl").exists():
        res["topics"] = records(curation_topics(run))
        clusters, labels = load_assignments(run / "clusters.jsonl")
        res["map"] = _topic_map(prompts, clusters, labels, np.random.default_rng(opts.seed))
        if (run / "topics.json").exists():
            res["categories"] = records(curation_categories(run))
    flags = curation_contamination(run)
    if len(flags):
        res["contamination"] = records(flags)
    ann = _last_annotations(run, load_annotations)
    crit = [a.criteria for a in ann.values() if a.criteria is not None]
    if crit:
        per, ge = quality_shares(crit)
        res["qualities"], res["score_ge"] = records(per), records(ge)
    if (run / "drops.jsonl").exists():
        c = Counter(str(r.get("reason")) for _, r in read_jsonl(run / "drops.jsonl", torn_tail="skip"))
        res["drops"] = [{"reason": k, "count": v} for k, v in c.most_common()]
    if (run / "question.jsonl").exists():
        res["selected"] = [
            {"question_id": r.get("question_id"), "category": r.get("category"), "cluster": r.get("cluster"), "score": r.get("score"),
             "prompt": (r.get("prompt") or (r.get("turns") or [{}])[0].get("content") if isinstance(r.get("turns"), list) and r.get("turns") and isinstance(r["turns"][0], dict) else r.get("prompt"))}
            for _, r in read_jsonl(run / "question.jsonl", torn_tail="skip")
        ]
    res["n_prompts"] = len(prompts)
    return res


def _topic_map(prompts: dict[str, str], clusters: dict[str, int], labels: dict[int, str], rng: np.random.Generator) -> dict:
    """A 2-D map of the prompts: TF-IDF, truncated SVD to 50 dimensions (LSA), then the linear
    discriminant projection that best separates the run's topics. The run stores no UMAP
    coordinates; this is deterministic, takes a second, and a plain 2-component SVD mostly
    shows text length, not topics."""
    ids = [s for s in clusters if s in prompts]
    if len(ids) < 3:
        return {}
    if len(ids) > MAP_MAX_POINTS:
        ids = list(rng.choice(np.array(ids, dtype=object), MAP_MAX_POINTS, replace=False))
    from sklearn.decomposition import TruncatedSVD
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
    from sklearn.feature_extraction.text import TfidfVectorizer

    texts = [prompts[s] for s in ids]
    y = np.array([clusters[s] for s in ids])
    x = TfidfVectorizer(max_features=20000, sublinear_tf=True, stop_words="english").fit_transform(texts)
    k = max(1, min(50, x.shape[1] - 1, len(ids) - 1))
    z = TruncatedSVD(n_components=k, random_state=int(rng.integers(2**31))).fit_transform(x)
    if len(np.unique(y)) >= 3 and k >= 2:
        xy = LinearDiscriminantAnalysis(n_components=2).fit_transform(z, y)
        how = "TF-IDF, 50-d SVD, linear discriminants of the topics"
    else:
        xy = np.c_[z[:, :2], np.zeros((len(z), max(0, 2 - z.shape[1])))]
        how = "TF-IDF, 2-d SVD"
    return {"x": [round(float(v), 4) for v in xy[:, 0]], "y": [round(float(v), 4) for v in xy[:, 1]], "how": how,
            "topic": [labels.get(clusters[s], str(clusters[s])) for s in ids],
            "text": [" ".join(prompts[s].split())[:HOVER_CHARS] for s in ids]}


# --------------------------------------------------------------------------- index
def build_index(src: Source, i: int, out: Path, opts: ReportOptions, log) -> dict:
    from arena.api import read_index_records
    from arena.index.report import summarize

    log(f"index: {src.path}")
    prompts = _index_prompts(opts.index_config, log) if opts.index_config else {}
    models = []
    for k, d in enumerate(sorted(p for p in src.path.iterdir() if p.is_dir())):
        recs = read_index_records(src.path, d.name)
        if not recs:
            continue
        table, indices = summarize(recs, rng=np.random.default_rng(opts.seed), rounds=1000)
        evals = []
        for name, rs in sorted(recs.items()):
            key = f"i_{i}_{k}_{len(evals)}"
            items = [{
                "item_id": r.get("item_id"), "repeat": r.get("repeat"), "status": r.get("status"), "correct": r.get("correct"),
                "prompt": r.get("prompt") or prompts.get((name, str(r.get("item_id")))), "response": r.get("response"),
                "extracted": None if r.get("extracted") is None else str(r.get("extracted")), "gold": None if r.get("gold") is None else str(r.get("gold")),
                "method": r.get("method"), "sandbox": (r.get("sandbox") or {}).get("status"), "sandbox_stderr": (r.get("sandbox") or {}).get("stderr"),
                "checker": r.get("equality_checker") or r.get("judge"), "error": r.get("error"), "language": r.get("language"),
            } for r in rs]
            write_data_js(out / "data" / f"{key}.js", key, items)
            evals.append({"eval": name, "key": key, "n": len(items)})
        models.append({"model": d.name, "evals": evals, "table": records(table), "indices": records(indices)})
    return {"name": str(src.path), "models": models}


def _index_prompts(config: Path, log) -> dict[tuple[str, str], str]:
    """Item texts from the index config that produced the run (records store no prompt)."""
    from arena.index.runner import load_config, load_items

    try:
        cfg = load_config(config)
        return {(spec.name, it.item_id): it.question for spec in cfg.evals for it in load_items(spec)}
    except (InputError, OSError, ValueError, KeyError) as exc:
        log(f"  index prompts unavailable: {exc}")
        return {}


# --------------------------------------------------------------------------- site
def _plotly_js() -> Path:
    import plotly

    p = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    if not p.is_file():
        raise InputError("plotly.min.js is missing from the installed plotly package", path=str(p))
    return p


def build_report(paths: Sequence[Path], output: Path, opts: ReportOptions = ReportOptions(), log: Callable[[str], None] = lambda s: None) -> Path:
    """Write the site into ``output`` and return the path of its ``index.html``. The site is
    built in a sibling temporary folder and swapped in at the end, so a failed build never
    leaves a half-written report over a good one."""
    sources = detect_sources(paths)
    output = Path(output)
    if output.exists() and any(output.iterdir()) and not (output / "data" / "summary.js").exists():
        raise InputError("exists and is not a report: choose another --output (nothing was written)", path=str(output))
    tmp = output.with_name(output.name + ".building")
    if tmp.exists():
        shutil.rmtree(tmp)
    (tmp / "assets").mkdir(parents=True)
    summary: dict[str, Any] = {"arena": [], "curation": [], "index": []}
    try:
        for i, src in enumerate(sources):
            if src.kind == "arena":
                summary["arena"].append(build_arena(src, i, tmp, opts, log))
            elif src.kind == "curation":
                summary["curation"].append(build_curation(src, i, tmp, opts, log))
            else:
                summary["index"].append(build_index(src, i, tmp, opts, log))
        write_data_js(tmp / "data" / "summary.js", "summary", summary)
        for f in ("app.js", "style.css", "index.html"):
            shutil.copyfile(ASSETS / f, (tmp / f) if f == "index.html" else (tmp / "assets" / f))
        shutil.copyfile(_plotly_js(), tmp / "assets" / "plotly.min.js")
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if output.exists():
        old = output.with_name(output.name + ".old")
        if old.exists():
            shutil.rmtree(old)
        output.rename(old)
        tmp.rename(output)
        shutil.rmtree(old, ignore_errors=True)
    else:
        output.parent.mkdir(parents=True, exist_ok=True)
        tmp.rename(output)
    return output / "index.html"
