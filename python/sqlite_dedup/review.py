"""The review page: what the runs removed, as one self-contained HTML page
(no network, no external script): the runs; removals per phase and per
domain as bar charts; every removed page beside its final survivor with the
words that differ highlighted, the reason, the ratio, and the pages kept
apart with the parameter that kept them apart, the paragraphs cut from
kept pages (`paragraphs = 'dedup'`) with the page that holds each; filters by run, phase, domain
and text. `sqlite-dedup report DB -o report.html` writes it; the Datasette
plugin serves it at /-/dedup-review/DATABASE."""
import base64
import hashlib
import html
import json

from sqlite_dedup._sql import quoted as _quoted

# Removed pages shown (the latest first); the counts and charts cover all.
SHOWN = 2000
# Words of each text compared for the highlighted differences.
DIFF_WORDS = 1500
# The most words inserted or deleted a highlighted diff aligns; a pair that
# differs more shows a summary (the diff costs (n + m) * this at most).
DIFF_EDITS = 300
# Steps of diffing one page may take in all (about a second or two).
DIFF_STEPS = 4_000_000


def _esc(value):
    """Any value as HTML text or a quoted attribute's value."""
    return html.escape("" if value is None else str(value), quote=True)


def _number(value, digits=None):
    """A value read from the extension's tables as the number it should be,
    escaped: a hand-edited or hostile value shows as text, never as markup."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return _esc(value)
    return _esc(f"{value:.{digits}f}" if digits is not None else value)


def _link(url):
    """`url` as a link when it is an http(s) URL, else as text (a
    `javascript:` or `data:` URL read from a crawl is never clickable)."""
    text = _esc(url)
    if isinstance(url, str) and url[:8].lower().startswith(("http://", "https://")) \
            and not any(c in url for c in "\r\n\t\x00"):
        return f'<a href="{text}" rel="noreferrer noopener">{text}</a>'
    return text


class Budget:
    """Steps of diffing one page may take in all (a crawl of many long,
    repetitive pairs shows summaries once it is spent, not a hung page)."""

    def __init__(self, steps=DIFF_STEPS):
        self.left = steps


def _edits(wa, wb, most, budget=None):
    """Myers' O((n + m) D) diff of two word lists: the opcodes
    ('equal' | 'delete' | 'insert', i1, i2, j1, j2), or None when more than
    `most` words differ or `budget` (a Budget) runs out."""
    n, m = len(wa), len(wb)
    v = {1: 0}
    trace = []
    for d in range(most + 1):
        trace.append(dict(v))
        if budget is not None:
            budget.left -= 2 * d + 1
            if budget.left < 0:
                return None
        for k in range(-d, d + 1, 2):
            if k == -d or (k != d and v.get(k - 1, -1) < v.get(k + 1, -1)):
                x = v.get(k + 1, 0)
            else:
                x = v.get(k - 1, 0) + 1
            y = x - k
            x0 = x
            while x < n and y < m and wa[x] == wb[y]:
                x, y = x + 1, y + 1
            if budget is not None:
                budget.left -= x - x0
            v[k] = x
            if x >= n and y >= m:
                return _opcodes(trace, wa, wb, n, m, d)
    return None


def _opcodes(trace, wa, wb, x, y, d):
    steps = []
    for depth in range(d, 0, -1):
        v = trace[depth]
        k = x - y
        down = k == -depth or (k != depth and v.get(k - 1, -1) < v.get(k + 1, -1))
        pk = k + 1 if down else k - 1
        px = v.get(pk, 0)
        py = px - pk
        while x > px + (0 if down else 1) and y > py + (1 if down else 0):
            x, y = x - 1, y - 1
            steps.append(("equal", x, y))
        if down:
            y -= 1
            steps.append(("insert", x, y))
        else:
            x -= 1
            steps.append(("delete", x, y))
    while x > 0 and y > 0:
        x, y = x - 1, y - 1
        steps.append(("equal", x, y))
    steps.reverse()
    ops = []
    for kind, i, j in steps:
        di, dj = (1, 1) if kind == "equal" else (1, 0) if kind == "delete" else (0, 1)
        if ops and ops[-1][0] == kind:
            op = ops[-1]
            ops[-1] = (kind, op[1], i + di, op[3], j + dj)
        else:
            ops.append((kind, i, i + di, j, j + dj))
    return ops


def word_diff(a, b, limit=DIFF_WORDS, most=DIFF_EDITS, budget=None):
    """Two HTML fragments of the texts' first `limit` words: words only in
    `a` in <del>, words only in `b` in <ins>; a pair that differs in more
    than `most` words gets a one-line summary on each side instead (the
    cost stays linear in the words for a bounded `most`)."""
    wa, wb = (a or "").split()[:limit], (b or "").split()[:limit]
    ops = _edits(wa, wb, most, budget)
    if ops is None:
        why = ("the page's time for differences is spent" if budget is not None and budget.left < 0
               else f"more than {most} words differ")
        summary = f"<i>{len(wa)} and {len(wb)} words; {why}: not highlighted</i>"
        return summary, summary
    left, right = [], []
    for op, i1, i2, j1, j2 in ops:
        if op == "equal":
            left.append(_esc(" ".join(wa[i1:i2])))
            right.append(_esc(" ".join(wb[j1:j2])))
        elif op == "delete":
            left.append(f"<del>{_esc(' '.join(wa[i1:i2]))}</del>")
        else:
            right.append(f"<ins>{_esc(' '.join(wb[j1:j2]))}</ins>")
    return " ".join(left), " ".join(right)


def content_security_policy(script):
    """The page's policy: no script but its own (by its hash), no network,
    no frames, no forms."""
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    return (f"default-src 'none'; script-src 'sha256-{digest}'; style-src 'unsafe-inline'; "
            "img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'self'")


def _table(conn, settings_json):
    try:
        table = json.loads(settings_json).get("table") or "pages"
    except (TypeError, ValueError, AttributeError):
        return "pages"
    return table if isinstance(table, str) else "pages"


def pages_table_of(conn):
    """The table of pages the latest run named (`pages` without runs)."""
    try:
        row = conn.execute("SELECT settings FROM dedup_runs ORDER BY run DESC LIMIT 1").fetchone()
    except Exception:  # no dedup_runs
        return "pages"
    return _table(conn, row[0] if row else None)


def content_security_policy_of(page):
    """The policy a page of review_html carries in its <meta> tag."""
    start = page.find("<script>")
    end = page.find("</script>", start)
    return content_security_policy(page[start + len("<script>"):end] if start >= 0 else "")


def _bars(counts, label):
    """A horizontal bar chart (inline SVG) of (name, count) pairs."""
    if not counts:
        return ""
    top = max(n for _, n in counts)
    rows = []
    for k, (name, n) in enumerate(counts):
        width = 300 * n / top
        rows.append(f'<text x="0" y="{k * 18 + 13}">{_esc(name)}</text>'
                    f'<rect x="230" y="{k * 18 + 3}" width="{width:.1f}" height="12"></rect>'
                    f'<text x="{236 + width:.1f}" y="{k * 18 + 13}">{_number(n)}</text>')
    return (f'<figure><figcaption>{_esc(label)}</figcaption><svg class="bars" width="620" '
            f'height="{len(counts) * 18 + 4}">{"".join(rows)}</svg></figure>')


def review_html(conn, title="sqlite-dedup review", explain_url=None):
    """The review page of the runs recorded in `conn`'s database.
    `explain_url(rowid)`, when given (the Datasette plugin), links each
    removed page to its explanation (its row of dedup_why)."""
    has = {r[0] for r in conn.execute("SELECT name FROM sqlite_schema WHERE name LIKE 'dedup_%'")}
    if "dedup_runs" not in has:
        return (f"<!doctype html><meta charset=utf-8><title>{_esc(title)}</title>"
                "<p>No run is recorded in this database: run <code>SELECT dedup_run()</code> "
                "or <code>sqlite-dedup run</code> first.</p>")
    runs = conn.execute("SELECT run, finished, rows_before, rows_after, settings, report FROM dedup_runs "
                        "ORDER BY run").fetchall()
    table = _table(conn, runs[-1][4])
    quoted = _quoted(table)
    run_rows = []
    for run, finished, before, after, _, report in runs:
        removed = ""
        try:
            removed = ", ".join(f"phase {p}: {n}" for p, n in json.loads(report).get("removed", {}).items())
        except (TypeError, ValueError, AttributeError):
            pass
        run_rows.append(f"<tr><td>{_number(run)}</td><td>{_esc(finished)}</td>"
                        f"<td>{_number(before)} &rarr; {_number(after)}</td>"
                        f"<td>{_esc(removed)}</td></tr>")
    per_phase = conn.execute("SELECT dedup_phase, count(*) FROM dedup_removed GROUP BY 1 ORDER BY 1").fetchall()
    def text_of(alias, table_name):
        # The text a run compared: parsed, else the content's visible text
        # when it is HTML, else the content (a table may have either column).
        names = {r[0].lower() for r in conn.execute("SELECT name FROM pragma_table_info(?)", (table_name,))}
        parsed = f"{alias}.parsed" if "parsed" in names else "NULL"
        content = f"{alias}.content" if "content" in names else "NULL"
        return (f"coalesce({parsed}, CASE WHEN is_html({content}) THEN html_text({content}) ELSE {content} END)"
                if content != "NULL" else parsed)

    rows = conn.execute(
        f"""SELECT w.rowid, w.run, w.phase, w.reason, w.ratio, w.final_survivor, w.final_url, w.url,
                   {text_of("d", "dedup_removed")}, NULL, {text_of("p", table)}, NULL,
                   (SELECT n.ratio FROM dedup_notes AS n WHERE n.dedup_run = w.run AND n.dedup_rowid = w.rowid
                      AND n.kind = 'final' AND n.other = w.final_survivor),
                   (SELECT n.note FROM dedup_notes AS n WHERE n.dedup_run = w.run AND n.dedup_rowid = w.rowid
                      AND n.kind = 'survivor elsewhere' LIMIT 1)
            FROM dedup_why AS w
            JOIN dedup_removed AS d ON d.dedup_rowid = w.rowid AND d.dedup_run = w.run
            LEFT JOIN {quoted} AS p ON p.rowid = w.final_survivor
            ORDER BY w.run DESC, w.phase IN (1, 5), w.phase, w.rowid LIMIT {SHOWN}""").fetchall() \
        if "dedup_notes" in has else []
    domains = {}
    items = []
    budget = Budget()
    for (rowid, run, phase, reason, ratio, final, final_url, url, d_parsed, d_content, p_parsed, p_content,
         final_ratio, elsewhere) in rows:
        domain = url.split("/")[2].lower() if isinstance(url, str) and "://" in url else ""
        domains[domain] = domains.get(domain, 0) + 1
        removed_text = d_parsed if d_parsed is not None else d_content
        kept_text = p_parsed if p_parsed is not None else p_content
        if final is not None and kept_text is not None:
            left, right = word_diff(removed_text, kept_text, budget=budget)
            diff = (f'<div class="diff"><div><b>removed</b> {left}</div>'
                    f'<div><b>kept</b> {right}</div></div>')
        elif elsewhere is not None:
            # (A survivor in another shard of a Spark job, or in the database a run was against.)
            diff = '<div class="diff"><i>the survivor is in another database: not shown here</i></div>'
        else:
            diff = '<div class="diff"><i>no survivor (left in phase 1 or 5)</i></div>'
        figures = []
        if ratio is not None:
            figures.append(f"ratio {_number(ratio, 4)}")
        if final_ratio is not None:
            figures.append(f"to the final survivor {_number(final_ratio, 4)}")
        items.append(
            f'<tr class="item" data-run="{_esc(run)}" data-phase="{_esc(phase)}" data-domain="{_esc(domain)}">'
            f'<td>{_number(run)}</td><td>{_number(phase)}</td><td>{_esc(domain)}</td>'
            f'<td>{_link(url)}<br><small>rowid {_number(rowid)}; '
            + (f'<a class="explain" href="{_esc(explain_url(rowid))}">explain</a>' if explain_url
               else f'<code>sqlite-dedup explain DB {_number(rowid)}</code>')
            + '</small></td>'
            f'<td>{_esc(reason)}<br><small>{"; ".join(figures)}</small></td>'
            f'<td>{_esc(elsewhere or "") if final is None else f"rowid {_number(final)}<br>" + _link(final_url)}</td>'
            f'<td>{diff}</td></tr>')
    apart = conn.execute("SELECT dedup_run, dedup_rowid, note FROM dedup_notes WHERE kind = 'kept apart' "
                         "ORDER BY dedup_run DESC, dedup_rowid LIMIT 200").fetchall() if "dedup_notes" in has else []
    cut = conn.execute(
        "SELECT dedup_run, dedup_rowid, position, length, owner, owner_url, paragraph FROM dedup_paragraphs "
        f"ORDER BY dedup_run DESC, dedup_rowid, position LIMIT {SHOWN}").fetchall() if "dedup_paragraphs" in has else []
    cut_rows = "".join(
        f"<tr><td>{_number(r)}</td><td>rowid {_number(k)}, paragraph {_number(at)} ({_number(n)} characters)</td>"
        f"<td>rowid {_number(o)}<br>{_link(ou)}</td><td><small>{_esc(str(text or '')[:300])}</small></td></tr>"
        for r, k, at, n, o, ou, text in cut)
    top_domains = sorted(domains.items(), key=lambda kv: (-kv[1], kv[0]))[:15]
    options = lambda values: "".join(f'<option value="{_esc(v)}">{_esc(v)}</option>' for v in values)
    script = """
