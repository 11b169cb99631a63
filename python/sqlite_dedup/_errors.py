"""The extension's error codes. Every error it raises begins
`<function>[<code>]: ` (`dedup[setting]: threshold must be in [0.0, 1.0], got 2`),
the code a word that stays the same from release to release: map the code,
never the words. `CODES` is `dedup_error_codes()` of the extension
(src/sqlite/ground/error.rs); a test holds the two equal.
"""
import re

#: Every code an error carries, in the docs' order (docs/errors.md).
CODES = ("setting", "no_table", "table", "own", "against", "stale", "state", "blocked", "plan",
         "argument", "busy", "interrupted", "full", "sqlite", "internal")

_FORM = re.compile(r"([a-z_0-9]+)\[([a-z_]+)\]: ")


def error_code(error):
    """The code of an error the extension raised (an exception of sqlite3,
    apsw or any host, or its message), e.g. "setting"; None for another
    error (SQLite's own, Python's)."""
    match = _FORM.match(str(error))
    if match and match.group(2) in CODES:
        return match.group(2)
    return None
