"""Length-controlled win rate on AlpacaEval 2.0's real verdicts, against the published values.

Reads ../shared/data/alpaca_eval (46,680 verdicts of weighted_alpaca_eval_gpt4_turbo, 58 models,
and the published leaderboard), computes our LC win rates (instruction difficulties estimated
from these verdicts; see arena/stats/length_control.py), and prints Spearman with the published
`length_controlled_winrate`, the median and largest absolute differences, the sensitivity to the
ridge weight, and bootstrap CIs next to the published `lc_standard_error`.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import spearmanr

from arena.stats.length_control import DEFAULT_POOLED_RIDGE, length_controlled_win_rates

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "alpaca_eval"


def compare(res, published: pd.DataFrame) -> tuple[pd.DataFrame, float]:
    ours = pd.DataFrame({"lc_ours": res.lc_win_rate, "raw": res.win_rate, "lc_lower": res.lc_lower,
                         "lc_upper": res.lc_upper, "length_coef": res.length_coef}, index=res.models)
    ours["lc_published"] = published["length_controlled_winrate"].reindex(ours.index)
    ours["lc_se_published"] = published["lc_standard_error"].reindex(ours.index)
    ours = ours.dropna(subset=["lc_published"])
    ours["diff"] = ours["lc_ours"] - ours["lc_published"]
    return ours, float(spearmanr(ours["lc_ours"], ours["lc_published"])[0])


def main() -> int:
    if not DATA.exists():
        print(f"no data at {DATA}")
        return 1
    d = pd.read_csv(DATA / "ae2_gpt4turbo_preferences.csv.gz")
    published = pd.read_csv(DATA / "leaderboard_ae2.csv", index_col=0)
    y = (d["preference"] - 1).to_numpy()
    delta = (d["len_output_2"] - d["len_output_1"]).to_numpy(float)
    args = (d["model"].to_numpy(), d["instruction_index"].to_numpy(), y, delta)

    print("ridge   spearman  median|diff|  max|diff| (model)")
    for ridge in (0.0, 0.003, DEFAULT_POOLED_RIDGE, 0.03, 0.1):
        table, rho = compare(length_controlled_win_rates(*args, ridge=ridge), published)
        worst = table["diff"].abs().idxmax()
        print(f"{ridge:<7} {rho:.4f}    {table['diff'].abs().median():.3f}         "
              f"{table['diff'].abs().max():.2f} ({worst})")

    t0 = time.perf_counter()
    res = length_controlled_win_rates(*args, n_boot=200, rng=np.random.default_rng(0))
    secs = time.perf_counter() - t0
    table, rho = compare(res, published)
    print(f"\ndefault ridge {DEFAULT_POOLED_RIDGE}: {len(table)} models, Spearman {rho:.4f}, "
          f"median |diff| {table['diff'].abs().median():.3f} points, 200 bootstrap rounds in {secs:.1f} s")
    half = (table["lc_upper"] - table["lc_lower"]) / 2 / 1.96
    print(f"bootstrap SE / published lc_standard_error: median ratio {np.nanmedian(half / table['lc_se_published']):.2f}")
    print("\nlargest differences:")
    cols = ["lc_ours", "lc_published", "diff", "raw", "length_coef"]
    print(table.reindex(table["diff"].abs().sort_values(ascending=False).index)[cols].head(6).round(2).to_string())
    return 0


if __name__ == "__main__":
    sys.exit(main())
