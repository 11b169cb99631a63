"""What the two commands share (`sqlite-dedup` and `sqlite-dedup spark`):
the near-mode options and the check that a path names a database file.
In a module of its own, so that neither command imports the other at
import time."""
import os


def database_problem(path):
    """Why `path` is no database file to open, named for the user (None
    when it may be one): missing (sqlite3.connect would create an empty
    database there), a folder, unreadable, or a file without SQLite's header
    (an empty file is an empty database)."""
    if os.path.isdir(path):
        return f"{path!r} is a folder, not a database file"
    if not os.path.isfile(path):
        return f"no database file {path!r}"
    try:
        with open(path, "rb") as f:
            head = f.read(16)
    except OSError as e:
        return f"cannot read the database file {path!r}: {e.strerror or e}"
    if head and head != b"SQLite format 3\x00":
        return f"{path!r} is not a SQLite database (it does not begin with SQLite's header)"
    return None


def add_near_mode_options(parser):
    """The near-mode options (near_mode and the lsh_* settings), shared by
    `sqlite-dedup run/plan` and `sqlite-dedup spark run`."""
    parser.add_argument("--near-mode", "--mode", dest="mode", choices=["window", "lsh"],
                        help="near-duplicate candidates (setting near_mode; default window)")
    parser.add_argument("--lsh-bands", type=int, help="lsh mode: bands of the signature (32)")
    parser.add_argument("--lsh-rows", type=int, help="lsh mode: signature values per band (4)")
    parser.add_argument("--lsh-election", choices=["chain", "direct"],
                        help="lsh mode: 'direct' (default) removes a row only for a survivor it is near "
                             "(no drift); 'chain' is the window scan's election")
