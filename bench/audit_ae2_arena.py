"""Real-data audit: our AlpacaEval 2.0 leaderboard (re-scored from the imported annotations, with
our own prompt-level bootstrap) against the Chatbot Arena 2024-03-29 human reference.

Also reports the AE2 reproduction (win_rate error, bootstrap SE vs published standard_error).

    python bench/audit_ae2_arena.py [--rounds 1000] [--seed 0]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from arena.io.alpaca_eval import read_annotations, soft_battles, to_judgments, write_judgment_dir
from arena.audit.benchmark import audit_benchmark
from arena.audit.io import read_names, read_reference, scores_from_leaderboard, write_scores
from arena.io.formats import read_judgments
from arena.stats.ratings import leaderboard

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
BASELINE = "gpt4_1106_preview"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--scores-out", type=Path, default=None)
    args = ap.parse_args()
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        write_judgment_dir(to_judgments(read_annotations(SHARED / "alpaca_eval/ae2_gpt4turbo_preferences.csv.gz")), tmp)
        judgments = read_judgments(tmp)
    lb = leaderboard(soft_battles(judgments, BASELINE), BASELINE, n_bootstrap=args.rounds, rng=np.random.default_rng(args.seed))
    ours = lb.table.set_index("model")
    se = lb.replicates.std(ddof=1)
    pub = pd.read_csv(SHARED / "alpaca_eval/leaderboard_ae2.csv", index_col=0)
    shared = [m for m in ours.index if m in pub.index]
    err = (ours.loc[shared, "score"] - pub.loc[shared, "win_rate"]).abs()
    rel = (se[shared] / pub.loc[shared, "standard_error"] - 1).drop(BASELINE).abs()
    print(f"AE2 reproduction: {len(shared)} models, max |win_rate - published| = {err.max():.3e}")
    print(f"bootstrap SE ({args.rounds} rounds) vs published standard_error: max rel. diff {rel.max():.3%}, median {rel.median():.3%}")
    scores = scores_from_leaderboard(lb.table, lb.replicates)
    if args.scores_out:
        write_scores(args.scores_out, scores)
    ref = read_reference(SHARED / "human_reference/chatbot_arena_20240329.csv")
    names = read_names(ROOT / "data/ae2_to_chatbot_arena_20240329.json")
    res = audit_benchmark(scores, ref, names, ci=0.95)
    print(f"audit vs Chatbot Arena 2024-03-29: n_models={res.n_models} n_pairs={res.n_pairs}")
    for m in res.METRICS:
        print(f"  {m:<26} {getattr(res, m):.4f}")
    print(f"  models: {', '.join(res.models)}")
    # Judge audit on the same real data: length bias of AlpacaEval's GPT-4-Turbo annotator
    # (lengths in characters, as AlpacaEval records them), net of each model's strength.
    from arena.audit.judges import length_bias

    battles = soft_battles(judgments, BASELINE)
    raw = pd.read_csv(SHARED / "alpaca_eval/ae2_gpt4turbo_preferences.csv.gz")
    raw["question_id"] = raw["instruction_index"].astype(str)
    lens = battles[["model", "question_id"]].merge(raw[["model", "question_id", "len_output_1", "len_output_2"]], how="left")
    keep = battles["model"] != BASELINE  # the baseline against itself carries no length signal
    slopes, bins = length_bias(battles[keep], lens["len_output_2"][keep].to_numpy(), lens["len_output_1"][keep].to_numpy(), n_bootstrap=100, rng=np.random.default_rng(args.seed))
    s = slopes.iloc[0]
    print(f"AE2 judge length bias: logit slope {s['slope']:.3f} [{s['lower']:.3f}, {s['upper']:.3f}] per unit of (L_m - L_b)/(L_m + L_b), {int(s['n_games'])} games")
    print("  win rate by length-difference quintile: " + ", ".join(f"{r.len_diff_bin} {100 * r.win_rate:.1f}%" for r in bins.itertuples()))
    print(f"elapsed {time.perf_counter() - t0:.1f}s")


if __name__ == "__main__":
    main()
