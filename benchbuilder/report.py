"""Curation report: cluster table, quality shares (the paper's Table 1) and the mean score per
cluster chart (the paper's Figure 2)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from benchbuilder.annotate import CRITERIA, N_CRITERIA


def cluster_table(clusters: Mapping[str, int], labels: Mapping[int, str], prompts: Mapping[str, str], scores: Mapping[str, int], n_examples: int = 3, example_chars: int = 80, examples: Mapping[int, Sequence[str]] | None = None) -> pd.DataFrame:
    """One row per cluster: label, size, annotated prompts, mean score, short example prompts
    (``examples``: representative prompts per cluster; default the cluster's first members)."""
    sizes = Counter(clusters.values())
    members: dict[int, list[str]] = {}
    for sid, c in clusters.items():
        members.setdefault(c, []).append(sid)
    rows = []
    for c, size in sizes.items():
        sc = [scores[s] for s in members[c] if s in scores]
        src = list(examples[c]) if examples and c in examples else [prompts[s] for s in members[c] if s in prompts]
        ex = [" ".join(e.split())[:example_chars] for e in src[:n_examples]]
        rows.append({"cluster": c, "label": labels.get(c, str(c)), "size": size, "annotated": len(sc), "mean_score": float(np.mean(sc)) if sc else np.nan, "examples": " | ".join(ex)})
    return pd.DataFrame(rows).sort_values(["size", "cluster"], ascending=[False, True]).reset_index(drop=True)


def quality_shares(criteria: Sequence[Sequence[int]]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Share of prompts with each quality, and with score >= k for k = 1..7 (Table 1)."""
    n = len(criteria)
    if n == 0:
        raise ValueError("no annotated prompts")
    hit = np.zeros((n, N_CRITERIA), dtype=bool)
    for i, cs in enumerate(criteria):
        for c in cs:
            hit[i, c - 1] = True
    per = pd.DataFrame({"quality": list(CRITERIA), "share": hit.mean(axis=0)})
    score = hit.sum(axis=1)
    ge = pd.DataFrame({"k": range(1, N_CRITERIA + 1), "share_score_ge_k": [(score >= k).mean() for k in range(1, N_CRITERIA + 1)]})
    return per, ge


def mean_score_figure(table: pd.DataFrame, title: str = "Mean score per cluster"):
    """Bar chart of clusters sorted by mean score (Figure 2)."""
    import plotly.graph_objects as go

    t = table.dropna(subset=["mean_score"]).sort_values("mean_score", ascending=False)
    fig = go.Figure(go.Bar(x=t["label"], y=t["mean_score"], text=t["size"], hovertemplate="%{x}<br>mean %{y:.2f}<br>size %{text}<extra></extra>"))
    fig.update_layout(title=title, xaxis_title="cluster", yaxis_title="mean score (0-7)", yaxis_range=[0, N_CRITERIA], xaxis_tickangle=-60, height=600)
    return fig


def _md(df: pd.DataFrame) -> str:
    """GitHub markdown table (pandas' to_markdown needs the optional 'tabulate')."""
    def cell(v: object) -> str:
        if isinstance(v, float):
            return "" if np.isnan(v) else f"{v:.3f}"
        # cells hold prompts (untrusted): no live markup when the markdown is rendered as HTML
        return str(v).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("|", "\\|").replace("\n", " ")

    head = "| " + " | ".join(map(str, df.columns)) + " |"
    sep = "|" + "---|" * len(df.columns)
    body = ["| " + " | ".join(cell(v) for v in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join([head, sep, *body])


def write_report(out_dir: str | Path, table: pd.DataFrame, criteria: Sequence[Sequence[int]], extra: Mapping[str, object] | None = None,
                 sections: Sequence[tuple[str, pd.DataFrame]] = ()) -> dict[str, Path]:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"cluster_table": out / "cluster_table.csv", "figure": out / "mean_score_per_cluster.html", "markdown": out / "report.md"}
    table.to_csv(paths["cluster_table"], index=False)
    lines = ["# BenchBuilder curation report", ""]
    for k, v in (extra or {}).items():
        lines.append(f"- **{k}**: {v}")
    if criteria:
        per, ge = quality_shares(criteria)
        lines += ["", "## Share of prompts with each quality", "", _md(per), "", "## Share with score >= k", "", _md(ge)]
        mean_score_figure(table).write_html(paths["figure"], include_plotlyjs="cdn")
    else:
        paths.pop("figure")
    for title, df in sections:
        lines += ["", f"## {title}", "", _md(df)]
    lines += ["", "## Clusters", "", _md(table)]
    paths["markdown"].write_text("\n".join(lines) + "\n", encoding="utf-8")
    return paths
