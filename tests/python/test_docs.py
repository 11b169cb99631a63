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

PAGES = [os.path.join(P.ROOT, "README.md")] + sorted(glob.glob(os.path.join(P.ROOT, "docs", "*.md")))


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
    args = ["sqlite3", ":memory:", f".load {P.EXTENSION}"]
    if before:
        args += [".output /dev/null"] + before + [".output stdout"]
    if expected.startswith("┌"):
        args.append(".mode box")
    args.append(statement)
    # From the checkout's root, as the pages' relative paths assume.
    run = subprocess.run(args, capture_output=True, text=True, cwd=P.ROOT)
    got = run.stdout.rstrip("\n")
    if run.stderr:
        # The shell run from the command line says "Error: stepping, <message>"
        # where the interactive one says "Error: <message>".
        err = re.sub(r"^Error: (stepping|in prepare), ", "Error: ", run.stderr.strip())
        err = re.sub(r" \(\d+\)$", "", err)
        got = (got + "\n" + err).strip("\n")
    assert got == expected
