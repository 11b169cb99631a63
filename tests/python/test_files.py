"""`sqlite-dedup dedup IN -o OUT`: a corpus file (JSONL, .jsonl.gz, Parquet)
through the same run a table gets. The expected records are those a
`dedup_run()` on a table of the same rows keeps (parity-5k), written back
byte for byte; bad files are named with their line and leave no output."""
import gzip
import json
import os
import shutil
import sqlite3
import subprocess
import sys

import pytest

import pipeline as P


def cli(tmp_path, *args, stdin=None):
    env = dict(os.environ, PYTHONPATH=P.package(tmp_path))
    return subprocess.run([sys.executable, "-m", "sqlite_dedup", "dedup", *args], capture_output=True,
                          env=env, timeout=300, input=stdin)


def corpus_lines(tmp_path, rename=None):
    """parity-5k's rows as JSONL lines (with a field of their own), and the
    rowids a table run with default settings keeps."""
    P.require_corpus()
    conn = sqlite3.connect(os.path.join(P.CORPUS, "parity-5k.db"))
    cols = [r[1] for r in conn.execute("PRAGMA table_info(pages)")]
    lines = []
    for i, row in enumerate(conn.execute("SELECT * FROM pages ORDER BY rowid")):
        record = dict(zip(cols, row))
        record["extra"] = {"n": i, "note": "ünïcode"}
        if rename:
            record[rename[1]] = record.pop(rename[0])
        lines.append(json.dumps(record, ensure_ascii=False))
    conn.close()
    table = str(tmp_path / "table.db")
    shutil.copy(os.path.join(P.CORPUS, "parity-5k.db"), table)
    os.chmod(table, 0o644)
    run = P.connect(table)
    run.execute("SELECT dedup_run()").fetchone()
    kept = [r for (r,) in run.execute("SELECT rowid FROM pages ORDER BY rowid")]
    run.close()
    return lines, kept


