"""What the two commands share (`sqlite-dedup` and `sqlite-dedup spark`):
the settings' flags (from the extension's table of settings), the
near-mode options and the check that a path names a database file.
In a module of its own, so that neither command imports the other at
import time."""
import os

from sqlite_dedup._declared import SETTINGS

#: How a flag reads its value, by the setting's kind.
_TYPES = {"unit": float, "integer": int, "text": str, "json": str, "choice": str}


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


def add_setting_flags(parser, skip=(), helps=None):
    """A flag for each setting the extension's table gives one (its name,
    type, choices and help there; `helps` overrides a help by setting),
    but those in `skip`; each stored under the setting's name."""
    for s in SETTINGS:
        cli = s["cli"]
        if cli is None or s["name"] in skip:
            continue
        options = {"dest": s["name"], "type": _TYPES[s["kind"]],
                   "help": (helps or {}).get(s["name"], cli["help"])}
        if s["choices"]:
            options["choices"] = s["choices"]
        if cli["metavar"]:
            options["metavar"] = cli["metavar"]
        parser.add_argument(cli["flag"], **options)


def given_settings(args):
    """The settings of the flags `add_setting_flags` added that were given."""
    values = {s["name"]: getattr(args, s["name"], None) for s in SETTINGS if s["cli"]}
    return {k: v for k, v in values.items() if v is not None}


def add_near_mode_options(parser):
    """The near-mode options that are not a flag of the table's form
    (near_mode also as --mode), shared by `sqlite-dedup run/plan` and
    `sqlite-dedup spark run`."""
    parser.add_argument("--near-mode", "--mode", dest="mode", choices=["window", "lsh"],
                        help="near-duplicate candidates (setting near_mode; default window)")
    parser.add_argument("--lsh-election", choices=["chain", "direct"],
                        help="lsh mode: 'direct' (default) removes a row only for a survivor it is near "
                             "(no drift); 'chain' is the window scan's election")
