"""The review page: what the runs removed, as one self-contained HTML page
(no network, no external script): the runs; removals per phase and per
domain as bar charts; every removed page beside its final survivor with the
words that differ highlighted, the reason, the ratio, and the pages kept
apart with the parameter that kept them apart; filters by run, phase, domain
and text. `sqlite-dedup report DB -o report.html` writes it; the Datasette
plugin serves it at /-/dedup-review/DATABASE."""
import difflib
import html
import json

from sqlite_dedup import _quoted

# Removed pages shown (the latest first); the counts and charts cover all.
SHOWN = 2000
# Words of each text compared for the highlighted differences.
DIFF_WORDS = 1500


def _esc(value):
    return html.escape("" if value is None else str(value))


def word_diff(a, b, limit=DIFF_WORDS):
    """Two HTML fragments of the texts' first `limit` words: words only in
    `a` in <del>, words only in `b` in <ins> (difflib over words)."""
    wa, wb = (a or "").split()[:limit], (b or "").split()[:limit]
    left, right = [], []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, wa, wb, autojunk=False).get_opcodes():
        if op == "equal":
            left.append(_esc(" ".join(wa[i1:i2])))
            right.append(_esc(" ".join(wb[j1:j2])))
        else:
            if i2 > i1:
                left.append(f"<del>{_esc(' '.join(wa[i1:i2]))}</del>")
            if j2 > j1:
                right.append(f"<ins>{_esc(' '.join(wb[j1:j2]))}</ins>")
    return " ".join(left), " ".join(right)


def _table(conn, settings_json):
    try:
        return json.loads(settings_json).get("table") or "pages"
    except (TypeError, ValueError):
        return "pages"


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
                    f'<text x="{236 + width:.1f}" y="{k * 18 + 13}">{n}</text>')
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
        except (TypeError, ValueError):
            pass
        run_rows.append(f"<tr><td>{run}</td><td>{_esc(finished)}</td><td>{before} &rarr; {after}</td>"
                        f"<td>{_esc(removed)}</td></tr>")
    per_phase = conn.execute("SELECT dedup_phase, count(*) FROM dedup_removed GROUP BY 1 ORDER BY 1").fetchall()
    rows = conn.execute(
        f"""SELECT w.rowid, w.run, w.phase, w.reason, w.ratio, w.final_survivor, w.final_url, w.url,
                   d.parsed, d.content, p.parsed, p.content,
                   (SELECT n.ratio FROM dedup_notes AS n WHERE n.dedup_run = w.run AND n.dedup_rowid = w.rowid
                      AND n.kind = 'final' AND n.other = w.final_survivor)
            FROM dedup_why AS w
            JOIN dedup_removed AS d ON d.dedup_rowid = w.rowid AND d.dedup_run = w.run
            LEFT JOIN {quoted} AS p ON p.rowid = w.final_survivor
            ORDER BY w.run DESC, w.phase, w.rowid LIMIT {SHOWN}""").fetchall() if "dedup_notes" in has else []
    domains = {}
    items = []
    for (rowid, run, phase, reason, ratio, final, final_url, url, d_parsed, d_content, p_parsed, p_content,
         final_ratio) in rows:
        domain = url.split("/")[2].lower() if url and "://" in url else ""
        domains[domain] = domains.get(domain, 0) + 1
        removed_text = d_parsed if d_parsed is not None else d_content
        kept_text = p_parsed if p_parsed is not None else p_content
        if final is not None and kept_text is not None:
            left, right = word_diff(removed_text, kept_text)
            diff = (f'<div class="diff"><div><b>removed</b> {left}</div>'
                    f'<div><b>kept</b> {right}</div></div>')
        else:
            diff = '<div class="diff"><i>no survivor (left in phase 1 or 5)</i></div>'
        figures = []
        if ratio is not None:
            figures.append(f"ratio {ratio:.4f}")
        if final_ratio is not None:
            figures.append(f"to the final survivor {final_ratio:.4f}")
        items.append(
            f'<tr class="item" data-run="{run}" data-phase="{phase}" data-domain="{_esc(domain)}">'
            f'<td>{run}</td><td>{phase}</td><td>{_esc(domain)}</td>'
            f'<td><a href="{_esc(url)}">{_esc(url)}</a><br><small>rowid {rowid}; '
            + (f'<a class="explain" href="{_esc(explain_url(rowid))}">explain</a>' if explain_url
               else f'<code>sqlite-dedup explain DB {rowid}</code>')
            + '</small></td>'
            f'<td>{_esc(reason)}<br><small>{_esc("; ".join(figures))}</small></td>'
            f'<td>{"" if final is None else f"rowid {final}<br>" + _esc(final_url)}</td>'
            f'<td>{diff}</td></tr>')
    apart = conn.execute("SELECT dedup_run, dedup_rowid, note FROM dedup_notes WHERE kind = 'kept apart' "
                         "ORDER BY dedup_run DESC, dedup_rowid LIMIT 200").fetchall() if "dedup_notes" in has else []
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
<html lang="en"><head><meta charset="utf-8"><title>{_esc(title)}</title><style>{style}</style></head>
<body><h1>{_esc(title)}</h1>
<h2>Runs</h2><table><tr><th>run</th><th>finished</th><th>rows</th><th>removed</th></tr>{''.join(run_rows)}</table>
<h2>Removals</h2>
{_bars([(f"phase {p}", n) for p, n in per_phase], "removed rows per phase (all runs)")}
{_bars(top_domains, "removed rows per domain (the pages listed below)")}
<h2>Kept apart</h2><ul>{''.join(f"<li>run {r}, rowid {k}: {_esc(n)}</li>" for r, k, n in apart) or "<li>none</li>"}</ul>
<h2>Removed pages and their final survivors</h2>
<div class="filters">run <select id="run"><option value="">all</option>{options(sorted({r[0] for r in rows}))}</select>
phase <select id="phase"><option value="">all</option>{options(sorted({r[2] for r in rows}))}</select>
domain <select id="domain"><option value="">all</option>{options(sorted(domains))}</select>
text <input id="text" size="30"> <span id="shown">{len(items)}</span> of {len(items)} shown
{f"(the latest {SHOWN})" if len(items) == SHOWN else ""}</div>
<table id="removed"><colgroup><col style="width:3em"><col style="width:3.5em"><col style="width:10em">
<col style="width:18em"><col style="width:12em"><col style="width:16em"><col></colgroup><tr><th>run</th><th>phase</th><th>domain</th><th>removed page</th><th>why</th>
<th>final survivor</th><th>differences (words)</th></tr>{''.join(items)}</table>
<script>{script}</script></body></html>
"""
