"""Ingest: formats, conversation shapes, field mapping, multi-turn, bad input."""

from __future__ import annotations

import gzip
import json

import pandas as pd
import pytest

from arena.errors import InputError
from benchbuilder.ingest import DropLog, FieldMap, IngestOptions, read_prompts


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_conversation_shapes_auto_detected(tmp_path):
    rows = [
        {"question_id": "a1", "conversation_a": [{"role": "user", "content": "arena first"}, {"role": "assistant", "content": "x"}, {"role": "user", "content": "arena second"}]},
        {"id": "s1", "conversations": [{"from": "human", "value": "sharegpt q"}, {"from": "gpt", "value": "ans"}]},
        {"id": "o1", "messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": [{"type": "text", "text": "openai parts"}]}]},
        {"question_id": "h1", "category": "arena-hard-v0.1", "turns": [{"content": "arena hard turn"}]},
        {"uid": "v2", "prompt": "arena hard v2 prompt"},
    ]
    recs = read_prompts(write_jsonl(tmp_path / "mix.jsonl", rows))
    assert [(r.source_id, r.prompt) for r in recs] == [
        ("a1", "arena first"), ("s1", "sharegpt q"), ("o1", "openai parts"), ("h1", "arena hard turn"), ("v2", "arena hard v2 prompt"),
    ]
    assert recs[0].n_turns == 2 and recs[0].line == 1 and recs[4].line == 5


def test_multi_turn_concat_with_cap(tmp_path):
    rows = [{"id": "c", "conversations": [{"from": "human", "value": "one"}, {"from": "gpt", "value": "r"}, {"from": "human", "value": "two " * 50}]}]
    p = write_jsonl(tmp_path / "c.jsonl", rows)
    (rec,) = read_prompts(p, IngestOptions(multi_turn="concat", max_chars=40))
    assert rec.prompt.startswith("one\n\ntwo two") and len(rec.prompt) <= 40 and rec.n_turns == 2
    (rec,) = read_prompts(p, IngestOptions(multi_turn="first"))
    assert rec.prompt == "one"


def test_field_mapping_and_formats(tmp_path):
    rows = [{"my_id": f"q{i}", "body": f"question number {i}"} for i in range(5)]
    opts = IngestOptions(fields=FieldMap(prompt="body", id="my_id"))
    df = pd.DataFrame(rows)
    df.to_csv(tmp_path / "p.csv", index=False)
    df.to_parquet(tmp_path / "p.parquet")
    (tmp_path / "p.json").write_text(json.dumps(rows))
    with gzip.open(tmp_path / "p.jsonl.gz", "wt") as f:
        f.write("".join(json.dumps(r) + "\n" for r in rows))
    for name in ("p.csv", "p.parquet", "p.json", "p.jsonl.gz"):
        recs = read_prompts(tmp_path / name, opts)
        assert [r.source_id for r in recs] == [f"q{i}" for i in range(5)], name
        assert recs[3].prompt == "question number 3"
    # CSV lines count the header: record 0 sits on line 2.
    assert read_prompts(tmp_path / "p.csv", opts)[0].line == 2


def test_wrong_field_mapping_names_file_line_field(tmp_path):
    p = write_jsonl(tmp_path / "w.jsonl", [{"text_x": "hello"}])
    with pytest.raises(InputError) as e:
        read_prompts(p, IngestOptions(fields=FieldMap(prompt="body")))
    assert e.value.path == str(p) and e.value.line == 1 and e.value.field == "body"
    assert "w.jsonl:line 1" in str(e.value)
    with pytest.raises(InputError) as e:
        read_prompts(p)  # nothing auto-detectable either
    assert e.value.line == 1


def test_unreadable_and_corrupt_files(tmp_path):
    with pytest.raises(InputError, match="not found"):
        read_prompts(tmp_path / "missing.jsonl")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"prompt": "ok"}\n{"prompt": broken\n')
    with pytest.raises(InputError) as e:
        read_prompts(bad)
    assert e.value.line == 2 and "bad.jsonl" in str(e.value)
    binary = tmp_path / "bin.jsonl.gz"
    binary.write_bytes(b"not gzip at all")
    with pytest.raises(InputError, match="cannot read"):
        read_prompts(binary)
    pq = tmp_path / "x.parquet"
    pq.write_bytes(b"PAR1garbage")
    with pytest.raises(InputError):
        read_prompts(pq)


def test_bad_prompts_are_counted_drops_with_location(tmp_path):
    huge = "x" * 1_000_001
    rows = [
        {"id": "ok", "prompt": "fine prompt"},
        {"id": "empty", "prompt": "   "},
        {"id": "none", "prompt": None},
        {"id": "int", "prompt": 42},
        {"id": "huge", "prompt": huge},
        {"id": "nouser", "conversations": [{"from": "gpt", "value": "only the bot"}]},
        {"id": "ok2", "prompt": "another fine prompt"},
    ]
    p = write_jsonl(tmp_path / "d.jsonl", rows)
    drops = DropLog()
    recs = read_prompts(p, drops=drops)
    assert [r.source_id for r in recs] == ["ok", "ok2"]
    assert drops.counts() == {"empty": 2, "non_string": 1, "too_large": 1, "no_user_turn": 1}
    where = {d.source_id: (d.source, d.line, d.reason) for d in drops.drops}
    assert where["huge"] == (str(p), 5, "too_large")
    assert where["int"] == (str(p), 4, "non_string")
    # nothing lost: every input line is either kept or dropped with a reason
    assert len(recs) + len(drops.drops) == len(rows)


def test_huggingface_dataset_offline(tmp_path, monkeypatch):
    datasets = pytest.importorskip("datasets")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    rows = [{"conversation_id": f"c{i}", "conversation": [{"role": "user", "content": f"hf prompt {i}"}, {"role": "assistant", "content": "a"}]} for i in range(4)]
    ds = datasets.Dataset.from_list(rows)
    ds.save_to_disk(str(tmp_path / "saved"))
    recs = read_prompts(tmp_path / "saved", IngestOptions(format="hf"))
    assert [r.prompt for r in recs] == [f"hf prompt {i}" for i in range(4)] and recs[0].source_id == "c0"
    # a hub-style dataset folder (data files + loader inference), loaded by name/path
    folder = tmp_path / "hub_like" / "data"
    folder.mkdir(parents=True)
    pd.DataFrame([{"id": "p1", "prompt": "from parquet shard"}]).to_parquet(folder / "train-00000.parquet")
    recs = read_prompts(str(tmp_path / "hub_like"), IngestOptions(format="hf"))
    assert [(r.source_id, r.prompt) for r in recs] == [("p1", "from parquet shard")]


def test_sharegpt_real_file(shared_data):
    drops = DropLog()
    recs = read_prompts(shared_data / "prompts" / "sharegpt_en.jsonl.gz", drops=drops)
    assert len(recs) + len(drops.drops) == 9126
    assert recs[0].source_id == "QWJhYvA_0" and recs[0].prompt.startswith("Summarize the main ideas")
