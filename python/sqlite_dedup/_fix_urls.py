"""`fix_urls`: per host, whether https answers and whether the `www.` name
serves what the bare host serves, probed concurrently (a bounded pool) and
kept in the database's `dedup_url_fixes` (host, https, drop_www, checked,
note). A run with the setting `fix_urls` canonicalizes each URL by its
host's answers (http upgraded to https, `www.` dropped where they say so).
Probing is here, in the client, never in an SQL function: it fetches from
the network.

What it sends where (docs/crawl-time.md says the same): a `GET /` (headers
Host, User-Agent `sqlite-dedup fix_urls`, Accept) to `https://HOST/` for a
host that has http URLs, and to `SCHEME://www.HOST/` and `SCHEME://HOST/`
for a `www.` host; nothing else of the database leaves the machine. A host
whose name resolves to an address that is not public (loopback, private,
link-local, reserved, multicast) is not probed unless `allow_private`; an
address given by the caller's own resolver (`--connect-to`) is the
caller's choice. A redirect is followed only within the host and its
`www.`/bare twin, over http or https, at most MAX_REDIRECTS times.

Waits: each request (connect, TLS, headers and body together) ends within
`timeout` seconds, however slowly the host answers; the whole probe within
`deadline` seconds (hosts left then are probed by the next call); Ctrl-C
stops it at once (the requests in flight are cut). At most `max_hosts`
hosts are probed a call.

Hosts are the extension's `url_host(url)` (the lower-cased host, with a port
that is not the default; a Wayback Machine wrapper's archived URL's host).
Answers are written in one transaction once the probe ends: an interrupted
probe writes nothing. A host whose name did not resolve, or whose network
could not be reached, is not written (not known: it is asked again next
time)."""
import hashlib
import http.client
import ipaddress
import queue
import socket
import ssl
import threading
import time
import urllib.parse

from ._sql import quoted

TABLE = "dedup_url_fixes"
CREATE = (f"CREATE TABLE IF NOT EXISTS {TABLE} (host TEXT PRIMARY KEY, https INTEGER, drop_www INTEGER, "
          "checked TEXT, note TEXT)")
# Redirects followed to a page's final answer; bytes of a body compared.
MAX_REDIRECTS = 5
MAX_BODY = 1 << 20


class NotProbed(Exception):
    """A host that was not asked, and why (its answer is not known)."""


def _public_resolver(allow_private):
    """DNS: the first address of the name; one that is not public is refused
    (NotProbed) unless `allow_private`; a name that does not resolve is
    NotProbed too."""
    def resolve(host, port):
        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except socket.gaierror as e:
            raise NotProbed(f"{host} did not resolve ({e.strerror or e})") from None
        address = infos[0][4][0]
        ip = ipaddress.ip_address(address.split("%")[0])
        if not allow_private and (not ip.is_global or ip.is_multicast):
            raise NotProbed(f"{host} is at {address}, not a public address (allow_private probes it)")
        return address, port
    return resolve