def test_a_jsonl_file_keeps_the_records_a_table_run_keeps_byte_for_byte(tmp_path):
    lines, kept = corpus_lines(tmp_path)
    src = tmp_path / "in.jsonl"
    src.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "out.jsonl"
    done = cli(tmp_path, str(src), "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert f"kept {len(kept)} of 5000 records".encode() in done.stdout
    assert out.read_text(encoding="utf-8").splitlines() == [lines[r - 1] for r in kept]


def test_gzip_in_and_out_and_a_kept_database(tmp_path):
    lines, kept = corpus_lines(tmp_path, rename=("parsed", "body"))
    src = tmp_path / "in.jsonl.gz"
    with gzip.open(src, "wt", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    out, db = tmp_path / "out.jsonl.gz", tmp_path / "run.db"
    done = cli(tmp_path, str(src), "-o", str(out), "--db", str(db), "--columns", '{"parsed": "body"}')
    assert done.returncode == 0, done.stderr
    with gzip.open(out, "rt", encoding="utf-8") as f:
        assert f.read().splitlines() == [lines[r - 1] for r in kept]
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT count(*) FROM dedup_runs").fetchone()[0] == 1
    assert conn.execute("SELECT count(*) FROM pages").fetchone()[0] == len(kept)
    # The database is kept, so a second run into it is refused, not mixed.
    again = cli(tmp_path, str(src), "-o", str(tmp_path / "again.jsonl.gz"), "--db", str(db))
    assert again.returncode == 1 and b"--db must name a new file" in again.stderr
    assert not (tmp_path / "again.jsonl.gz").exists()


def test_a_parquet_file_keeps_every_column_of_the_kept_rows(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq
    lines, kept = corpus_lines(tmp_path)
    records = [json.loads(line) for line in lines]
    for r in records:
        r["extra"] = json.dumps(r["extra"])  # (one type a column)
    table = pa.Table.from_pylist(records)
    pq.write_table(table, tmp_path / "in.parquet")
    done = cli(tmp_path, str(tmp_path / "in.parquet"), "-o", str(tmp_path / "out.parquet"))
    assert done.returncode == 0, done.stderr
    got = pq.read_table(tmp_path / "out.parquet")
    assert got.schema == table.schema
    assert got.to_pylist() == [records[r - 1] for r in kept]


def test_text_is_read_as_the_parsed_text_and_settings_apply(tmp_path):
    text = "the same long paragraph of text about the crawl and its pages, said once"
    records = [{"url": "https://a.example/1", "text": text},
               {"url": "https://b.example/2", "text": text + "!"},
               {"url": "https://c.example/3", "text": "something else entirely, unlike the others"}]
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in records))
    out = tmp_path / "out.jsonl"
    assert cli(tmp_path, str(src), "-o", str(out)).returncode == 0
    # (Near duplicates: the election keeps the longer text.)
    assert [json.loads(line)["url"] for line in out.read_text().splitlines()] == \
        ["https://b.example/2", "https://c.example/3"]
    assert cli(tmp_path, str(src), "-o", str(out), "--threshold", "1.0").returncode == 0
    assert len(out.read_text().splitlines()) == 3


@pytest.mark.parametrize("content, said", [
    ('{"url": "https://a.example/"}\n[1, 2]\n', "in.jsonl line 2: must be a JSON object of the page's fields, got list"),
    ('{"url": "https://a.example/"}\n\n{"url": \n', "in.jsonl line 3: not a JSON object"),
    ('{"link": "https://a.example/"}\n', "in.jsonl line 1: has no 'url' field"),
])
def test_a_bad_record_is_named_by_its_line_and_nothing_is_written(tmp_path, content, said):
    src = tmp_path / "in.jsonl"
    src.write_text(content)
    done = cli(tmp_path, str(src), "-o", str(tmp_path / "out.jsonl"))
    assert done.returncode == 1
    assert said in done.stderr.decode(), done.stderr
    assert b"Traceback" not in done.stderr
    assert not (tmp_path / "out.jsonl").exists()


def test_a_bad_setting_is_the_runs_error_with_its_code(tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_text('{"url": "https://a.example/", "text": "x"}\n')
    done = cli(tmp_path, str(src), "-o", str(tmp_path / "out.jsonl"), "--threshold", "2")
    assert done.returncode == 1 and b"dedup[setting]: threshold must be in [0.0, 1.0], got 2" in done.stderr
    assert not (tmp_path / "out.jsonl").exists()
    done = cli(tmp_path, str(src), "-o", str(tmp_path / "out.txt"))
    assert done.returncode == 1 and b"must be .jsonl, .jsonl.gz or .parquet" in done.stderr


def test_stdin_to_stdout(tmp_path):
    records = b'{"url": "https://a.example/x", "text": "one"}\n{"url": "https://a.example/x?utm_source=y", "text": "one"}\n'
    done = cli(tmp_path, "-", "-o", "-", stdin=records)
    assert done.returncode == 0, done.stderr
    assert done.stdout == records.splitlines(keepends=True)[0]


def test_the_python_api(tmp_path, sqlite_dedup):
    src = tmp_path / "in.jsonl"
    src.write_text('{"url": "https://a.example/x", "body": "one two"}\n'
                   '{"url": "https://a.example/x?utm_source=y", "body": "one two"}\n')
    done = sqlite_dedup.dedup_file(str(src), str(tmp_path / "out.jsonl"), fields={"parsed": "body"}, threshold=0.8)
    assert (done["read"], done["kept"], done["db"]) == (2, 1, None)
    assert (tmp_path / "out.jsonl").read_text() == src.read_text().splitlines(keepends=True)[0]
    with pytest.raises(ValueError, match="in.jsonl line 1: has no 'link' field"):
        sqlite_dedup.dedup_file(str(src), str(tmp_path / "out.jsonl"), fields={"url": "link"})


def paragraph_records():
    """Three records sharing a long paragraph (the first, newest, owns it),
    with their own paragraphs, and the texts each must keep."""
    shared = ("A press release paragraph that every one of these pages quotes in full, word for word, "
              "long enough to be cut from the pages after the first.")
    own = ["The first page's own report on the council meeting, with the details that nobody else has printed so far.",
           "The second page adds an interview with the mayor about the bridge, and about what it will cost the town.",
           "The third page is a short blog post with the writer's own opinion on the bridge, the vote and the mayor."]
    records = [{"url": f"https://s{i}.example/a", "text": f"{own[i]}\n\n{shared}", "datetime": f"2024-05-0{3 - i}",
                "id": i} for i in range(3)]
    want = [records[0]["text"], own[1], own[2]]
    return records, want


def test_paragraphs_dedup_writes_the_cut_texts_in_their_field(tmp_path):
    records, want = paragraph_records()
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in records))
    out = tmp_path / "out.jsonl"
    done = cli(tmp_path, str(src), "-o", str(out), "--paragraphs", "dedup")
    assert done.returncode == 0, done.stderr
    got = [json.loads(line) for line in out.read_text().splitlines()]
    assert [g["text"] for g in got] == want
    assert [{k: v for k, v in g.items() if k != "text"} for g in got] == \
        [{k: v for k, v in r.items() if k != "text"} for r in records]
    # (The first record is as read, byte for byte.)
    assert out.read_text().splitlines()[0] == json.dumps(records[0])


def test_paragraphs_dedup_in_a_parquet_file(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq
    records, want = paragraph_records()
    pq.write_table(pa.Table.from_pylist(records), tmp_path / "in.parquet")
    done = cli(tmp_path, str(tmp_path / "in.parquet"), "-o", str(tmp_path / "out.parquet"), "--paragraphs", "dedup")
    assert done.returncode == 0, done.stderr
    got = pq.read_table(tmp_path / "out.parquet").to_pylist()
    assert [g["text"] for g in got] == want and [g["id"] for g in got] == [0, 1, 2]