const $ = s => document.querySelector(s);
function apply() {
  const run = $('#run').value, phase = $('#phase').value, domain = $('#domain').value, text = $('#text').value.toLowerCase();
  let shown = 0;
  for (const tr of document.querySelectorAll('tr.item')) {
    const ok = (!run || tr.dataset.run === run) && (!phase || tr.dataset.phase === phase)
      && (!domain || tr.dataset.domain === domain) && (!text || tr.textContent.toLowerCase().includes(text));
    tr.hidden = !ok; shown += ok;
  }
  $('#shown').textContent = shown;
}
for (const id of ['#run', '#phase', '#domain', '#text']) for (const ev of ['input', 'change']) $(id).addEventListener(ev, apply);
const params = new URLSearchParams(location.hash.slice(1));
for (const [k, v] of params) { const el = $('#' + k); if (el) el.value = v; }
apply();
"""
    style = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; }
table { border-collapse: collapse; width: 100%; } td, th { border-bottom: 1px solid #ddd; padding: 4px 6px;
vertical-align: top; text-align: left; } .diff { max-height: 12em; overflow: auto; font-size: 12px; }
.diff div { margin-bottom: .4em; } del { background: #fdd; } ins { background: #dfd; text-decoration: none; }
svg.bars rect { fill: #4a7fb0; } svg.bars text { font-size: 12px; }
figure { display: inline-block; margin: 0 2em 1em 0; vertical-align: top; }
#removed { table-layout: fixed; } #removed td { overflow-wrap: anywhere; }
.filters { position: sticky; top: 0; background: #fff; padding: .5em 0; }
"""
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{_esc(content_security_policy(script))}">
<title>{_esc(title)}</title><style>{style}</style></head>
<body><h1>{_esc(title)}</h1>
<h2>Runs</h2><table><tr><th>run</th><th>finished</th><th>rows</th><th>removed</th></tr>{''.join(run_rows)}</table>
<h2>Removals</h2>
{_bars([(f"phase {p}", n) for p, n in per_phase if isinstance(n, int)], "removed rows per phase (all runs)")}
{_bars(top_domains, "removed rows per domain (the pages listed below)")}
<h2>Kept apart</h2><ul>{''.join(f"<li>run {_number(r)}, rowid {_number(k)}: {_esc(n)}</li>" for r, k, n in apart) or "<li>none</li>"}</ul>
<h2>Paragraphs cut</h2>
{f'<table id="paragraphs"><tr><th>run</th><th>from</th><th>held by</th><th>paragraph</th></tr>{cut_rows}</table>' if cut_rows else "<p>none</p>"}
<h2>Removed pages and their final survivors</h2>
<p>Those with a survivor first (phases 2 to 4, with the words that differ), then those a rule removed (phases 1 and 5).</p>
<div class="filters">run <select id="run"><option value="">all</option>{options(sorted({str(r[1]) for r in rows}, key=lambda v: (len(v), v)))}</select>
phase <select id="phase"><option value="">all</option>{options(sorted({str(r[2]) for r in rows}, key=lambda v: (len(v), v)))}</select>
domain <select id="domain"><option value="">all</option>{options(sorted(domains))}</select>
text <input id="text" size="30"> <span id="shown">{len(items)}</span> of {len(items)} shown
{f"(the latest {SHOWN})" if len(items) == SHOWN else ""}</div>
<table id="removed"><colgroup><col style="width:3em"><col style="width:3.5em"><col style="width:10em">
<col style="width:18em"><col style="width:12em"><col style="width:16em"><col></colgroup><tr><th>run</th><th>phase</th><th>domain</th><th>removed page</th><th>why</th>
<th>final survivor</th><th>differences (words)</th></tr>{''.join(items)}</table>
<script>{script}</script></body></html>
"""
