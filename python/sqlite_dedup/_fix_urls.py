"""`fix_urls`: per host, whether https answers and whether the `www.` name
serves what the bare host serves, probed concurrently (a bounded pool, a
timeout on every request) and kept in the database's `dedup_url_fixes`
(host, https, drop_www, checked, note). A run with the setting `fix_urls`
canonicalizes each URL by its host's answers (http upgraded to https,
`www.` dropped where they say so). Probing is here, in the client, never in
an SQL function: it fetches from the network.

Hosts are the extension's `url_host(url)` (the lower-cased host, with a port
that is not the default; a Wayback Machine wrapper's archived URL's host).
Probed: https for a host that has http URLs; the bare host for a `www.` one.
Answers are written in one transaction once every host is probed: an
interrupted probe writes nothing."""
import concurrent.futures
import hashlib
import http.client
import socket
import ssl
import urllib.parse

from ._sql import quoted

TABLE = "dedup_url_fixes"
CREATE = (f"CREATE TABLE IF NOT EXISTS {TABLE} (host TEXT PRIMARY KEY, https INTEGER, drop_www INTEGER, "
          "checked TEXT, note TEXT)")
# Redirects followed to a page's final answer; bytes of a body compared.
MAX_REDIRECTS = 5
MAX_BODY = 1 << 20


def _default_resolver(host, port):
    return host, port


class _Fetcher:
    """GETs through `resolver(host, port) -> (address, port)` (the connection
    goes there; the Host header and TLS name stay the URL's), each request
    within `timeout` seconds, TLS verified by `context`."""

    def __init__(self, resolver, timeout, context):
        self.resolver, self.timeout, self.context = resolver, timeout, context

    def get(self, url):
        """(status, headers, body) of one GET, no redirect followed."""
        parts = urllib.parse.urlsplit(url)
        https = parts.scheme == "https"
        port = parts.port or (443 if https else 80)
        address, to_port = self.resolver(parts.hostname, port)
        sock = socket.create_connection((address, to_port), timeout=self.timeout)
        try:
            if https:
                sock = self.context.wrap_socket(sock, server_hostname=parts.hostname)
            conn = http.client.HTTPConnection(parts.hostname, port, timeout=self.timeout)
            conn.sock = sock
            path = urllib.parse.urlunsplit(("", "", parts.path or "/", parts.query, ""))
            conn.request("GET", path, headers={"Host": parts.netloc, "User-Agent": "sqlite-dedup fix_urls",
                                               "Accept": "text/html,*/*"})
            response = conn.getresponse()
            body = response.read(MAX_BODY)
            return response.status, response.getheaders(), body
        finally:
            sock.close()

    def final(self, url):
        """(final URL, status, body digest) after up to MAX_REDIRECTS redirects."""
        for _ in range(MAX_REDIRECTS + 1):
            status, headers, body = self.get(url)
            location = dict((k.lower(), v) for k, v in headers).get("location")
            if status in (301, 302, 303, 307, 308) and location:
                url = urllib.parse.urljoin(url, location)
                if urllib.parse.urlsplit(url).scheme not in ("http", "https"):
                    return url, status, None
                continue
            return url, status, hashlib.sha256(body).hexdigest()
        return url, None, None


def _normal(url):
    """A final URL as two are compared: the host lower-cased, no fragment, no trailing slash."""
    parts = urllib.parse.urlsplit(url)
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc.lower(), parts.path.rstrip("/") or "/",
                                    parts.query, ""))


def _why(error):
    text = str(error) or type(error).__name__
    return text if len(text) <= 120 else text[:117] + "..."


def probe_host(fetch, host, has_http):
    """(https, drop_www, note) for one host: https probed when it has http
    URLs (None otherwise), drop_www when it is a `www.` host (None
    otherwise)."""
    notes, https, drop_www = [], None, None
    if has_http:
        try:
            status, _, _ = fetch.get(f"https://{host}/")
            https = 1
            notes.append(f"https answered {status}")
        except Exception as e:  # refused, timeout, a certificate that does not verify
            https = 0
            notes.append(f"https: {_why(e)}")
    if host.startswith("www."):
        scheme = "https" if (https == 1 or not has_http) else "http"
        try:
            www = fetch.final(f"{scheme}://{host}/")
            bare = fetch.final(f"{scheme}://{host[4:]}/")
            # (The same page: one name redirects to the other, or both serve the same bytes.)
            same = (www[1] == 200 and bare[1] == 200
                    and (_normal(www[0]) == _normal(bare[0]) or www[2] == bare[2]))
            drop_www = 1 if same else 0
            notes.append(f"{host[4:]} serves the same as {host}" if same
                         else f"{host[4:]} answered {bare[1]}, {host} {www[1]}: not the same")
        except Exception as e:
            drop_www = 0
            notes.append(f"{host[4:]}: {_why(e)}")
    return https, drop_www, "; ".join(notes)


def fix_urls(conn, table="pages", column="url", timeout=2.0, workers=8, refresh=False, resolver=None,
             context=None):
    """Probes the hosts of `table`'s URLs not probed yet (all with
    `refresh`) and records the answers in dedup_url_fixes; returns a dict:
    probed (hosts), https (hosts upgraded), drop_www (hosts whose www. name
    is dropped), skipped (hosts already probed). `timeout` bounds each
    request (seconds), `workers` the requests in flight. `resolver(host,
    port) -> (address, port)` replaces DNS (tests point every name at
    127.0.0.1); `context` is the ssl.SSLContext that verifies https (the
    system's CAs by default)."""
    if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or timeout <= 0:
        raise ValueError(f"fix_urls: timeout must be a number of seconds > 0, got {timeout!r}")
    if not isinstance(workers, int) or isinstance(workers, bool) or not 1 <= workers <= 256:
        raise ValueError(f"fix_urls: workers must be an integer from 1 to 256, got {workers!r}")
    # (A host has http URLs when a canonical URL of it is one: a Wayback
    # Machine wrapper's archived URL counts.)
    rows = conn.execute(
        f"SELECT url_host({quoted(column)}) AS h, coalesce(max(canonical_url({quoted(column)}) LIKE 'http:%'), 0) "
        f"FROM {quoted(table)} WHERE h IS NOT NULL GROUP BY h ORDER BY h").fetchall()
    conn.execute(CREATE)
    done = {h for (h,) in conn.execute(f"SELECT host FROM {TABLE}")} if not refresh else set()
    todo = [(h, bool(http)) for h, http in rows
            if h not in done and (http or h.startswith("www."))]
    fetch = _Fetcher(resolver or _default_resolver, float(timeout),
                     context or ssl.create_default_context())
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        answers = list(pool.map(lambda t: (t[0],) + probe_host(fetch, *t), todo))
    in_txn = getattr(conn, "in_transaction", False)
    if not in_txn:
        conn.execute("BEGIN")
    try:
        for host, https, drop_www, note in answers:
            conn.execute(f"INSERT OR REPLACE INTO {TABLE} VALUES (?, ?, ?, datetime('now'), ?)",
                         (host, https, drop_www, note))
        if not in_txn:
            conn.execute("COMMIT")
    except BaseException:
        if not in_txn:
            conn.execute("ROLLBACK")
        raise
    return {"probed": len(answers), "https": sum(a[1] == 1 for a in answers),
            "drop_www": sum(a[2] == 1 for a in answers), "skipped": len(rows) - len(todo)}
