"""The Hugging Face path of the loaders (``datasets.load_dataset``), offline.

Each test writes a dataset directory in the published layout and column schema of its hub
repository (file names, splits, configs, column types), points the loader at it and runs
the real ``load_dataset`` code path in a child process with ``HF_DATASETS_OFFLINE=1`` and
``HF_HUB_OFFLINE=1`` (both read when ``datasets`` is imported) and an empty HF cache.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

LOAD = """
import json, sys
from arena.index.datasets import load_eval
out = {}
for name, source in json.loads(sys.argv[1]).items():
    out[name] = [{"id": i.item_id, "q": i.question, "a": i.answer, "options": list(i.options), "meta": i.meta}
                 for i in load_eval(name, source)]
print(json.dumps(out))
"""


def _load_offline(tmp_path: Path, sources: dict[str, str]) -> dict[str, list[dict]]:
    env = {**os.environ, "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf_home"),
           "HF_DATASETS_CACHE": str(tmp_path / "hf_cache")}
    res = subprocess.run([sys.executable, "-c", LOAD, json.dumps(sources)], capture_output=True, text=True, env=env, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(res.stdout.strip().splitlines()[-1])


def _mmlu_pro_repo(root: Path) -> Path:
    """TIGER-Lab/MMLU-Pro: ``data/{test,validation}-00000-of-00001.parquet``."""
    schema = pa.schema([("question_id", pa.int64()), ("question", pa.string()), ("options", pa.list_(pa.string())),
                        ("answer", pa.string()), ("answer_index", pa.int64()), ("cot_content", pa.string()),
                        ("category", pa.string()), ("src", pa.string())])
    rows = {
        "test": [(70, "Which gas is most abundant in air?", ["Oxygen", "Nitrogen", "Argon", "CO2", "Neon", "Helium", "Hydrogen", "Xenon", "Krypton", "Radon"], "B", 1, "", "chemistry", "ori_mmlu-x"),
                 (71, "2 + 2 = ?", ["3", "5", "4"], "C", 2, "", "math", "stemez-x")],
        "validation": [(0, "A validation question", ["a", "b", "c", "d"], "A", 0, "A: Let's think step by step.", "law", "cot_lib-x")],
    }
    (root / "data").mkdir(parents=True)
    for split, data in rows.items():
        table = pa.Table.from_pylist([dict(zip(schema.names, r)) for r in data], schema=schema)
        pq.write_table(table, root / "data" / f"{split}-00000-of-00001.parquet")
    return root


def _math500_repo(root: Path) -> Path:
    """HuggingFaceH4/MATH-500: one ``test.jsonl`` at the root."""
    root.mkdir(parents=True)
    rows = [{"problem": "What is $\\frac{1}{2}+\\frac{1}{3}$?", "solution": "... $\\boxed{\\frac{5}{6}}$", "answer": "\\frac{5}{6}",
             "subject": "Prealgebra", "level": 2, "unique_id": "test/prealgebra/1.json"},
            {"problem": "Solve $x+1=3$.", "solution": "$x=\\boxed{2}$", "answer": "2", "subject": "Algebra", "level": 1,
             "unique_id": "test/algebra/7.json"}]
    (root / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return root


GPQA_COLUMNS = ["Pre-Revision Question", "Pre-Revision Correct Answer", "Pre-Revision Incorrect Answer 1",
                "Pre-Revision Incorrect Answer 2", "Pre-Revision Incorrect Answer 3", "Pre-Revision Explanation",
                "Self-reported question-writing time (minutes)", "Question", "Correct Answer", "Incorrect Answer 1",
                "Incorrect Answer 2", "Incorrect Answer 3", "Explanation", "Revision Comments (from Question Writer)",
                "Subdomain", "Writer's Difficulty Estimate", "Extra Revised Question", "Extra Revised Explanation",
                "Extra Revised Correct Answer", "Extra Revised Incorrect Answer 1", "Extra Revised Incorrect Answer 2",
                "Extra Revised Incorrect Answer 3", "Non-Expert Validator Accuracy", "Majority Non-Expert Vals Incorrect",
                "Expert Validator Accuracy", "Record ID", "High-level domain", "Question Writer"]


def _gpqa_repo(root: Path) -> Path:
    """Idavidrein/gpqa: one CSV per subset and a README whose YAML names a config per CSV."""
    root.mkdir(parents=True)
    readme = "---\nconfigs:\n" + "".join(f"- config_name: {c}\n  data_files: {c}.csv\n" for c in ("gpqa_extended", "gpqa_main", "gpqa_diamond", "gpqa_experts")) + "---\n"
    (root / "README.md").write_text(readme)

    def frame(prefix: str, n: int) -> pd.DataFrame:
        rows = []
        for i in range(n):
            row = {c: "" for c in GPQA_COLUMNS}
            row.update({"Question": f" {prefix} question {i}?\n", "Correct Answer": f"right {i} ", "Incorrect Answer 1": "w1",
                        "Incorrect Answer 2": "w2", "Incorrect Answer 3": "w3", "Record ID": f"rec{prefix}{i}",
                        "High-level domain": "Physics", "Self-reported question-writing time (minutes)": 30.0,
                        "Expert Validator Accuracy": 1.0})
            rows.append(row)
        return pd.DataFrame(rows, columns=GPQA_COLUMNS)

    for name, n in (("gpqa_extended", 4), ("gpqa_main", 3), ("gpqa_diamond", 2), ("gpqa_experts", 1)):
        frame(name, n).to_csv(root / f"{name}.csv", index=False)
    return root


def test_hub_layouts_load_offline(tmp_path):
    sources = {
        "mmlu_pro": str(_mmlu_pro_repo(tmp_path / "TIGER-Lab__MMLU-Pro")),
        "math500": str(_math500_repo(tmp_path / "HuggingFaceH4__MATH-500")),
        "gpqa_diamond": str(_gpqa_repo(tmp_path / "Idavidrein__gpqa")),
    }
    got = _load_offline(tmp_path, sources)

    # MMLU-Pro: the test split only (not validation), options as a list, letter answers.
    mp = got["mmlu_pro"]
    assert [i["id"] for i in mp] == ["70", "71"]
    assert mp[0]["options"][1] == "Nitrogen" and len(mp[0]["options"]) == 10 and mp[0]["a"] == "B"
    assert mp[1]["options"] == ["3", "5", "4"] and mp[1]["a"] == "C" and mp[1]["meta"]["category"] == "math"
    # MATH-500: ids, LaTeX answers and metadata carried through.
    m5 = got["math500"]
    assert [(i["id"], i["a"]) for i in m5] == [("test/prealgebra/1.json", "\\frac{5}{6}"), ("test/algebra/7.json", "2")]
    assert m5[0]["meta"] == {"subject": "Prealgebra", "level": 2}
    # GPQA: the gpqa_diamond config (2 rows), not main/extended; stripped text, correct answer first.
    gp = got["gpqa_diamond"]
    assert [i["id"] for i in gp] == ["recgpqa_diamond0", "recgpqa_diamond1"]
    assert gp[0]["q"] == "gpqa_diamond question 0?" and gp[0]["options"] == ["right 0", "w1", "w2", "w3"] and gp[0]["a"] == "A"
    assert gp[0]["meta"]["domain"] == "Physics"


def test_offline_hub_id_without_local_copy_fails_clearly(tmp_path):
    env = {**os.environ, "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf_home"),
           "HF_DATASETS_CACHE": str(tmp_path / "hf_cache")}
    code = "from arena.index.datasets import load_eval\nload_eval('math500')"
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert res.returncode != 0
    assert "HuggingFaceH4/MATH-500" in res.stderr
