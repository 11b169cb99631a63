"""SQL text the package writes: identifiers quoted."""


def quoted(name):
    """`name` as an SQL identifier (double quotes, inner ones doubled)."""
    return '"' + name.replace('"', '""') + '"'
