"""Even selection across clusters, arena-hard question schema, Table 1 shares, report files."""

from __future__ import annotations

import json

import numpy as np
import pytest

from benchbuilder.report import cluster_table, contamination_table, hierarchy_table, quality_shares, write_report
from benchbuilder.select import Candidate, sample_evenly, write_questions


def cands(sizes):
    out = []
    for c, k in enumerate(sizes):
        out += [Candidate(f"c{c}_{i}", f"prompt {c} {i}", c, score=(i % 3) + 5, criteria=[1, 2, 3, 4, 5]) for i in range(k)]
    return out


def test_sample_evenly_balances_clusters_and_is_seeded():
    pool = cands([10, 1, 4, 7, 2, 9])
    sel = sample_evenly(pool, 12, np.random.default_rng(0))
    counts = np.bincount([c.cluster for c in sel], minlength=6)
    assert len(sel) == 12 and counts.tolist().count(0) == 0
    # a small cluster gives what it has; the rest stay within one of each other
    big = counts[[0, 2, 3, 5]]
    assert big.max() - big.min() <= 1 and counts[1] == 1
    assert [c.source_id for c in sample_evenly(pool, 12, np.random.default_rng(0))] == [c.source_id for c in sel]
    assert [c.source_id for c in sample_evenly(pool, 12, np.random.default_rng(1))] != [c.source_id for c in sel]
    # high scores first within a cluster
    top = sample_evenly(cands([9]), 3, np.random.default_rng(0))
    assert [c.score for c in top] == [7, 7, 7]
    assert len(sample_evenly(pool, 1000, np.random.default_rng(0))) == len(pool)


def test_questions_readable_by_arena(tmp_path):
    from arena.io.formats import read_questions

    sel = sample_evenly(cands([3, 3]), 4, np.random.default_rng(0))
    path = write_questions(tmp_path / "question.jsonl", sel, {0: "Topic Zero", 1: "Topic One"}, "bb-test")
    qs = read_questions(path)
    assert len(qs) == 4 and {q.cluster for q in qs} == {"Topic Zero", "Topic One"}
    rec = json.loads(path.read_text().splitlines()[0])
    assert rec["turns"][0]["content"].startswith("prompt") and rec["category"] == "bb-test"
    assert {"score", "criteria", "source_id", "cluster_id"} <= set(rec)
    assert len({q.question_id for q in qs}) == 4


def test_quality_shares_table1():
    per, ge = quality_shares([[1, 2], [1], [], [1, 2, 3, 4, 5, 6, 7]])
    assert per.set_index("quality")["share"]["specificity"] == 0.75
    assert per.set_index("quality")["share"]["creativity"] == 0.25
    assert ge["share_score_ge_k"].tolist() == [0.75, 0.5, 0.25, 0.25, 0.25, 0.25, 0.25]
    with pytest.raises(ValueError):
        quality_shares([])


def test_report_files(tmp_path):
    clusters = {"a": 0, "b": 0, "c": 1}
    t = cluster_table(clusters, {0: "Zero", 1: "One"}, {"a": "first prompt", "b": "second", "c": "third"}, {"a": 4, "b": 6, "c": 1})
    row = t.set_index("label").loc["Zero"]
    assert row["size"] == 2 and row["mean_score"] == 5.0 and row["examples"].startswith("first prompt")
    paths = write_report(tmp_path, t, [[1, 2, 3, 4], [1, 2, 3, 4, 5, 6], [7]])
    html = paths["figure"].read_text()
    assert "plotly" in html.lower() and "Zero" in html
    # plotly.js beside the chart, not from a CDN: the chart opens offline
    assert 'src="plotly.min.js"' in html and "cdn" not in html.lower() and (tmp_path / "plotly.min.js").stat().st_size > 1e6
    md = paths["markdown"].read_text()
    assert "| specificity |" in md and "share_score_ge_k" in md
    page = paths["html"].read_text()
    assert "specificity" in page and "Zero" in page and 'href="mean_score_per_cluster.html"' in page


XSS = ["<script>window.__xss=1</script>", "<img src=x onerror=window.__xss=1>", "</td></table><svg onload=window.__xss=1>",
       "[click](javascript:window.__xss=1)", "<iframe src=javascript:window.__xss=1>"]


def test_report_page_shows_hostile_text_as_text(tmp_path):
    # Prompts, topic labels, keywords and benchmark prompts are untrusted: in the page they are
    # text, no payload runs, nothing is fetched, and the page holds no script at all.
    from report.browser import browser

    clusters = {"a": 0, "b": 1, "c": 1}
    t = cluster_table(clusters, {0: XSS[0], 1: XSS[1]}, {"a": XSS[2], "b": XSS[3], "c": "plain"}, {"a": 4, "b": 6})
    hierarchy = {"categories": {"0": {"label": XSS[4], "prompts": 3, "topics": [0, 1], "keywords": [XSS[2], "k"]}}}
    flags = [{"similarity": 0.8, "reference": "b.jsonl", "reference_id": "b.jsonl:3", "reference_text": XSS[1], "prompt": XSS[0]},
             {"similarity": 0.95, "reference": "a.jsonl", "reference_id": "q1", "reference_text": "same", "prompt": XSS[3]}]
    sections = [("Topic hierarchy", hierarchy_table(hierarchy, {0: XSS[0], 1: XSS[1]})), ("Contamination", contamination_table(flags))]
    paths = write_report(tmp_path, t, [[1, 2], [3]], {"ingest": {"read": 3, XSS[0]: XSS[1]}}, sections)
    with browser() as b:
        page = b.new_page()
        requests: list[str] = []
        page.on("request", lambda r: requests.append(r.url))
        page.goto(paths["html"].as_uri())
        probe = page.evaluate("""() => ({xss: typeof window.__xss,
            scripts: document.querySelectorAll('script').length,
            smuggled: document.querySelectorAll('img, iframe, svg, object, embed, a[href^="javascript"]').length,
            handlers: [...document.querySelectorAll('*')].filter(e => [...e.attributes].some(a => /^on/i.test(a.name))).length})""")
        assert probe == {"xss": "undefined", "scripts": 0, "smuggled": 0, "handlers": 0}
        assert requests == [paths["html"].as_uri()]
        tables = page.locator("table.wrap")
        texts = [tables.nth(k).locator("tbody tr").first.locator("td").all_text_contents() for k in range(tables.count())]
        hier = next(x for x in texts if x[0] == XSS[4])
        assert hier[3] == f"{XSS[2]}, k" and hier[4] == f"{XSS[0]}; {XSS[1]}"
        cont = next(x for x in texts if x[0] == "0.950")  # most similar first
        assert cont[1:] == [XSS[3], "same", "a.jsonl:q1"]
        assert XSS[1] in page.locator("table.summary").text_content()
    # the Markdown escapes the same strings (it may be rendered as HTML elsewhere)
    md = paths["markdown"].read_text()
    assert "<script" not in md and "<img" not in md and "&lt;iframe" in md
