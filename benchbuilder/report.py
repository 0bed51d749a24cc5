"""Curation report: cluster table, quality shares (the paper's Table 1) and the mean score per
cluster chart (the paper's Figure 2), as Markdown and as one HTML page to open in a browser.

Cells hold prompts, topic labels and benchmark prompts, all untrusted: the page escapes every
string and carries no script of its own, so no prompt can become live markup. The bars are CSS.
The interactive Plotly chart is a separate page, with plotly.js written beside it, so it works
offline.
"""

from __future__ import annotations

import html
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


def hierarchy_table(hierarchy: Mapping, labels: Mapping[int, str], *, path: str | None = None) -> pd.DataFrame:
    """One row per broad category (``topics.json``'s ``hierarchy``): its label, prompts, number of
    topics, keywords and its topics' labels, largest first (the outlier category "-1" too, when there
    is one). A category without its fields is an ``InputError`` naming ``path`` and the category."""
    from arena.errors import InputError

    rows = []
    categories = hierarchy.get("categories") or {} if isinstance(hierarchy, Mapping) else None
    if not isinstance(categories, Mapping):
        raise InputError("expected an object of categories", path=path, field="hierarchy.categories")
    for key, c in categories.items():
        try:
            rows.append({"category": str(c["label"]), "prompts": int(c["prompts"]), "topics": len(c["topics"]),
                         "keywords": ", ".join(map(str, c["keywords"][:8])),
                         "its topics (largest first)": "; ".join(labels.get(t, str(t)) for t in c["topics"])})
        except KeyError as exc:
            raise InputError(f"missing {exc.args[0]!r}", path=path, field=f"hierarchy.categories.{key}") from None
        except (TypeError, ValueError) as exc:
            raise InputError(f"malformed category ({exc})", path=path, field=f"hierarchy.categories.{key}") from None
    return pd.DataFrame(rows, columns=["category", "prompts", "topics", "keywords", "its topics (largest first)"])


FLAG_FIELDS = ("similarity", "reference", "reference_id", "reference_text")


def contamination_table(flags: Sequence[Mapping], chars: int = 160) -> pd.DataFrame:
    """The contamination gate's flags (``contamination.jsonl`` records), most similar first: the
    prompt, its nearest benchmark prompt and that prompt's ``file:id``."""
    from benchbuilder.contamination import reference_label

    rows = [{"similarity": f["similarity"], "prompt": str(f.get("prompt", ""))[:chars], "nearest benchmark prompt": str(f["reference_text"])[:chars],
             "reference": reference_label(str(f["reference"]), str(f["reference_id"]))} for f in flags]
    df = pd.DataFrame(rows, columns=["similarity", "prompt", "nearest benchmark prompt", "reference"])
    return df.sort_values("similarity", ascending=False, kind="stable").reset_index(drop=True)


def read_contamination_table(path: str | Path) -> pd.DataFrame:
    """:func:`contamination_table` of a ``contamination.jsonl`` (empty when there is none). A
    record without its fields, or with a similarity that is not a number, is an ``InputError``
    naming the file, line and field."""
    from arena.errors import InputError
    from arena.io.jsonl import read_jsonl

    path = Path(path)
    flags = []
    for line, r in read_jsonl(path, torn_tail="skip") if path.exists() else ():
        for name in FLAG_FIELDS:
            if name not in r:
                raise InputError("missing", path=str(path), line=line, field=name)
        if isinstance(r["similarity"], bool) or not isinstance(r["similarity"], (int, float)):
            raise InputError(f"must be a number, got {type(r['similarity']).__name__}", path=str(path), line=line, field="similarity")
        flags.append(r)
    return contamination_table(flags)


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


def _text(v: object) -> str:
    """One cell or summary value as text: floats to 3 decimals (NaN empty), dicts as k: v pairs."""
    if isinstance(v, (float, np.floating)):
        return "" if np.isnan(v) else f"{float(v):.3f}"
    if isinstance(v, Mapping):
        return ", ".join(f"{k}: ({_text(x)})" if isinstance(x, Mapping) else f"{k}: {_text(x)}" for k, x in v.items())
    return str(v)


