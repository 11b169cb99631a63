"""An independent, plain-Python model of the reference pipeline
(Deduplicator.run_on_db, phases 2 to 5), used as a test oracle: given each
row's canonical URL it computes the surviving rowids. It follows the
reference's code line by line, with python-Levenshtein's ratio."""
import functools

import Levenshtein


def _cmp_values(a, b):
    """SQLite's order for the values found here: NULL < numbers < text."""
    def cls(v):
        return 0 if v is None else (1 if isinstance(v, (int, float)) else 2)
    ca, cb = cls(a), cls(b)
    if ca != cb:
        return -1 if ca < cb else 1
    if a is None:
        return 0
    return (a > b) - (a < b)


def sql_sorted(rows, keys):
    """Sorts like ORDER BY; keys are (getter, 'asc'|'desc', nulls_last)."""
    def cmp(x, y):
        for get, direction, nulls_last in keys:
            a, b = get(x), get(y)
            if a is None or b is None:
                if a is None and b is None:
                    continue
                if nulls_last:
                    return 1 if a is None else -1
            c = _cmp_values(a, b)
            if direction == "desc":
                c = -c
            if c:
                return c
        return 0
    return sorted(rows, key=functools.cmp_to_key(cmp))


def external(r):
    return 1 if r["category"] == "external" else 0


def run(rows, threshold=0.9, distance=50, n_min=0, score_cutoff=True, pairs=None, election="chain"):
    """rows: dicts with rowid, url (canonical or None), domain, content_hash,
    datetime, crawled, length, category, parsed. Returns surviving rowids.
    score_cutoff=False computes every full ratio, as the reference does (the
    same decisions, at the reference's cost: for benchmarks). distance=None
    makes the window unbounded; pairs (a set of (rowid, rowid), either order)
    then limits the comparisons to those pairs (the 'lsh' mode's candidates).
    election="direct" (ours, not the reference's: lsh_election = 'direct')
    takes the rows best first (the election's order) and lets each row still
    kept remove every later kept row of its candidates that is near it."""
    prepared = [dict(r, length=r["length"] or None) for r in rows if r["url"] is not None]
    # Phase 2: _ELECTION_ORDER_URL per canonical URL.
    by_url = {}
    for r in prepared:
        by_url.setdefault(r["url"], []).append(r)
    url_keys = [(external, "asc", False), (lambda r: r["datetime"], "desc", True),
                (lambda r: r["crawled"], "desc", True), (lambda r: r["length"], "desc", True),
                (lambda r: r["rowid"], "asc", False)]
    url_winners = [sql_sorted(group, url_keys)[0] for group in by_url.values()]
    # Phase 3: _ELECTION_ORDER_CONTENT per hash; NULL hashes pass through.
    by_hash, stubs = {}, []
    for r in url_winners:
        if r["content_hash"] is None:
            stubs.append(r)
        else:
            by_hash.setdefault(r["content_hash"], []).append(r)
    content_keys = url_keys[:3] + [(lambda r: len(r["url"]), "asc", False), (lambda r: r["rowid"], "asc", False)]
    winners = [sql_sorted(group, content_keys)[0] for group in by_hash.values()] + stubs
    # Phase 4: the window scan, _close_content_scan and _elect_group.
    if threshold < 1.0:
        elements = sorted((r for r in winners if r["parsed"]), key=lambda r: r["url"])
        n = len(elements)
        keep = [True] * n

        def key(idx):
            e = elements[idx]
            return (0 if (e["category"] or "") == "external" else 1, e["datetime"] or "",
                    e["crawled"] or "", e["length"] or 0, -idx)

        if election == "direct":
            order = sorted(range(n), key=key, reverse=True)
            for at, c in enumerate(order):
                if not keep[c]:
                    continue
                a, la = elements[c]["rowid"], len(elements[c]["parsed"])
                for j in order[at + 1:]:
                    b, lb = elements[j]["rowid"], len(elements[j]["parsed"])
                    if not keep[j] or (pairs is not None and (a, b) not in pairs and (b, a) not in pairs):
                        continue
                    if abs(la - lb) <= (1 - threshold) * (la + lb) and Levenshtein.ratio(
                            elements[c]["parsed"], elements[j]["parsed"], score_cutoff=threshold) > threshold:
                        keep[j] = False
        for i in range(n if election == "chain" else 0):
            if not keep[i]:
                continue
            end = n if distance is None else min(n, i + distance)
            live = [j for j in range(i + 1, end) if keep[j]]
            if pairs is not None:
                a = elements[i]["rowid"]
                live = [j for j in live if (a, elements[j]["rowid"]) in pairs
                        or (elements[j]["rowid"], a) in pairs]
            if distance is None:
                # ratio > t needs |la - lb| <= (1 - t)(la + lb): skip the rest.
                la = len(elements[i]["parsed"])
                live = [j for j in live
                        if abs(la - len(elements[j]["parsed"])) <= (1 - threshold) * (la + len(elements[j]["parsed"]))]
            near = [j for j in live
                    if Levenshtein.ratio(elements[i]["parsed"], elements[j]["parsed"],
                                         score_cutoff=threshold if score_cutoff else None) > threshold]
            if not near:
                continue
            group = [i] + near
            best = max(group, key=key)
            for g in group:
                if g != best:
                    keep[g] = False
        removed = {elements[i]["rowid"] for i in range(n) if not keep[i]}
        winners = [r for r in winners if r["rowid"] not in removed]
    # Phase 5: domains with fewer than n_min pages.
    if n_min > 0:
        counts = {}
        for r in winners:
            counts[r["domain"]] = counts.get(r["domain"], 0) + 1
        winners = [r for r in winners if r["domain"] is None or counts[r["domain"]] >= n_min]
    return {r["rowid"] for r in winners}
