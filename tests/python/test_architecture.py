"""ARCHITECTURE.md's lists are the code's: every temp object a run makes
(what the SQL phases and the Rust runner create) is in plan::TEMP_OBJECTS,
which drops them, and on the page, and nothing else is; every table, view
and trigger of the extension's own that the code creates, or that a run
leaves in a database, is on the page."""
import glob
import os
import re
import shutil

import pipeline as P

PAGE = os.path.join(P.ROOT, "ARCHITECTURE.md")
CREATE_TEMP = re.compile(
    r"CREATE\s+(?:TEMP|TEMPORARY)\s+(TABLE|VIEW|TRIGGER)\s+(?:IF\s+NOT\s+EXISTS\s+)?(?:temp\.)?\"?([A-Za-z_]\w*)"
    r"|CREATE\s+(TABLE|VIEW)\s+(?:IF\s+NOT\s+EXISTS\s+)?temp\.([A-Za-z_]\w*)", re.I)


def sources():
    return sorted(glob.glob(os.path.join(P.ROOT, "sql", "**", "*.sql"), recursive=True)
                  + glob.glob(os.path.join(P.ROOT, "src", "**", "*.rs"), recursive=True))


def created_temp_objects():
    """The temp objects the code creates: name -> kind."""
    found = {}
    for path in sources():
        for m in CREATE_TEMP.finditer(open(path, encoding="utf-8").read()):
            found[m.group(2) or m.group(4)] = (m.group(1) or m.group(3)).upper()
    # (One view's name is a constant: `CREATE TEMP VIEW {VIEW}`.)
    keys = open(os.path.join(P.ROOT, "src", "sqlite", "pipeline", "incremental", "index_keys.rs")).read()
    found[re.search(r'pub const VIEW: &str = "(\w+)"', keys).group(1)] = "VIEW"
    found.pop("VIEW", None)
    return found


def listed_temp_objects():
    """plan::TEMP_OBJECTS and plan::TEMP_INPUTS: name -> kind."""
    text = open(os.path.join(P.ROOT, "src", "sqlite", "pipeline", "run", "plan.rs")).read()
    body = text[text.index("pub const TEMP_OBJECTS"):]
    body = body[:body.index("];")]
    listed = dict((n, k) for k, n in re.findall(r'\("(TABLE|VIEW|TRIGGER)", "(\w+)"\)', body))
    inputs = text[text.index("pub const TEMP_INPUTS"):]
    inputs = inputs[:inputs.index("];")]
    listed.update((n, k) for k, n in re.findall(r'\("(TABLE|VIEW|TRIGGER)", "(\w+)"\)', inputs))
    if "index_keys::VIEW" in body:
        listed["_dedup_index_keys"] = "VIEW"
    count = sum(int(n) for n in re.findall(r"TEMP_(?:OBJECTS|INPUTS): \[\(&str, &str\); (\d+)\]", text))
    assert count == len(listed), (count, len(listed))
    return listed


def page_section(title):
    text = open(PAGE, encoding="utf-8").read()
    start = text.index(f"## {title}")
    end = text.find("\n## ", start + 1)
    return text[start:end if end > 0 else None]


def test_temp_objects_created_listed_and_on_the_page_are_the_same():
    created, listed = created_temp_objects(), listed_temp_objects()
    assert created == listed, {"created, not listed": sorted(set(created) - set(listed)),
                               "listed, not created": sorted(set(listed) - set(created))}
    shown = set(re.findall(r"`(_dedup_\w+)`", page_section("One run's data flow")))
    assert shown == set(listed), {"not on the page": sorted(set(listed) - shown),
                                  "on the page only": sorted(shown - set(listed))}


def own_objects_in_code():
    names = set()
    for path in sources() + glob.glob(os.path.join(P.ROOT, "python", "**", "*.py"), recursive=True):
        text = open(path, encoding="utf-8").read()
        names |= set(re.findall(r"CREATE\s+(?:TABLE|VIEW)\s+(?:IF\s+NOT\s+EXISTS\s+)?(?:main\.)?\"?(dedup_\w+)", text))
    names.add("dedup_pending_plan")  # (_tasks.py names it by a constant)
    return names


def page_names():
    """The names on the page's table of own tables (a `dedup_track_x_*`
    pattern matches its triggers)."""
    section = page_section("The extension's own tables")
    return set(re.findall(r"`(dedup_\w+\*?)`", section))


