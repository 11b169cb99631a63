"""Every `sqlite>` example of the README (and of docs/*.md) is run through
the sqlite3 shell with the built extension, and its printed output compared
with what the page shows, so the documentation cannot drift. Each code block
is one session: a statement runs after the block's earlier statements (their
output discarded), in a fresh in-memory database."""
import glob
import os
import re
import subprocess

import pytest

import pipeline as P

PAGES = [os.path.join(P.ROOT, "README.md")] + sorted(glob.glob(os.path.join(P.ROOT, "docs", "**", "*.md"), recursive=True))


def examples():
    """(page, block number, statements before, statement, expected output)."""
    out = []
    for page in PAGES:
        text = open(page).read()
        for n, block in enumerate(re.findall(r"```[a-z]*\n(.*?)```", text, re.S)):
            if "sqlite> " not in block:
                continue
            statements = []  # [statement, expected lines]
            for line in block.splitlines():
                if line.startswith("sqlite> "):
                    statements.append([line[len("sqlite> "):], []])
                elif line.startswith("   ...> ") and statements:
                    statements[-1][0] += "\n" + line[len("   ...> "):]
                elif statements:
                    statements[-1][1].append(line)
            for k, (statement, expected) in enumerate(statements):
                out.append((os.path.basename(page), n, [s for s, _ in statements[:k]], statement,
                            "\n".join(expected).rstrip("\n")))
    return out


EXAMPLES = examples()


def test_there_are_examples():
    assert len(EXAMPLES) >= 20


@pytest.mark.parametrize("page,block,before,statement,expected", EXAMPLES,
                         ids=[f"{e[0]}:{e[1]}:{e[3][:40]}" for e in EXAMPLES])
def test_example_prints_what_the_page_shows(page, block, before, statement, expected):
    def shell(lines):
        # A script on standard input: as in the interactive shell, an error
        # does not stop the statements after it.
        script = "\n".join([f".load {P.EXTENSION}"] + lines) + "\n"
        # From the checkout's root, as the pages' relative paths assume.
        return subprocess.run(["sqlite3", ":memory:"], input=script, capture_output=True, text=True, cwd=P.ROOT)

    quiet = [".output /dev/null"] + [b if b.startswith(".") else b.rstrip(";") + ";" for b in before] + [".output stdout"]
    mode = [".mode box"] if expected.startswith("┌") else []
    final = statement if statement.startswith(".") else statement.rstrip(";") + ";"
    run = shell((quiet if before else []) + mode + [final])
    got = run.stdout.rstrip("\n")
    stderr = run.stderr
    if before:
        # The earlier statements' own errors (shown in the page above) come first.
        earlier = shell(quiet).stderr
        assert stderr.startswith(earlier)
        stderr = stderr[len(earlier):]
    if stderr:
        # A script says "Runtime error near line N: <message>" where the
        # interactive shell says "Error: <message>".
        err = re.sub(r"^(Runtime|Parse) error near line \d+: ", "Error: ", stderr.strip())
        err = re.sub(r" \(\d+\)$", "", err)
        got = (got + "\n" + err).strip("\n")
    assert got == expected


def test_the_settings_reference_lists_every_setting_the_extension_declares():
    """docs/pipeline.md's table of settings has a row for each setting of
    dedup_settings_table() (src/sqlite/settings/declared.rs), and no other,
    each with the default the extension has."""
    import json
    text = open(os.path.join(P.ROOT, "docs", "pipeline.md")).read()
    table = text[text.index("| key | default | meaning |"):]
    table = table[:table.index("\n\n")]
    rows = {m.group(1): m.group(2) for m in re.finditer(r"^\| `(\w+)` \| ([^|]*) \|", table, re.M)}
    declared = json.loads(P.connect(":memory:").execute("SELECT dedup_settings_table()").fetchone()[0])
    assert sorted(rows) == sorted(s["name"] for s in declared)
    for s in declared:
        shown, default = rows[s["name"]].strip(), s["default"]
        if isinstance(default, (int, float)) and not isinstance(default, bool) and s["kind"] != "flag":
            assert shown.split()[0] == format(default, "g"), (s["name"], shown, default)
        elif s["kind"] == "choice":
            assert shown.startswith(f"`'{default}'`"), (s["name"], shown, default)
