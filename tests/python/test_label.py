"""`{"action": "label"}`: the same phases as a deleting run, every row
labelled with its cluster in dedup_clusters, nothing deleted (docs/pipeline.md,
"Labels, nothing deleted"). The expected labels come from a deleting run
with the same settings on a copy: its survivors, and its archive
(dedup_removed) read as survivor chains, which the label run's code never
writes."""
import json
import shutil
import sqlite3

import pytest

import pipeline as P


def chains(removed):
    """Each removed rowid's final survivor, following the archive's
    dedup_survivor until a row that was kept or removed with none."""
    out = {}
    for rowid in removed:
        at = rowid
        while removed.get(at) is not None:
            at = removed[at]
        out[rowid] = at
    return out


@pytest.mark.parametrize("settings", [{}, {"near_mode": "lsh"}, {"threshold": 0.8, "n_min": 3}])
def test_the_labels_are_the_deleting_runs_survivors_and_removals(tmp_path, settings):
    labelled = P.copy_corpus(tmp_path)
    deleted = str(tmp_path / "deleted.db")
    shutil.copy(labelled, deleted)
    rows_before = {r for (r,) in sqlite3.connect(labelled).execute("SELECT rowid FROM pages")}

    conn = P.connect(deleted)
    conn.execute("SELECT dedup_run(?)", (json.dumps(settings),)).fetchone()
    kept = {r for (r,) in conn.execute("SELECT rowid FROM pages")}
    archive = {r: (phase, reason, survivor, ratio) for r, phase, reason, survivor, ratio in conn.execute(
        "SELECT dedup_rowid, dedup_phase, dedup_reason, dedup_survivor, dedup_ratio FROM dedup_removed")}
    conn.close()
    final = chains({r: a[2] for r, a in archive.items()})

    before = P.fingerprint(labelled)
    conn = P.connect(labelled)
    report = conn.execute("SELECT dedup_run(?)", (json.dumps({**settings, "action": "label"}),)).fetchone()[0]
    assert f"{len(rows_before)} rows in dedup_clusters, nothing deleted" in report
    labels = {r[0]: r[1:] for r in conn.execute(
        "SELECT dedup_rowid, cluster, kept, phase, reason, survivor, ratio FROM dedup_clusters")}
    conn.close()
    after = P.fingerprint(labelled)
    assert set(after) - set(before) == {"dedup_clusters"}
    assert {k: v for k, v in after.items() if k != "dedup_clusters"} == before

    assert set(labels) == rows_before
    assert {r for r, label in labels.items() if label[1] == 1} == kept
    for rowid, (cluster, is_kept, phase, reason, survivor, ratio) in labels.items():
        if is_kept:
            assert (cluster, phase, reason, survivor, ratio) == (rowid, None, None, None, None)
        else:
            assert (phase, reason, survivor) == archive[rowid][:3], rowid
            assert ratio == pytest.approx(archive[rowid][3]) if ratio is not None else archive[rowid][3] is None
            assert cluster == final[rowid], rowid
    # Every cluster's representative is its own cluster.
    assert all(labels[c][0] == c for c, *_ in labels.values())
    assert len({c for c, *_ in labels.values()}) < len(rows_before)


def test_a_second_label_run_replaces_the_table_and_its_triggers(tmp_path):
    db = P.copy_corpus(tmp_path)
    conn = P.connect(db)
    conn.execute("""SELECT dedup_run('{"action": "label"}')""").fetchone()
    first = conn.execute("SELECT * FROM dedup_clusters ORDER BY 1").fetchall()
    conn.executescript("""CREATE TABLE log (x);
        CREATE TRIGGER spy AFTER INSERT ON dedup_clusters BEGIN INSERT INTO log VALUES (NEW.dedup_rowid); END;
        INSERT INTO dedup_clusters VALUES (-1, -1, 1, NULL, NULL, NULL, NULL);""")
    conn.execute("""SELECT dedup_run('{"action": "label"}')""").fetchone()
    assert conn.execute("SELECT * FROM dedup_clusters ORDER BY 1").fetchall() == first
    assert conn.execute("SELECT count(*) FROM log").fetchone()[0] == 1  # (the hand-made row only)


def test_label_is_refused_where_it_cannot_label(tmp_path):
    db = P.copy_corpus(tmp_path)
    before = P.fingerprint(db)
    conn = P.connect(db)
    with pytest.raises(sqlite3.OperationalError, match=r"dedup_plan\[setting\]: action 'label' works with dedup_run only"):
        conn.execute("""SELECT dedup_plan('{"action": "label"}')""").fetchone()
    with pytest.raises(sqlite3.OperationalError, match=r"dedup\[setting\]: action 'label' cannot be combined with against"):
        conn.execute("SELECT dedup_run(?)", (json.dumps({"action": "label", "against": db}),)).fetchone()
    with pytest.raises(sqlite3.OperationalError, match=r"dedup\[setting\]: action must be 'delete'"):
        conn.execute("""SELECT dedup_run('{"action": "tag"}')""").fetchone()
    conn.execute("CREATE VIEW dedup_clusters AS SELECT 1")
    with pytest.raises(sqlite3.OperationalError, match=r"dedup\[own\]: dedup_clusters must be the table"):
        conn.execute("""SELECT dedup_run('{"action": "label"}')""").fetchone()
    conn.execute("DROP VIEW dedup_clusters")
    conn.close()
    assert P.fingerprint(db) == before


def test_the_command_line_labels(tmp_path):
    import subprocess
    import sys
    db = P.copy_corpus(tmp_path)
    env = dict(__import__("os").environ, PYTHONPATH=P.package(tmp_path))
    out = subprocess.run([sys.executable, "-m", "sqlite_dedup", "run", db, "--action", "label"],
                         capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT count(*) FROM dedup_clusters").fetchone()[0] == \
        conn.execute("SELECT count(*) FROM pages").fetchone()[0]