def _md(df: pd.DataFrame) -> str:
    """GitHub markdown table (pandas' to_markdown needs the optional 'tabulate')."""
    def cell(v: object) -> str:
        # cells hold prompts (untrusted): no live markup when the markdown is rendered as HTML
        return html.escape(_text(v), quote=False).replace("|", "\\|").replace("\n", " ")

    head = "| " + " | ".join(map(str, df.columns)) + " |"
    sep = "|" + "---|" * len(df.columns)
    body = ["| " + " | ".join(cell(v) for v in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join([head, sep, *body])


_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:24px auto;max-width:1400px;padding:0 16px;color:#1d2433}
h1{font-size:22px}h2{font-size:17px;margin-top:28px;border-bottom:1px solid #dde;padding-bottom:4px}
table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #dde;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f3f5f9}td.num{text-align:right;white-space:nowrap}td.bar{min-width:160px}
.bar span{display:inline-block;height:10px;background:#5b7bd5;margin-right:6px;vertical-align:middle}
.summary td:first-child{font-weight:600;white-space:nowrap}.wrap td{max-width:520px;overflow-wrap:anywhere}
"""


def _html_value(v: object) -> str:
    """A summary value: a dict becomes a nested two-column table, anything else escaped text."""
    if isinstance(v, Mapping):
        rows = "".join(f"<tr><td>{html.escape(str(k))}</td><td>{_html_value(x)}</td></tr>" for k, x in v.items())
        return f"<table>{rows}</table>"
    return html.escape(_text(v))


def _html_table(df: pd.DataFrame, bars: Mapping[str, float] | None = None) -> str:
    """An escaped HTML table; a column named in ``bars`` also gets a bar scaled to its maximum."""
    bars = bars or {}
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in df.columns)
    body = []
    for row in df.itertuples(index=False):
        cells = []
        for col, v in zip(df.columns, row):
            text = html.escape(_text(v))
            if col in bars and isinstance(v, (int, float, np.number)) and not pd.isna(v) and bars[col] > 0:
                width = 150 * float(v) / bars[col]
                cells.append(f'<td class="num bar"><span style="width:{width:.0f}px"></span>{text}</td>')
            else:
                cls = ' class="num"' if isinstance(v, (int, float, np.number)) else ""
                cells.append(f"<td{cls}>{text}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f'<table class="wrap"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'


def render_html(table: pd.DataFrame, quality: tuple[pd.DataFrame, pd.DataFrame] | None, extra: Mapping[str, object] | None = None,
                sections: Sequence[tuple[str, pd.DataFrame]] = (), figure: str | None = None) -> str:
    """The report as one self-contained page (see the module docstring); ``quality``: the two
    tables of :func:`quality_shares`, or None without annotations."""
    parts = ["<!doctype html>", '<html lang="en"><head><meta charset="utf-8">',
             "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">",
             f"<title>BenchBuilder curation report</title><style>{_CSS}</style></head><body>",
             "<h1>BenchBuilder curation report</h1>"]
    if extra:
        rows = "".join(f"<tr><td>{html.escape(str(k))}</td><td>{_html_value(v)}</td></tr>" for k, v in extra.items())
        parts.append(f'<table class="summary">{rows}</table>')
    if quality is not None:
        per, ge = quality
        parts += ["<h2>Share of prompts with each quality (Table 1)</h2>", _html_table(per, {"share": 1.0}),
                  "<h2>Share with score &gt;= k</h2>", _html_table(ge, {"share_score_ge_k": 1.0})]
    for title, df in sections:
        parts += [f"<h2>{html.escape(title)}</h2>", _html_table(df, {"prompts": float(df["prompts"].max())} if "prompts" in df else None)]
    note = f' <a href="{html.escape(figure)}">Interactive chart of the mean score per cluster (Figure 2)</a>' if figure else ""
    parts += [f"<h2>Clusters</h2><p>{len(table)} clusters, largest first; bars show the size and the mean score (0–{N_CRITERIA}).{note}</p>",
              _html_table(table, {"size": float(table["size"].max()) if len(table) else 0.0, "mean_score": float(N_CRITERIA)}),
              "</body></html>"]
    return "\n".join(parts)


def write_report(out_dir: str | Path, table: pd.DataFrame, criteria: Sequence[Sequence[int]], extra: Mapping[str, object] | None = None,
                 sections: Sequence[tuple[str, pd.DataFrame]] = ()) -> dict[str, Path]:
    """report.md, index.html, cluster_table.csv and, with annotations, the Figure 2 chart.
    ``extra``: summary values (dicts are shown as nested tables)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"cluster_table": out / "cluster_table.csv", "figure": out / "mean_score_per_cluster.html", "markdown": out / "report.md",
             "html": out / "index.html"}
    table.to_csv(paths["cluster_table"], index=False)
    lines = ["# BenchBuilder curation report", ""]
    for k, v in (extra or {}).items():
        lines.append(f"- **{k}**: {html.escape(_text(v), quote=False)}")
    quality = quality_shares(criteria) if criteria else None
    if quality is not None:
        per, ge = quality
        lines += ["", "## Share of prompts with each quality", "", _md(per), "", "## Share with score >= k", "", _md(ge)]
        # plotly.js beside the chart ("directory"), not from a CDN: the report opens offline
        mean_score_figure(table).write_html(paths["figure"], include_plotlyjs="directory")
    else:
        paths.pop("figure")
    for title, df in sections:
        lines += ["", f"## {title}", "", _md(df)]
    lines += ["", "## Clusters", "", _md(table)]
    paths["markdown"].write_text("\n".join(lines) + "\n", encoding="utf-8")
    paths["html"].write_text(render_html(table, quality, extra, sections, paths["figure"].name if "figure" in paths else None),
                             encoding="utf-8")
    return paths
