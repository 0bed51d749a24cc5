"""The static report in a real headless Chromium: pages load without console errors, filters
change the rows shown, deep links open the right battle, plots render, and hostile strings in
every text field stay text. Plus the build's escaping, CLI errors, and the Python API."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

sys.path.insert(0, str(Path(__file__).parent))
from browser import Page, browser  # noqa: E402
from synthetic import XSS, XSS_MODELS, make_arena_run, make_curation_run, make_index_output  # noqa: E402

from arena.cli import app  # noqa: E402
from arena.report.builder import ReportOptions, build_report, js_json  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared" / "data"

# After rendering: no event-handler attribute, no javascript: URL, no script but ours, and none of
# the elements a payload would smuggle in (the page itself creates none of them).
PROBE = """() => {
  const bad = [];
  for (const e of document.querySelectorAll('*')) {
    for (const a of e.attributes) {
      if (/^on/i.test(a.name)) bad.push(e.tagName + ' ' + a.name);
      if (/^\\s*javascript:/i.test(a.value)) bad.push(e.tagName + ' ' + a.name + '=' + a.value);
    }
  }
  for (const s of document.querySelectorAll('script')) {
    const src = s.getAttribute('src') || '';
    if (!/^(assets\\/(app|plotly\\.min)\\.js|data\\/[\\w.-]+\\.js)$/.test(src)) bad.push('script ' + src + ' ' + s.textContent.slice(0, 40));
  }
  for (const e of document.querySelectorAll('img, iframe, object, embed')) bad.push(e.tagName);
  return {xss: typeof window.__xss, bad};
}"""


@pytest.fixture(scope="module")
def hostile_site(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("hostile")
    make_arena_run(root / "arena", hostile=True, judges=("judge-a", "judge-<b>b<b>"), n_models=4, n_questions=16, unparsed_model=2)
    make_curation_run(root / "curation", hostile=True)
    make_index_output(root / "index", hostile=True)
    build_report([root / "arena", root / "curation", root / "index"], root / "site", ReportOptions(n_bootstrap=50))
    return root / "site"


def _check_inert(page) -> None:
    res = page.evaluate(PROBE)
    assert res["xss"] == "undefined", "a payload ran"
    assert res["bad"] == [], res["bad"]


# --------------------------------------------------------------------------- build, no browser
def test_js_json_escapes_everything_that_could_end_a_script():
    payload = {"k": XSS + ["\u2028\u2029", "</SCRIPT>", "<!--"]}
    s = js_json(payload)
    for ch in ("<", ">", "&", "\u2028", "\u2029"):
        assert ch not in s
    assert json.loads(s) == payload


def test_site_is_self_contained(hostile_site: Path):
    names = {p.relative_to(hostile_site).as_posix() for p in hostile_site.rglob("*") if p.is_file()}
    assert {"index.html", "assets/app.js", "assets/style.css", "assets/plotly.min.js", "data/summary.js"} <= names
    text = "\n".join(p.read_text(encoding="utf-8") for p in hostile_site.rglob("*") if p.suffix in {".html", ".css"} or p.name == "app.js")
    assert not re.search(r"(src|href)=\"(https?:)?//", text), "a page asset points off the machine"
    for p in (hostile_site / "data").glob("*.js"):
        body = p.read_text(encoding="utf-8")
        assert body.startswith("window.BBR_LOAD(") and "<" not in body and "\u2028" not in body, p.name
    # Every battle of every model is on disk, one file per model, loaded on demand.
    summary = json.loads(re.match(r"window\.BBR_LOAD\(\"summary\",(.*)\);\s*$", (hostile_site / "data" / "summary.js").read_text(encoding="utf-8"), re.S).group(1))
    models = {m["name"]: m["n"] for m in summary["arena"][0]["models"]}
    assert models[XSS_MODELS[0]] == 32  # 16 questions x 2 judges


def test_flags_the_model_whose_unparsed_rate_stands_out(hostile_site: Path):
    csv = pd.read_csv(hostile_site / "data" / "leaderboard_0.csv")
    pool = csv[(csv["judge"] == "pool") & (csv["category"] == "(all)") & (csv["variant"] == "raw")].set_index("model")
    assert bool(pool.loc["model-02", "flag_unparsed"]) is True
    assert not pool.drop(index="model-02")["flag_unparsed"].fillna(False).astype(bool).any()


def test_cli_report_errors_are_one_line(tmp_path: Path):
    r = CliRunner().invoke(app, ["report", str(tmp_path / "nope"), "--output", str(tmp_path / "out")])
    assert r.exit_code == 2
    assert r.output.strip() == f"error: {tmp_path / 'nope'}: no such file or directory"
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    run = make_arena_run(tmp_path / "run", n_models=2, n_questions=4)
    r = CliRunner().invoke(app, ["report", str(run), "--output", str(tmp_path / "mine")])
    assert r.exit_code == 2
    assert " ".join(r.output.split()) == f"error: {tmp_path / 'mine'}: exists and is not a report: choose another --output (nothing was written)"
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep me"


def _break_hierarchy(run: Path, category) -> None:
    meta = json.loads((run / "topics.json").read_text())
    meta["hierarchy"]["categories"]["0"] = category
    (run / "topics.json").write_text(json.dumps(meta))


@pytest.mark.parametrize("breakage, message", [
    (lambda r: _break_hierarchy(r, {"label": "x"}), "{run}/topics.json: field 'hierarchy.categories.0': missing 'prompts'"),
    (lambda r: _break_hierarchy(r, {"label": "x", "prompts": 3, "topics": 7, "keywords": []}),
     "{run}/topics.json: field 'hierarchy.categories.0': malformed category (object of type 'int' has no len())"),
    (lambda r: (r / "contamination.jsonl").write_text('{"source_id": "s1", "prompt": "p"}\n'),
     "{run}/contamination.jsonl:line 1: field 'similarity': missing"),
    (lambda r: (r / "contamination.jsonl").write_text(
        '{"similarity": "<b>0.9</b>", "reference": "a", "reference_id": "1", "reference_text": "t"}\n'),
     "{run}/contamination.jsonl:line 1: field 'similarity': must be a number, got str"),
])
def test_broken_curation_records_are_one_line(tmp_path: Path, breakage, message):
    # topics.json's hierarchy and contamination.jsonl are read by arena report and the pipeline's
    # report alike: a record without its fields is one line naming the file (and line), exit 2
    run = make_curation_run(tmp_path / "cur", hostile=True)
    breakage(run)
    r = CliRunner().invoke(app, ["report", str(run), "--output", str(tmp_path / "site")])
    assert r.exit_code == 2, r.output
    assert " ".join(r.output.split()).endswith("error: " + message.format(run=run)), r.output
    assert "Traceback" not in r.output


def test_cli_report_writes_and_prints_the_path(tmp_path: Path):
    run = make_arena_run(tmp_path / "run", n_models=2, n_questions=4)
    r = CliRunner().invoke(app, ["report", str(run), "--output", str(tmp_path / "site"), "--bootstrap", "10"])
    assert r.exit_code == 0, r.output
    assert f"report: {(tmp_path / 'site' / 'index.html').resolve()}" in r.output.replace("\n", "")
    # A second build replaces the first (a report folder, so it may be overwritten).
    r = CliRunner().invoke(app, ["report", str(run), "--output", str(tmp_path / "site"), "--bootstrap", "10"])
    assert r.exit_code == 0, r.output


# --------------------------------------------------------------------------- browser
def test_every_page_loads_and_no_payload_runs(hostile_site: Path):
    with browser() as b:
        p = Page(b)
        for page in ("leaderboard", "battles", "judges", "curation", "index"):
            pg = p.open(f"file://{hostile_site}/index.html#/{page}")
            pg.wait_for_timeout(300)
            assert pg.evaluate("document.body.dataset.page") == page
            _check_inert(pg)
        assert p.errors == []
        assert [u for u in p.requests if not u.startswith("file://")] == []


def test_leaderboard_table_and_forest_plot(hostile_site: Path):
    with browser() as b:
        p = Page(b)
        pg = p.open(f"file://{hostile_site}/index.html#/leaderboard")
        rows = pg.locator("#leaderboard-table tbody tr")
        assert rows.count() == 5  # four models and the baseline
        names = pg.locator("#leaderboard-table td.model a").all_text_contents()
        assert set(XSS_MODELS) <= set(names)  # hostile names shown whole, as text
        pg.wait_for_selector("#forest svg .point")
        assert pg.locator("#forest .point").count() == 5
        pg.select_option("select[aria-label=Judge]", "judge-a")
        assert pg.locator("#leaderboard-table tbody tr").count() == 5
        pg.select_option("select[aria-label=Judge]", "ensemble:mean")
        assert pg.locator("#leaderboard-table tbody tr").count() == 5
        assert pg.locator("#forest .point").count() == 5
        pg.select_option("select[aria-label=Judge]", "judge-a")
        pg.select_option("select[aria-label=Category]", "coding")
        assert pg.locator("h2").first.text_content().startswith("Win rate")
        _check_inert(pg)
        assert p.errors == []


def test_battle_filters_search_and_deep_links(hostile_site: Path):
    model = XSS_MODELS[1]
    with browser() as b:
        p = Page(b)
        pg = p.open(f"file://{hostile_site}/index.html#/battles/0/{model}")
        pg.wait_for_selector("#battle-list .row")
        total = pg.locator("#battle-list .row").count()
        assert total == 32
        pg.select_option("select[aria-label=Verdict]", "win")
        wins = pg.locator("#battle-list .row").count()
        assert 0 < wins < total
        assert set(pg.locator("#battle-list .row .chip.win, #battle-list .row .chip.loss, #battle-list .row .chip.tie").all_text_contents()) == {"win"}
        pg.select_option("select[aria-label=Verdict]", "")
        pg.select_option("select[aria-label=Judge]", "judge-a")
        assert pg.locator("#battle-list .row").count() == 16
        pg.fill("input[aria-label=search]", "Question 7:")
        pg.wait_for_function("document.querySelectorAll('#battle-list .row').length === 1")
        pg.fill("input[aria-label=search]", "")
        pg.wait_for_function("document.querySelectorAll('#battle-list .row').length === 16")
        pg.select_option("select[aria-label=Show]", "swap")
        swaps = pg.locator("#battle-list .row").count()
        assert swaps == pg.locator("#battle-list .row .chip.flag", has_text="swap").count()
        pg.select_option("select[aria-label=Show]", "")
        # click a battle: the URL names it, and opening that URL fresh shows the same battle
        pg.locator("#battle-list .row").nth(3).click()
        pg.wait_for_selector("#battle-detail .judgment")
        url = pg.url
        qid = pg.locator("#battle-list .row.sel").get_attribute("data-qid")
        assert qid and qid in url
        _check_inert(pg)
        p2 = Page(b)
        pg2 = p2.open(url)
        pg2.wait_for_selector("#battle-detail .judgment")
        assert pg2.locator("#battle-detail .pane h3").first.text_content().startswith(f"Prompt {qid}")
        assert pg2.locator("#model-answer h3").text_content() == f"Model: {model}"
        assert pg2.locator("#battle-detail .judgment").count() == 2
        # the markdown renderer made real elements from markdown, and only text from markup
        assert pg2.locator("#model-answer pre code span.tok-k").count() > 0
        assert pg2.locator("#model-answer a[href^='https://example.org']").count() >= 1
        _check_inert(pg2)
        # every battle's detail, one by one: each payload position rendered
        for i in range(pg2.locator("#battle-list .row").count()):
            pg2.locator("#battle-list .row").nth(i).click()
            pg2.wait_for_selector(f"#battle-list .row.sel >> nth=0")
        _check_inert(pg2)
        assert p.errors == [] and p2.errors == []


def test_unparsed_filter_and_judges_page(hostile_site: Path):
    with browser() as b:
        p = Page(b)
        pg = p.open(f"file://{hostile_site}/index.html#/battles/0/model-02")
        pg.wait_for_selector("#battle-list .row")
        pg.select_option("select[aria-label=Show]", "unparsed")
        n = pg.locator("#battle-list .row").count()
        assert n == 24  # 12 of 16 questions unparsed, two judges
        pg = p.open(f"file://{hostile_site}/index.html#/judges")
        for plot in ("#verdict-plot", "#kappa-plot"):
            pg.wait_for_selector(f"{plot} .main-svg")
        assert pg.locator("#verdict-plot .bars path").count() > 0
        assert pg.locator("#kappa-plot .hm, #kappa-plot image, #kappa-plot .heatmaplayer *").count() > 0 or pg.locator("#kappa-plot .main-svg").count() > 0
        _check_inert(pg)
        assert p.errors == []


def test_curation_and_index_pages(hostile_site: Path):
    with browser() as b:
        p = Page(b)
        pg = p.open(f"file://{hostile_site}/index.html#/curation")
        pg.wait_for_selector("#topic-map .main-svg")
        pg.wait_for_selector("#topic-score-plot .bars path")
        assert pg.locator("#topic-score-plot .bars path").count() == 3
        assert XSS[1] in pg.locator("main table").first.text_content()  # the topic label, as text
        # the topic hierarchy (categories with their topics) and the contamination flags, as text
        tables = pg.locator("main table")
        hierarchy = next(tables.nth(k) for k in range(tables.count()) if "its topics (largest first)" in tables.nth(k).text_content())
        rows = hierarchy.locator("tbody tr")
        assert rows.count() == 2 and rows.first.locator("td").first.text_content() == XSS[6]
        assert XSS[1] in rows.first.text_content() and "science" in rows.first.text_content()
        flags = next(tables.nth(k) for k in range(tables.count()) if "nearest benchmark prompt" in tables.nth(k).text_content())
        cells = [r.locator("td").all_text_contents() for r in flags.locator("tbody tr").all()]
        assert [c[0] for c in cells] == ["0.990", "0.930"]  # most similar first
        assert cells[1][2] == XSS[3] and cells[1][3] == "bench.jsonl:7" and cells[0][3] == "arena_hard.jsonl:q42"
        _check_inert(pg)
        pg = p.open(f"file://{hostile_site}/index.html#/index")
        pg.wait_for_selector("#index-plot .bars path")
        pg.wait_for_selector("#item-list .row")
        assert pg.locator("#item-list .row").count() == 4  # livecodebench, the first eval by name
        pg.select_option("select[aria-label=Eval]", "1")
        pg.wait_for_function("document.querySelectorAll('#item-list .row').length === 12")  # math500: 6 items x 2 repeats
        pg.select_option("select[aria-label=Result]", "wrong")
        pg.wait_for_selector("#item-list .row")
        wrong = pg.locator("#item-list .row").count()
        assert 0 < wrong < 12
        pg.locator("#item-list .row").first.click()
        assert "graded by" in pg.locator("#item-detail").text_content()
        _check_inert(pg)
        assert p.errors == []


def test_view_serves_the_site_on_loopback(hostile_site: Path):
    import subprocess
    import urllib.request

    proc = subprocess.Popen([sys.executable, "-m", "arena.cli", "view", str(hostile_site), "--port", "0"], stdout=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        m = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
        assert m, line
        body = urllib.request.urlopen(f"http://127.0.0.1:{m.group(1)}/index.html", timeout=10).read().decode()
        assert body == (hostile_site / "index.html").read_text(encoding="utf-8")
        data = urllib.request.urlopen(f"http://127.0.0.1:{m.group(1)}/data/summary.js", timeout=10).read()
        assert data == (hostile_site / "data" / "summary.js").read_bytes()
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_view_refuses_a_folder_without_a_report(tmp_path: Path):
    r = CliRunner().invoke(app, ["view", str(tmp_path)])
    assert r.exit_code == 2
    assert " ".join(r.output.split()) == f"error: {tmp_path}: no index.html here (write one with `arena report RUN_DIR --output {tmp_path}`)"
