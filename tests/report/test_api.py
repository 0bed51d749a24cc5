"""arena/api.py: the notebook API returns DataFrames that agree with the command line."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

sys.path.insert(0, str(Path(__file__).parent))
from synthetic import make_arena_run, make_curation_run, make_index_output  # noqa: E402

from arena import api  # noqa: E402
from arena.cli import app  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared" / "data"
NUMERIC = ["score", "lower", "upper", "n_battles", "n_unparsed", "avg_tokens", "rank", "rank_lower", "rank_upper"]


def _show_csv(tmp_path: Path, args: list[str]) -> pd.DataFrame:
    out = tmp_path / "lb.csv"
    r = CliRunner().invoke(app, ["show", *args, "--output", str(out)])
    assert r.exit_code == 0, r.output
    return pd.read_csv(out)


def _same(api_df: pd.DataFrame, show_df: pd.DataFrame) -> float:
    a = api_df.set_index("model")
    s = show_df.set_index("model").reindex(a.index)
    assert list(a.index) == list(show_df["model"])  # same order
    worst = 0.0
    for c in [c for c in NUMERIC if c in s.columns]:
        x, y = pd.to_numeric(a[c], errors="coerce").to_numpy(float), s[c].to_numpy(float)
        assert np.array_equal(np.isnan(x), np.isnan(y)), c
        if np.isfinite(x).any():
            worst = max(worst, float(np.nanmax(np.abs(x - y))))
    return worst


def test_leaderboard_reproduces_arena_show(tmp_path: Path):
    run = make_arena_run(tmp_path / "run", n_models=5, n_questions=30, judges=("j1", "j2"), unparsed_model=1)
    show = _show_csv(tmp_path, ["-j", str(run / "model_judgment"), "--baseline", "base-model", "--bootstrap", "200", "--seed", "3"])
    lb = api.leaderboard(run / "model_judgment", "base-model", n_bootstrap=200, seed=3)
    assert _same(lb, show) <= 1e-9
    assert {"rank_lower", "rank_upper", "tied_with"} <= set(lb.columns)
    assert lb.attrs["baseline"] == "base-model"


@pytest.mark.skipif(not (SHARED / "arena" / "judgments" / "arena-hard-v0.1").is_dir(), reason="../shared/data is absent")
def test_leaderboard_reproduces_arena_show_on_real_judgments(tmp_path: Path):
    j = SHARED / "arena" / "judgments" / "arena-hard-v0.1"
    ans = SHARED / "arena" / "answers" / "arena-hard-v0.1"
    show = _show_csv(tmp_path, ["-j", str(j), "--baseline", "gpt-4-0314", "--answers", str(ans)])
    lb = api.leaderboard(j, "gpt-4-0314", answers_dir=ans)
    assert _same(lb, show) <= 1e-9
    assert len(lb) == 4


def test_battles_one_row_per_judge_model_question(tmp_path: Path):
    run = make_arena_run(tmp_path / "run", n_models=3, n_questions=10, judges=("j1", "j2"), unparsed_model=0)
    b = api.battles(run / "model_judgment", "base-model", questions=run / "question.jsonl")
    assert len(b) == 2 * 3 * 10
    assert b["prompt"].notna().all() and b["model_answer"].notna().all() and b["baseline_answer"].notna().all()
    # verdict follows the games with the swap undone: game 1 "B>A" and game 2 "A>B" both favour the model
    row = b[(b["g1_label"] == "B>A") & (b["g2_label"] == "A>B")]
    if len(row):
        assert (row["verdict"] == "win").all() and not row["swap_disagree"].any()
    both = b[b["g1_label"].notna() & b["g2_label"].notna()]
    g1_model_wins = both["g1_label"].str.startswith("B>")
    g2_model_wins = both["g2_label"].str.startswith("A>")
    g1_tie, g2_tie = both["g1_label"] == "A=B", both["g2_label"] == "A=B"
    expect = ~((g1_model_wins == g2_model_wins) & (g1_tie == g2_tie))
    assert (both["swap_disagree"] == expect).all()
    assert (b[b["model"] == "model-00"]["verdict"] == "unparsed").sum() == 2 * 7  # i % 4 != 0 for 7 of 10 questions


def test_judge_audit_and_index_and_curation(tmp_path: Path):
    run = make_arena_run(tmp_path / "run", n_models=3, n_questions=10, judges=("j1", "j2"))
    ja = api.judge_audit(run / "model_judgment", "base-model")
    assert list(ja["judge"]) == ["j1", "j2"]
    assert np.allclose(ja[[c for c in ja.columns if c.startswith("share_")] + ["unparsed_rate"]].sum(axis=1), 1.0)
    assert (ja["reask_rate"] == 0).all()

    out = make_index_output(tmp_path / "idx")
    ir = api.index_results(out)
    assert set(ir["eval"]) == {"math500", "livecodebench"} and set(ir["model"]) == {"idx-model"}
    lcb = ir.set_index("eval").loc["livecodebench"]
    assert lcb["score"] == pytest.approx(0.5) and lcb["items"] == 4

    cur = make_curation_run(tmp_path / "cur", n_prompts=30)
    topics = api.curation_topics(cur)
    assert topics["size"].sum() == 30 and set(topics["label"]) == {"coding", "writing", "science"}
    assert topics["mean_score"].between(0, 7).all()
    cats = api.curation_categories(cur)
    assert cats.to_dict("records")[0] == {"category": "code & science", "prompts": 40, "topics": 2, "keywords": "code, science",
                                          "its topics (largest first)": "coding; science"}
    flags = api.curation_contamination(cur)
    assert list(flags["similarity"]) == [0.99, 0.93] and list(flags["reference"]) == ["arena_hard.jsonl:q42", "bench.jsonl:7"]
    (cur / "contamination.jsonl").unlink()
    assert api.curation_contamination(cur).empty  # the gate did not run: an empty frame, same columns
    assert list(api.curation_contamination(cur).columns) == list(flags.columns)


def test_terminal_leaderboard_never_cuts_a_model_name():
    from rich.console import Console

    from arena.cli import df_table

    name = "krikri-annealing-sft-stage2-dpo_max-length-norm-dpo-fixes-length-norm"
    con = Console(width=60, record=True, force_terminal=False)
    con.print(df_table(pd.DataFrame({"model": [name], "score": [1.0], "lower": [0.5], "upper": [2.0]})))
    text = con.export_text()
    assert "…" not in text
    cells = "".join(line.split("│")[1].strip() for line in text.splitlines() if line.startswith("│"))
    assert cells == name
