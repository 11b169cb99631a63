"""The writes no implementation of a run can avoid, measured on a copy of the
database a run was timed on (issue 29's write floor): shared by
benches/pipeline.py (full runs) and benches/incremental.py (a batch)."""
import os
import sqlite3
import time


def floor_write(path, removed, rewritten, secure_delete):
    """The writes no implementation can avoid, timed once on the copy `path`
    (then deleted): the removed rows copied to an archive table and deleted,
    and the survivors' old URLs kept and their URLs rewritten (the floor of
    issue 29), in one transaction."""
    conn = sqlite3.connect(path, isolation_level=None)
    if secure_delete:
        conn.execute(f"PRAGMA secure_delete = {secure_delete}")
    conn.execute("CREATE TEMP TABLE gone (id INTEGER PRIMARY KEY)")
    conn.executemany("INSERT INTO gone VALUES (?)", [(r,) for r in removed])
    conn.execute("CREATE TEMP TABLE new_url (id INTEGER PRIMARY KEY, url TEXT)")
    conn.executemany("INSERT INTO new_url VALUES (?, ?)", rewritten)
    start = time.perf_counter()
    conn.execute("BEGIN")
    conn.execute("CREATE TABLE archive AS SELECT * FROM pages WHERE 0")
    conn.execute("INSERT INTO archive SELECT * FROM pages WHERE rowid IN (SELECT id FROM temp.gone)")
    conn.execute("DELETE FROM pages WHERE rowid IN (SELECT id FROM temp.gone)")
    conn.execute("CREATE TABLE old_url AS SELECT rowid AS id, url FROM pages WHERE rowid IN "
                 "(SELECT id FROM temp.new_url)")
    conn.execute("UPDATE pages SET url = (SELECT url FROM temp.new_url AS n WHERE n.id = pages.rowid) "
                 "WHERE rowid IN (SELECT id FROM temp.new_url)")
    conn.execute("COMMIT")
    seconds = time.perf_counter() - start
    conn.close()
    os.remove(path)
    return seconds
