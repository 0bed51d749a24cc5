"""`arena run` ends by writing its report and printing where it is; the report opens in Chromium."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).parent))
from browser import Page, browser  # noqa: E402

MODELS = ["model-a", "a-model-with-a-rather-long-name-that-a-terminal-table-would-normally-cut-short"]


def test_arena_run_writes_the_report(fake_server, tmp_path: Path):
    srv = fake_server({})
    q = tmp_path / "question.jsonl"
    q.write_text("".join(json.dumps({"question_id": f"q{i}", "category": "c", "turns": [{"content": f"Explain {i}."}]}) + "\n" for i in range(6)))
    ep = {"base_url": srv.url, "max_retries": 1, "timeout": 5.0}
    cfg = {"questions": str(q), "output_dir": str(tmp_path / "run"),
           "endpoints": {**{m: {"model": m, **ep} for m in [*MODELS, "baseline"]}, "judge": {"model": "judge-model", **ep}},
           "answers": {"models": [*MODELS, "baseline"]}, "judge": {"endpoint": "judge", "baseline": "baseline", "models": MODELS},
           "show": {"bootstrap": 20, "seed": 0}}
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(cfg))
    res = subprocess.run([sys.executable, "-m", "arena.cli", "run", "--config", str(path)], capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    index = (tmp_path / "run" / "report" / "index.html").resolve()
    assert index.is_file()
    assert res.stdout.strip().splitlines()[-1] == f"report: {index}"
    assert MODELS[1] in res.stdout  # the leaderboard never cuts a model name
    with browser() as b:
        p = Page(b)
        pg = p.open(f"file://{index}#/leaderboard")
        names = pg.locator("#leaderboard-table td.model a").all_text_contents()
        assert sorted(names) == sorted([*MODELS, "baseline"])
        pg = p.open(f"file://{index}#/battles/0/{MODELS[0]}/q3")
        pg.wait_for_selector("#battle-detail .judgment")
        assert pg.locator("#battle-detail .pane h3").first.text_content().startswith("Prompt q3")
        assert "Explain 3." in pg.locator("#battle-detail .pane").first.text_content()
        assert p.errors == []