def on_page(name, shown):
    return name in shown or any(s.endswith("*") and name.startswith(s[:-1]) for s in shown)


def test_every_own_table_the_code_creates_is_on_the_page():
    shown = page_names()
    missing = sorted(n for n in own_objects_in_code() if not on_page(n, shown))
    assert not missing, missing


def test_every_own_object_a_run_leaves_is_on_the_page(tmp_path):
    db = str(tmp_path / "demo.db")
    shutil.copy(P.DEMO, db)
    conn = P.connect(db)
    conn.execute("SELECT dedup_run()").fetchone()
    conn.execute("INSERT INTO pages (url, parsed) VALUES ('https://x.example/new', 'a new page')")
    conn.execute("SELECT dedup_run()").fetchone()
    left = [n for (n,) in conn.execute(
        "SELECT name FROM sqlite_schema WHERE name LIKE 'dedup~_%' ESCAPE '~' AND type IN ('table', 'view', 'trigger')")]
    assert len(left) > 20
    shown = page_names()
    assert all(on_page(n, shown) for n in left), [n for n in left if not on_page(n, shown)]


MEASURED = re.compile(r"^\s*(?://|--).*\b\d+(?:\.\d+)? ?(?:s|ms|us|µs)\b")
CITED = re.compile(r'design-measurements\.md, "([^"]+)"')


def test_measured_times_live_in_benches_results_and_every_citation_names_a_heading():
    """A comment says why; the seconds that decided it are in
    benches/results/design-measurements.md, under the heading the comment
    names (and no comment of src/ or sql/ gives a time itself)."""
    page = open(os.path.join(P.ROOT, "benches", "results", "design-measurements.md"), encoding="utf-8").read()
    headings = set(re.findall(r"^## (.+)$", page, re.M))
    timed, cited = [], []
    for path in sources():
        text = open(path, encoding="utf-8").read()
        timed += [f"{os.path.relpath(path, P.ROOT)}:{n}" for n, line in enumerate(text.splitlines(), 1)
                  if MEASURED.search(line)]
        joined = " ".join(re.sub(r"\n\s*(?://[/!]?|--)", " ", text).split())  # (a citation may span lines)
        cited += [(os.path.relpath(path, P.ROOT), h) for h in CITED.findall(joined)]
    assert timed == [], timed
    assert len(cited) >= 10
    assert [c for c in cited if c[1] not in headings] == []


def test_a_phase_script_drops_only_tables_that_may_not_exist():
    """A plan runs under a statement that reads (dedup_similar's table
    form), where SQLite refuses to drop a table: the phase scripts drop a
    table only with IF EXISTS, before making it (absent in a fresh plan),
    and empty one they are done with (DELETE) instead of dropping it."""
    found = []
    for path in glob.glob(os.path.join(P.ROOT, "sql", "**", "*.sql"), recursive=True):
        text = re.sub(r"--[^\n]*", "", open(path, encoding="utf-8").read())
        found += [(os.path.relpath(path, P.ROOT), m.group(0))
                  for m in re.finditer(r"DROP\s+(?:TABLE|INDEX)\s+(?!IF\s+EXISTS)\S+", text, re.I)]
    assert found == []


def test_the_readmes_layout_names_files_and_rooms_that_exist():
    """Issue 78: the README's Layout named `settings.rs` and `src/lcs.rs`
    after they moved. Every file it names exists under src/ (by its name),
    and every room of the bindings ARCHITECTURE.md draws is named."""
    text = open(os.path.join(P.ROOT, "README.md"), encoding="utf-8").read()
    layout = text.split("## Layout", 1)[1].split("\n## ", 1)[0]
    files = {os.path.basename(p) for p in glob.glob(os.path.join(P.ROOT, "src", "**", "*.rs"), recursive=True)}
    named = set(re.findall(r"`([a-z_0-9]+\.rs)`", layout))
    assert named and not named - files, sorted(named - files)
    rooms = set(re.findall(r"^\| \d+ \| `([a-z_]+)/` \|", page_section("The bindings' rooms"), flags=re.M))
    assert {"pipeline", "vtab", "url_learner", "settings", "tables", "functions", "ground"} <= rooms, rooms
    assert all(f"`{room}/`" in layout for room in rooms), [r for r in rooms if f"`{r}/`" not in layout]
    for path in re.findall(r"`(src/[^`]+)`", text + open(os.path.join(P.ROOT, "Cargo.toml")).read()):
        assert os.path.exists(os.path.join(P.ROOT, path.rstrip("/"))), path
