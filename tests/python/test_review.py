"""The review page (sqlite_dedup.review; `sqlite-dedup report`, the Datasette
plugin's /-/dedup-review/DB): in a real browser, Debian's Chromium headless
driven by Selenium, on the demo crawl after a run: the page loads with every
removed row, a filter narrows the list to what the archive holds for it,
and a diff highlights words that are in one text and not the other. The
screenshot is kept in target/test-artifacts/."""
import json
import os
import shutil
import subprocess

import pytest

import pipeline as P
from test_cli import cli

ARTIFACTS = os.path.join(P.ROOT, "target", "test-artifacts")


def browser():
    """A headless Chromium under Selenium, or a skip (a failure in CI)."""
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        missing = "selenium (pip install selenium)"
    else:
        driver = shutil.which("chromedriver")
        chromium = shutil.which("chromium")
        if driver and chromium:
            options = webdriver.ChromeOptions()
            options.binary_location = chromium
            for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1400,1400"):
                options.add_argument(arg)
            return webdriver.Chrome(service=Service(driver), options=options)
        missing = "chromium and chromium-driver (apt-get install chromium chromium-driver)"
    if os.environ.get("CI"):
        pytest.fail(f"CI installs {missing}")
    pytest.skip(f"needs {missing}")


@pytest.fixture
def report(tmp_path):
    db = str(tmp_path / "demo.db")
    shutil.copy(P.DEMO, db)
    assert cli(tmp_path, "run", db).returncode == 0
    page = str(tmp_path / "report.html")
    out = cli(tmp_path, "report", db, "-o", page)
    assert out.returncode == 0 and os.path.exists(page), out.stderr
    return db, page


def test_the_review_page_in_a_real_browser(report):
    db, page = report
    conn = P.connect(db)
    removed = conn.execute("SELECT count(*) FROM dedup_removed").fetchone()[0]
    phase4 = conn.execute("SELECT count(*) FROM dedup_removed WHERE dedup_phase = 4").fetchone()[0]
    drv = browser()  # (or a skip, before selenium is imported)
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select
    try:
        drv.get("file://" + page)
        rows = drv.find_elements(By.CSS_SELECTOR, "tr.item")
        assert len(rows) == removed == 355
        assert drv.find_element(By.ID, "shown").text == str(removed)
        Select(drv.find_element(By.ID, "phase")).select_by_value("4")
        visible = [r for r in rows if r.is_displayed()]
        assert len(visible) == phase4 == 48
        assert drv.find_element(By.ID, "shown").text == "48"
        # The first phase-4 row's diff: each highlighted word is in one text only.
        rowid = int(visible[0].find_element(By.CSS_SELECTOR, "small").text.split()[1].rstrip(";"))
        removed_text, kept_text = conn.execute(
            "SELECT d.parsed, p.parsed FROM dedup_why AS w JOIN dedup_removed AS d ON d.dedup_rowid = w.rowid "
            "JOIN pages AS p ON p.rowid = w.final_survivor WHERE w.rowid = ?", (rowid,)).fetchone()
        deleted = [e.text for e in visible[0].find_elements(By.CSS_SELECTOR, "del")]
        inserted = [e.text for e in visible[0].find_elements(By.CSS_SELECTOR, "ins")]
        assert deleted or inserted
        for words in deleted:
            assert words in " ".join(removed_text.split())
        for words in inserted:
            assert words in " ".join(kept_text.split())
        # Free text narrows further; the domain filter too.
        drv.find_element(By.ID, "text").send_keys("rust-lang")
        assert 0 < sum(r.is_displayed() for r in rows) < 48
        os.makedirs(ARTIFACTS, exist_ok=True)
        drv.save_screenshot(os.path.join(ARTIFACTS, "review.png"))
    finally:
        drv.quit()
    assert os.path.getsize(os.path.join(ARTIFACTS, "review.png")) > 10000