class _Fetcher:
    """GETs through `resolver(host, port) -> (address, port)` (the connection
    goes there; the Host header and TLS name stay the URL's), each request
    ended within `timeout` seconds by a watchdog that cuts its socket, TLS
    verified by `context`. `stop()` cuts every request in flight and
    refuses new ones."""

    def __init__(self, resolver, timeout, context):
        self.resolver, self.timeout, self.context = resolver, timeout, context
        self._lock = threading.Lock()
        self._open = []
        self.stopped = False

    def stop(self):
        with self._lock:
            self.stopped = True
            held = list(self._open)
        for h in held:
            _cut(h[0])

    def get(self, url):
        """(status, headers, body) of one GET, no redirect followed."""
        if self.stopped:
            raise NotProbed("stopped")
        deadline = time.monotonic() + self.timeout
        parts = urllib.parse.urlsplit(url)
        https = parts.scheme == "https"
        port = parts.port or (443 if https else 80)
        address, to_port = self.resolver(parts.hostname, port)
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("timed out")
        sock = socket.create_connection((address, to_port), timeout=left)
        # (The socket in use, for the watchdog and stop(): TLS wraps it.)
        held = [sock]
        with self._lock:
            self._open.append(held)
        watchdog = threading.Timer(max(0.0, deadline - time.monotonic()), lambda: _cut(held[0]))
        watchdog.daemon = True
        watchdog.start()
        try:
            if https:
                sock = held[0] = self.context.wrap_socket(sock, server_hostname=parts.hostname)
            conn = http.client.HTTPConnection(parts.hostname, port, timeout=left)
            conn.sock = sock
            path = urllib.parse.urlunsplit(("", "", parts.path or "/", parts.query, ""))
            conn.request("GET", path, headers={"Host": parts.netloc, "User-Agent": "sqlite-dedup fix_urls",
                                               "Accept": "text/html,*/*"})
            response = conn.getresponse()
            body = response.read(MAX_BODY)
            return response.status, response.getheaders(), body
        except OSError as e:
            if time.monotonic() >= deadline:
                raise TimeoutError("timed out") from None
            if self.stopped:
                raise NotProbed("stopped") from None
            raise e
        finally:
            watchdog.cancel()
            with self._lock:
                self._open.remove(held)
            sock.close()

    def final(self, url, twins):
        """(final URL, status, body digest) after up to MAX_REDIRECTS
        redirects, each to one of the hosts `twins` over http or https (a
        redirect elsewhere ends there: its status is the answer)."""
        for _ in range(MAX_REDIRECTS + 1):
            status, headers, body = self.get(url)
            location = dict((k.lower(), v) for k, v in headers).get("location")
            if status in (301, 302, 303, 307, 308) and location:
                target = urllib.parse.urljoin(url, location)
                parts = urllib.parse.urlsplit(target)
                if parts.scheme not in ("http", "https") or (parts.hostname or "").lower() not in twins:
                    return target, status, None
                url = target
                continue
            return url, status, hashlib.sha256(body).hexdigest()
        return url, None, None


def _cut(sock):
    """Ends a socket's blocking reads at once (from another thread)."""
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


def _normal(url):
    """A final URL as two are compared: the host lower-cased, no fragment, no trailing slash."""
    parts = urllib.parse.urlsplit(url)
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc.lower(), parts.path.rstrip("/") or "/",
                                    parts.query, ""))


def _why(error):
    text = str(error) or type(error).__name__
    return text if len(text) <= 120 else text[:117] + "..."


def _unknown(error):
    """Whether an error says nothing of the host (its name did not resolve,
    its network is unreachable, it was not asked): not an answer to keep."""
    import errno
    return isinstance(error, (NotProbed, socket.gaierror)) or (
        isinstance(error, OSError) and error.errno in (errno.ENETUNREACH, errno.EHOSTUNREACH))


def probe_host(fetch, host, has_http):
    """(https, drop_www, note) for one host: https probed when it has http
    URLs (None otherwise), drop_www when it is a `www.` host (None
    otherwise). Raises NotProbed when its answer is not known."""
    notes, https, drop_www = [], None, None
    name = host.split(":")[0]
    if has_http:
        try:
            status, _, _ = fetch.get(f"https://{host}/")
            https = 1
            notes.append(f"https answered {status}")
        except Exception as e:  # refused, timeout, a certificate that does not verify
            if _unknown(e):
                raise NotProbed(_why(e)) from None
            https = 0
            notes.append(f"https: {_why(e)}")
    if host.startswith("www."):
        scheme = "https" if (https == 1 or not has_http) else "http"
        twins = {name, name[4:]}
        try:
            www = fetch.final(f"{scheme}://{host}/", twins)
            bare = fetch.final(f"{scheme}://{host[4:]}/", twins)
            # (The same page: one name redirects to the other, or both serve the same bytes.)
            same = (www[1] == 200 and bare[1] == 200
                    and (_normal(www[0]) == _normal(bare[0]) or www[2] == bare[2]))
            drop_www = 1 if same else 0
            notes.append(f"{host[4:]} serves the same as {host}" if same
                         else f"{host[4:]} answered {bare[1]}, {host} {www[1]}: not the same")
        except Exception as e:
            if _unknown(e):
                raise NotProbed(_why(e)) from None
            drop_www = 0
            notes.append(f"{host[4:]}: {_why(e)}")
    return https, drop_www, "; ".join(notes)