def test_the_review_page_without_runs_says_what_to_do(tmp_path):
    db = str(tmp_path / "demo.db")
    shutil.copy(P.DEMO, db)
    out = cli(tmp_path, "report", db, "-o", str(tmp_path / "r.html"))
    assert out.returncode == 0
    assert "No run is recorded in this database" in open(tmp_path / "r.html").read()


def test_a_report_that_cannot_be_written_is_named_so(tmp_path):
    """An output path in a folder that does not exist, or that is a folder:
    one line naming it and why, status 1, no traceback."""
    db = str(tmp_path / "demo.db")
    shutil.copy(P.DEMO, db)
    for output, why in [(str(tmp_path / "no" / "r.html"), "No such file or directory"),
                        (str(tmp_path), "Is a directory")]:
        out = cli(tmp_path, "report", db, "-o", output)
        assert out.returncode == 1 and out.stderr.strip().splitlines() == \
            [f"sqlite-dedup: cannot write the report to {output!r}: {why}"], out.stderr
    assert not os.path.exists(tmp_path / "no")


def test_the_filters_in_the_address_apply_on_load(report):
    """#phase=4 in the address: the page opens filtered (a link to share)."""
    _, page = report
    chromium = shutil.which("chromium")
    if not chromium:
        if os.environ.get("CI"):
            pytest.fail("CI installs chromium")
        pytest.skip("needs chromium (apt-get install chromium)")
    dom = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom",
                          f"file://{page}#phase=4"], capture_output=True, text=True, timeout=120).stdout
    assert '<span id="shown">48</span>' in dom


#: Values planted in the extension's tables and the crawl by a database's
#: maker: each would run script, open a dialog or navigate if written into
#: the page as it is.
HOSTILE = "<img src=x onerror=\"window.__pwned='{where}';alert(1)\"><script>window.__pwned='{where}'</script>"


def make_hostile(db):
    """Every value of every table the review page shows, hostile (the
    archive's URL a javascript: URL)."""
    conn = P.connect(db)
    h = lambda where: HOSTILE.format(where=where)
    conn.execute("UPDATE dedup_runs SET rows_before = ?, rows_after = ?, finished = ?, report = ?",
                 (h("rows_before"), h("rows_after"), h("finished"), json.dumps({"removed": {h("key"): h("report")}})))
    conn.execute("UPDATE dedup_removed SET url = ? WHERE dedup_rowid = "
                 "(SELECT min(dedup_rowid) FROM dedup_removed WHERE dedup_phase = 4)",
                 ("javascript:window.__pwned='url';alert(1)//",))
    conn.execute("UPDATE dedup_removed SET title = ?, parsed = ? || parsed WHERE dedup_phase = 4",
                 (h("title"), h("parsed") + " "))
    conn.execute("UPDATE dedup_notes SET note = ?, ratio = ?", (h("note"), h("ratio")))
    conn.commit()
    conn.close()


def assert_no_script_runs(url, screenshot):
    """In Chromium, the review page at `url` runs no script of the data, opens
    no dialog, stays where it is, links only http(s) URLs, shows the
    javascript: URL as text, and its own script still filters."""
    drv = browser()  # (or a skip, before selenium is imported)
    from selenium.common.exceptions import NoAlertPresentException
    from selenium.webdriver.common.by import By
    try:
        drv.get(url)
        try:
            drv.switch_to.alert
            raise AssertionError("a dialog opened")
        except NoAlertPresentException:
            pass
        assert drv.execute_script("return window.__pwned === undefined")
        assert drv.current_url == url
        hrefs = [a.get_attribute("href") or "" for a in drv.find_elements(By.TAG_NAME, "a")]
        assert hrefs and all(h.startswith(("http://", "https://")) for h in hrefs), \
            [h for h in hrefs if not h.startswith("http")]
        # The javascript: URL is shown as text, not as a link.
        assert "javascript:window.__pwned='url'" in drv.find_element(By.ID, "removed").text
        # The page's own script still filters.
        drv.find_element(By.ID, "text").send_keys("javascript:")
        assert drv.find_element(By.ID, "shown").text == "1"
        drv.save_screenshot(os.path.join(ARTIFACTS, screenshot)) if os.path.isdir(ARTIFACTS) else None
    finally:
        drv.quit()