def _probe_all(fetch, todo, workers, deadline):
    """{host: answer or NotProbed} for the hosts of `todo` answered before
    `deadline` (time.monotonic()); `workers` daemon threads (a host never
    answering keeps no process alive). Ctrl-C stops every request at once."""
    work = queue.SimpleQueue()
    for item in todo:
        work.put(item)
    answers, lock, done = {}, threading.Lock(), threading.Event()

    def worker():
        while not fetch.stopped:
            try:
                host, has_http = work.get_nowait()
            except queue.Empty:
                return
            try:
                answer = probe_host(fetch, host, has_http)
            except NotProbed as e:
                answer = e
            with lock:
                answers[host] = answer
                if len(answers) == len(todo):
                    done.set()

    if not todo:
        return answers
    for _ in range(min(workers, len(todo))):
        threading.Thread(target=worker, daemon=True).start()
    try:
        while not done.wait(0.05):
            if time.monotonic() >= deadline:
                break
    finally:
        fetch.stop()
    with lock:
        return dict(answers)


def fix_urls(conn, table="pages", column="url", timeout=2.0, workers=8, refresh=False, resolver=None,
             context=None, allow_private=False, max_hosts=1000, deadline=300.0):
    """Probes the hosts of `table`'s URLs not probed yet (all with
    `refresh`), at most `max_hosts` of them, and records the answers in
    dedup_url_fixes; returns a dict: probed (hosts answered), https (hosts
    upgraded), drop_www (hosts whose www. name is dropped), skipped (hosts
    already probed or with nothing to probe), left (hosts not answered:
    over `max_hosts`, past `deadline`, a name that did not resolve, an
    address that is not public), and notes (why, a line each, at most 20).
    `timeout` bounds each request (seconds, all of it), `deadline` the
    whole probe, `workers` the requests in flight. `resolver(host, port) ->
    (address, port)` replaces DNS (tests point every name at 127.0.0.1;
    its addresses are the caller's choice); `context` is the
    ssl.SSLContext that verifies https (the system's CAs by default)."""
    def number(value, name, low):
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not value > low:
            raise ValueError(f"fix_urls: {name} must be a number of seconds > {low}, got {value!r}")
    number(timeout, "timeout", 0)
    number(deadline, "deadline", 0)
    if not isinstance(workers, int) or isinstance(workers, bool) or not 1 <= workers <= 256:
        raise ValueError(f"fix_urls: workers must be an integer from 1 to 256, got {workers!r}")
    if not isinstance(max_hosts, int) or isinstance(max_hosts, bool) or max_hosts < 1:
        raise ValueError(f"fix_urls: max_hosts must be an integer >= 1, got {max_hosts!r}")
    # (A host has http URLs when a canonical URL of it is one: a Wayback
    # Machine wrapper's archived URL counts.)
    rows = conn.execute(
        f"SELECT url_host({quoted(column)}) AS h, coalesce(max(canonical_url({quoted(column)}) LIKE 'http:%'), 0) "
        f"FROM {quoted(table)} WHERE h IS NOT NULL GROUP BY h ORDER BY h").fetchall()
    conn.execute(CREATE)
    done = {h for (h,) in conn.execute(f"SELECT host FROM {TABLE}")} if not refresh else set()
    todo = [(h, bool(http)) for h, http in rows
            if h not in done and (http or h.startswith("www."))]
    over = todo[max_hosts:]
    todo = todo[:max_hosts]
    fetch = _Fetcher(resolver or _public_resolver(allow_private), float(timeout),
                     context or ssl.create_default_context())
    found = _probe_all(fetch, todo, workers, time.monotonic() + float(deadline))
    answers = [(h,) + a for h, _ in todo if isinstance(a := found.get(h), tuple)]
    notes = [f"{h}: {found[h]}" for h, _ in todo if isinstance(found.get(h), NotProbed)]
    unanswered = [h for h, _ in todo if h not in found]
    if unanswered:
        notes.append(f"{len(unanswered)} host(s) not answered within the deadline of {deadline:g} s "
                     f"(the first: {unanswered[0]})")
    if over:
        notes.append(f"{len(over)} host(s) over max_hosts = {max_hosts} (the first: {over[0][0]})")
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
            "drop_www": sum(a[2] == 1 for a in answers), "skipped": len(rows) - len(todo) - len(over),
            "left": len(todo) + len(over) - len(answers), "notes": notes[:20]}