def test_a_hostile_database_runs_no_script_on_the_review_page(report, tmp_path):
    """Every value of every table the page shows, hostile: in Chromium no
    script of the data runs, no dialog opens, no link leaves for a
    javascript: URL, and the page's own filter still works (its script is
    allowed by the policy). (On Datasette's origin:
    test_packages.py::test_the_datasette_review_page_runs_no_script_of_a_hostile_database.)"""
    db, _ = report
    make_hostile(db)
    page = str(tmp_path / "hostile.html")
    out = cli(tmp_path, "report", db, "-o", page)
    assert out.returncode == 0, out.stderr
    text = open(page).read()
    assert "Content-Security-Policy" in text
    assert_no_script_runs("file://" + page, "review-hostile.png")


def test_the_word_diff_is_bounded_on_long_repetitive_pairs():
    """A crawled pair of repetitive texts (the case that took 150 s with
    difflib): a summary, quickly; a near pair: its exact differences."""
    import random
    import sys
    import time
    sys.path.insert(0, os.path.join(P.ROOT, "python"))
    from sqlite_dedup import review
    rng = random.Random(7)
    a = " ".join(rng.choice(["menu", "home", "login"]) for _ in range(5000))
    b = " ".join(rng.choice(["menu", "home", "login"]) for _ in range(5000))
    budget = review.Budget()
    start = time.process_time()
    for _ in range(200):
        left, right = review.word_diff(a, b, budget=budget)
    assert "not highlighted" in left and "not highlighted" in right
    assert time.process_time() - start < 60  # (difflib: 150 s for one such pair)
    left, right = review.word_diff("the cat sat on the mat", "the cat lay on a mat")
    assert left == "the cat <del>sat</del> on <del>the</del> mat"
    assert right == "the cat <ins>lay</ins> on <ins>a</ins> mat"


@pytest.mark.parametrize("column", ["content", "parsed"])
def test_the_report_works_with_either_text_column_and_diffs_the_compared_text(tmp_path, column):
    """The README's quickstart table has one text column; with HTML in
    `content`, the differences shown are of the visible texts."""
    db = str(tmp_path / "one-column.db")
    conn = P.connect(db)
    conn.execute(f"CREATE TABLE pages (url TEXT, {column} TEXT)")
    words = " ".join(f"w{i}" for i in range(200))
    if column == "content":
        texts = [f"<html><body><p>{words} alpha</p><script>var k;</script></body></html>",
                 f"<html><body><div><p>{words} omega</p></div></body></html>"]
    else:
        texts = [f"{words} alpha", f"{words} omega"]
    conn.executemany(f"INSERT INTO pages (url, {column}) VALUES (?, ?)",
                     [("https://a.example/x", texts[0]), ("https://a.example/y", texts[1])])
    conn.commit()
    conn.execute("SELECT dedup_run()").fetchone()
    conn.commit()
    page = str(tmp_path / "r.html")
    out = cli(tmp_path, "report", db, "-o", page)
    assert out.returncode == 0, out.stderr
    text = open(page).read()
    assert text.count('<tr class="item"') == 1
    assert ("<del>alpha</del>" in text and "<ins>omega</ins>" in text) or \
        ("<del>omega</del>" in text and "<ins>alpha</ins>" in text), text[-3000:]
    assert "&lt;script" not in text and "var k" not in text


def test_stats_names_a_hand_edited_report(tmp_path):
    db = str(tmp_path / "demo.db")
    shutil.copy(P.DEMO, db)
    assert cli(tmp_path, "run", db).returncode == 0
    conn = P.connect(db)
    conn.execute("UPDATE dedup_runs SET report = '{not json'")
    conn.commit()
    out = cli(tmp_path, "stats", db)
    assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr
    assert "dedup_runs.report of run 1 must be the JSON this extension wrote" in out.stderr, out.stderr
