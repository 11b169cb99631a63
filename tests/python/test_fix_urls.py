"""`fix_urls`: per host, does https answer, does the bare host serve what the
`www.` name serves; the answers in dedup_url_fixes; a run with the setting
canonicalizes by them. Every request goes to local HTTP and HTTPS servers on
127.0.0.1 (a self-signed certificate for the test names) through an
injected resolver that refuses any other name: no test touches another
address. The expected answers and survivors are worked out by hand from the
sites below."""
import http.server
import os
import signal
import socket
import sqlite3
import ssl
import subprocess
import sys
import threading
import time

import pytest

import pipeline as P

# The test sites: (host, scheme) -> (status, headers, body) of "/".
NAMES = ["site.test", "www.site.test", "redir.test", "www.redir.test", "other.test", "www.other.test",
         "www.gone.test", "slow.test"]


def answer(host, scheme):
    if host in ("site.test", "www.site.test"):
        return 200, {}, b"<html><body>The site's home page.</body></html>"
    if host == "www.redir.test":
        return 301, {"Location": "https://redir.test/"}, b""
    if host == "redir.test":
        return 200, {}, b"<html><body>Redirected home.</body></html>"
    if host == "other.test":
        return 200, {}, b"<html><body>The bare host's own page.</body></html>"
    if host == "www.other.test":
        return 200, {}, b"<html><body>Another page under www.</body></html>"
    if host in ("www.gone.test", "old.test"):
        return 200, {}, b"<html><body>Still here.</body></html>"
    return 404, {}, b"no such site"


class Site(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        status, headers, body = answer(self.headers["Host"].split(":")[0].lower(), self.server.scheme)
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    """(resolver, ssl context, http port, https port, cafile); the servers
    stop with the module."""
    work = tmp_path_factory.mktemp("tls")
    key, cert = str(work / "key.pem"), str(work / "cert.pem")
    # (slow.test and old.test are not in the certificate: old.test's https fails to verify.)
    san = ",".join(f"DNS:{n}" for n in NAMES if n != "slow.test")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert,
                    "-days", "2", "-subj", "/CN=sqlite-dedup test", "-addext", f"subjectAltName={san}"],
                   check=True, capture_output=True)
    plain = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Site)
    plain.scheme = "http"
    tls = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Site)
    tls.scheme = "https"
    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_context.load_cert_chain(cert, key)
    tls.socket = server_context.wrap_socket(tls.socket, server_side=True)
    # A port that accepts and never answers, and one where nothing listens.
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(16)
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    closed_port = closed.getsockname()[1]
    closed.close()
    for s in (plain, tls):
        threading.Thread(target=s.serve_forever, daemon=True).start()
    ports = {80: plain.server_address[1], 443: tls.server_address[1]}

    def resolver(host, port):
        assert host.endswith(".test") and port in ports, f"a request to {host}:{port}"
        if host == "gone.test":
            return "127.0.0.1", closed_port
        if host == "slow.test" and port == 443:
            return "127.0.0.1", silent.getsockname()[1]
        return "127.0.0.1", ports[port]

    yield resolver, ssl.create_default_context(cafile=cert), ports, cert
    plain.shutdown(), tls.shutdown(), silent.close()



TEXTS = {
    "harbours": "Ships come in at dawn; the harbour master counts the crates and the gulls wait on the pier.",
    "trams": "Line four now runs past the station every six minutes, and the old depot became a bakery.",
    "libraries": "Members may borrow twelve books at once; the reading room closes early on Sundays.",
    "bridges": "Seven spans cross the river here, the oldest of stone, the newest a footbridge of steel.",
    "ferries": "In winter only the morning boat sails to the islands, weather permitting, with cars booked ahead.",
    "markets": "Farmers sell cheese, apples and honey under the arcades every Thursday until noon.",
    "gardens": "The glasshouse keeps orchids and a banana tree; the rose beds bloom in late June.",
    "museums": "Entry is free on the first Friday; the new wing shows maps drawn by sailors.",
}
# (rowid, url, crawled): each text its own; rows 1 and 2 meet once www. is dropped.
PAGES = [(1, "http://site.test/a", "2026-01-01"), (2, "http://www.site.test/a", "2026-01-02"),
         (3, "http://old.test/b", "2026-01-01"), (4, "http://www.other.test/c", "2026-01-01"),
         (5, "https://www.redir.test/d", "2026-01-01"), (6, "http://www.gone.test/e", "2026-01-01"),
         (7, "http://slow.test/f", "2026-01-01"),
         (8, "https://web.archive.org/web/2015/http://www.site.test/g", "2026-01-01")]
SUBJECTS = ["harbours", "trams", "libraries", "bridges", "ferries", "markets", "gardens", "museums"]


def crawl(path):
    conn = P.connect(path)
    conn.execute("CREATE TABLE pages (url TEXT, title TEXT, content TEXT, crawled TEXT)")
    for (rowid, url, crawled), subject in zip(PAGES, SUBJECTS):
        conn.execute("INSERT INTO pages (rowid, url, title, content, crawled) VALUES (?, ?, ?, ?, ?)",
                     (rowid, url, subject, TEXTS[subject], crawled))
    return conn


# What the sites above serve, worked out by hand: (https, drop_www) per host.
EXPECTED = {"site.test": (1, None), "www.site.test": (1, 1), "old.test": (0, None), "www.other.test": (1, 0),
            "www.redir.test": (None, 1), "www.gone.test": (1, 0), "slow.test": (0, None)}


def test_each_host_is_probed_once_and_its_answers_kept(tmp_path, servers, sqlite_dedup):
    resolver, context, _, _ = servers
    conn = crawl(str(tmp_path / "c.db"))
    found = sqlite_dedup.fix_urls(conn, timeout=1.0, workers=4, resolver=resolver, context=context)
    assert found == {"probed": 7, "https": 4, "drop_www": 2, "skipped": 0, "left": 0, "notes": []}, found
    rows = {h: (https, www) for h, https, www in conn.execute("SELECT host, https, drop_www FROM dedup_url_fixes")}
    assert rows == EXPECTED
    notes = dict(conn.execute("SELECT host, note FROM dedup_url_fixes"))
    assert "timed out" in notes["slow.test"] and "certificate" in notes["old.test"], notes
    assert "site.test serves the same as www.site.test" in notes["www.site.test"]
    # Probed hosts are not probed again, unless asked.
    assert sqlite_dedup.fix_urls(conn, resolver=resolver, context=context)["probed"] == 0
    assert sqlite_dedup.fix_urls(conn, refresh=True, timeout=1.0, resolver=resolver, context=context)["probed"] == 7


def test_a_run_rewrites_only_the_hosts_whose_variant_answered(tmp_path, servers, sqlite_dedup):
    resolver, context, _, _ = servers
    plain = crawl(str(tmp_path / "plain.db"))
    plain.execute("SELECT dedup_run()").fetchone()
    # (Without fix_urls nothing meets; the archived page takes the URL it wraps.)
    assert P.surviving(plain) == {**{rowid: url for rowid, url, _ in PAGES}, 8: "http://www.site.test/g"}
    conn = crawl(str(tmp_path / "c.db"))
    with pytest.raises(Exception, match="fix_urls uses the hosts' answers in dedup_url_fixes, got no such table"):
        sqlite_dedup.run(conn, fix_urls=True)
    sqlite_dedup.fix_urls(conn, timeout=1.0, resolver=resolver, context=context)
    report = sqlite_dedup.run(conn, fix_urls=True)
    assert report["removed"] == {"2": 1}, report
    assert P.surviving(conn) == {2: "https://site.test/a", 3: "http://old.test/b", 4: "https://www.other.test/c",
                                 5: "https://redir.test/d", 6: "https://www.gone.test/e", 7: "http://slow.test/f",
                                 8: "https://site.test/g"}
    assert conn.execute("SELECT dedup_survivor, dedup_reason FROM dedup_removed").fetchall() == \
        [(2, "same canonical URL")]
    assert conn.execute("SELECT json_extract(settings, '$.fix_urls') FROM dedup_runs").fetchone()[0] == 1
    with pytest.raises(Exception, match="fix_urls cannot be combined with compat"):
        sqlite_dedup.run(conn, fix_urls=True, compat="reference")


def test_bad_answers_and_bad_arguments_are_named(tmp_path, sqlite_dedup):
    conn = crawl(str(tmp_path / "c.db"))
    conn.execute("CREATE TABLE dedup_url_fixes (host TEXT PRIMARY KEY, https INTEGER, drop_www INTEGER, "
                 "checked TEXT, note TEXT)")
    conn.execute("INSERT INTO dedup_url_fixes VALUES ('site.test', 'yes', NULL, NULL, NULL)")
    before = P.fingerprint(str(tmp_path / "c.db"))
    with pytest.raises(Exception, match="dedup_url_fixes's row for host 'site.test' is wrong"):
        sqlite_dedup.run(conn, fix_urls=True)
    assert P.fingerprint(str(tmp_path / "c.db")) == before
    with pytest.raises(ValueError, match="timeout must be a number of seconds > 0"):
        sqlite_dedup.fix_urls(conn, timeout=0)
    with pytest.raises(ValueError, match="workers must be an integer from 1 to 256"):
        sqlite_dedup.fix_urls(conn, workers=0)


def test_the_command_probes_through_connect_to_and_runs(tmp_path, servers):
    _, _, ports, cafile = servers
    db = str(tmp_path / "c.db")
    crawl(db).close()
    pairs = [f"{n}:{p}:127.0.0.1:{ports[p]}" for n in NAMES + ["old.test"] if n != "slow.test" for p in (80, 443)]
    pairs += ["gone.test:80:127.0.0.1:1", "gone.test:443:127.0.0.1:1"]  # (nothing listens there)
    env = dict(os.environ, PYTHONPATH=P.package(tmp_path))
    cli = [sys.executable, "-m", "sqlite_dedup"]
    # (slow.test is left out of the probe: `run --fix-urls` then probes it, and only it, itself.)
    with P.connect(db) as conn:
        conn.execute("CREATE TABLE dedup_url_fixes (host TEXT PRIMARY KEY, https INTEGER, drop_www INTEGER, "
                     "checked TEXT, note TEXT)")
        conn.execute("INSERT INTO dedup_url_fixes VALUES ('slow.test', 0, NULL, datetime('now'), 'by hand')")
    args = ["fix-urls", db, "--timeout", "1", "--cafile", cafile] + [a for p in pairs for a in ("--connect-to", p)]
    out = subprocess.run(cli + args, capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("fix_urls: probed 6 host(s): 4 answer https, 2 serve the same without www.;"), \
        out.stdout
    out = subprocess.run(cli + ["run", db, "--fix-urls"], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert "fix_urls: probed 0 host(s)" in out.stdout and "phase 2 (same canonical URL): 1 removed" in out.stdout


def drip_server(interval=0.5, accepted=None):
    """A server on 127.0.0.1 that accepts and answers one byte every
    `interval` seconds, for ever; (port, stop). `accepted`, an Event, is
    set when a connection comes."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    stopped = threading.Event()

    def serve(conn):
        try:
            while not stopped.is_set():
                conn.sendall(b"H")
                time.sleep(interval)
        except OSError:
            pass

    def accept():
        while not stopped.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            if accepted is not None:
                accepted.set()
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    return listener.getsockname()[1], lambda: (stopped.set(), listener.close())


def one_page(path, url):
    conn = P.connect(path)
    conn.execute("CREATE TABLE pages (url TEXT, content TEXT)")
    conn.execute("INSERT INTO pages VALUES (?, 'a page')", (url,))
    return conn


def test_a_host_that_answers_a_byte_at_a_time_is_cut_at_the_timeout(tmp_path, sqlite_dedup):
    """Issue 76: `timeout` bounded each socket read, so a host that answers
    one byte every 0.5 s was still being probed after 25 s with timeout=1.
    It now bounds the whole request."""
    port, stop = drip_server()
    try:
        conn = one_page(str(tmp_path / "c.db"), "http://drip.test/a")
        start = time.monotonic()
        found = sqlite_dedup.fix_urls(conn, timeout=1.0, resolver=lambda h, p: ("127.0.0.1", port))
        took = time.monotonic() - start
    finally:
        stop()
    assert found["probed"] == 1 and found["https"] == 0, found
    assert "timed out" in conn.execute("SELECT note FROM dedup_url_fixes").fetchone()[0]
    assert took < 10, took  # (a hang check: one request of 1 s; before, no end)


def test_the_whole_probe_ends_at_its_deadline_and_writes_what_answered(tmp_path, sqlite_dedup):
    port, stop = drip_server()
    try:
        conn = one_page(str(tmp_path / "c.db"), "http://drip.test/a")
        conn.execute("INSERT INTO pages VALUES ('http://drip2.test/b', 'another')")
        start = time.monotonic()
        found = sqlite_dedup.fix_urls(conn, timeout=60.0, deadline=1.0, resolver=lambda h, p: ("127.0.0.1", port))
        took = time.monotonic() - start
    finally:
        stop()
    assert (found["probed"], found["left"]) == (0, 2), found
    assert "2 host(s) not answered within the deadline of 1 s" in found["notes"][0], found
    assert conn.execute("SELECT count(*) FROM dedup_url_fixes").fetchone()[0] == 0
    assert took < 10, took


def test_ctrl_c_stops_the_command_at_once_and_writes_nothing(tmp_path):
    """Issue 76: SIGINT waited for the thread pool's requests. The command
    now stops at once, its requests cut, nothing written."""
    # (A byte every 2 s: the probe waits 8 s for a TLS record's header, so
    # it is surely in flight when the signal comes, however loaded the
    # machine.)
    accepted = threading.Event()
    port, stop = drip_server(interval=2.0, accepted=accepted)
    db = str(tmp_path / "c.db")
    one_page(db, "http://drip.test/a").close()
    env = dict(os.environ, PYTHONPATH=P.package(tmp_path))
    try:
        proc = subprocess.Popen(P.interruptible(sys.executable, "fix-urls", db, "--timeout", "60",
                                                "--connect-to", f"drip.test:443:127.0.0.1:{port}"),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        # (The probe is in flight once the server has its connection; a
        # fixed sleep could outlast it on a loaded machine.)
        assert accepted.wait(60), "the probe never connected"
        time.sleep(0.3)
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
        took = time.monotonic() - sent
    finally:
        stop()
    assert proc.returncode == 130, (out, err)
    assert "interrupted" in err
    assert took < 5, took
    tables = sqlite3.connect(db).execute("SELECT count(*) FROM sqlite_schema WHERE name = 'dedup_url_fixes'"
                                         ).fetchone()[0]
    assert tables == 0 or sqlite3.connect(db).execute("SELECT count(*) FROM dedup_url_fixes").fetchone()[0] == 0


class Counting(http.server.BaseHTTPRequestHandler):
    seen = []

    def do_GET(self):
        Counting.seen.append(self.headers["Host"])
        body = b"<html>here</html>"
        if self.headers["Host"].startswith("www.away.test"):
            self.send_response(301)
            self.send_header("Location", f"http://elsewhere.test:{self.server.server_address[1]}/")
            body = b""
        else:
            self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def counting():
    Counting.seen = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Counting)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()


def test_a_host_at_a_private_address_is_probed_only_when_allowed(tmp_path, sqlite_dedup, counting):
    """Issue 76: a stranger's database could make the probe reach 127.0.0.1
    ports and private addresses. Names that resolve so (here the URL's own
    address, through the system's resolver) are not probed, and not
    recorded, unless allow_private."""
    conn = one_page(str(tmp_path / "c.db"), f"http://127.0.0.1:{counting}/a")
    conn.execute("INSERT INTO pages VALUES (?, 'a page')", (f"http://localhost:{counting}/b",))
    found = sqlite_dedup.fix_urls(conn, timeout=1.0)
    assert (found["probed"], found["left"]) == (0, 2), found
    assert all("not a public address (allow_private probes it)" in n for n in found["notes"]), found
    assert Counting.seen == []
    assert conn.execute("SELECT count(*) FROM dedup_url_fixes").fetchone()[0] == 0
    found = sqlite_dedup.fix_urls(conn, timeout=1.0, allow_private=True)
    assert found["probed"] == 2, found
    # (https to a plain http port fails: each host answered, https 0.)
    assert sorted(conn.execute("SELECT host, https FROM dedup_url_fixes")) == [
        (f"127.0.0.1:{counting}", 0), (f"localhost:{counting}", 0)]


def test_a_redirect_to_another_host_is_not_followed(tmp_path, sqlite_dedup, counting):
    """Issue 76: redirects were followed anywhere. www.away.test redirects
    to elsewhere.test: not followed (no request reaches it), so the bare
    host is not taken to serve the same."""
    conn = one_page(str(tmp_path / "c.db"), "http://www.away.test/a")
    found = sqlite_dedup.fix_urls(conn, timeout=1.0, resolver=lambda h, p: ("127.0.0.1", counting))
    assert found["probed"] == 1, found
    assert any(h.startswith("www.away.test") for h in Counting.seen), Counting.seen
    assert not any(h.startswith("elsewhere.test") for h in Counting.seen), Counting.seen
    assert conn.execute("SELECT drop_www FROM dedup_url_fixes WHERE host = 'www.away.test'").fetchone() == (0,)


def test_at_most_max_hosts_are_probed_and_unresolved_names_are_not_kept(tmp_path, sqlite_dedup, servers):
    """77: an offline probe stored every DNS failure as a permanent 'no
    https'. A name that does not resolve is now left out (asked again next
    time), and at most max_hosts hosts are probed a call."""
    resolver, context, _, _ = servers

    def offline(host, port):
        raise socket.gaierror(-3, "Temporary failure in name resolution")

    conn = crawl(str(tmp_path / "c.db"))
    found = sqlite_dedup.fix_urls(conn, timeout=1.0, resolver=offline, context=context)
    assert (found["probed"], found["left"]) == (0, 7), found
    assert "Temporary failure in name resolution" in found["notes"][0]
    assert conn.execute("SELECT count(*) FROM dedup_url_fixes").fetchone()[0] == 0
    found = sqlite_dedup.fix_urls(conn, timeout=1.0, max_hosts=2, resolver=resolver, context=context)
    assert (found["probed"], found["left"]) == (2, 5), found
    assert "5 host(s) over max_hosts = 2" in found["notes"][0]
    found = sqlite_dedup.fix_urls(conn, timeout=1.0, resolver=resolver, context=context)
    assert (found["probed"], found["skipped"], found["left"]) == (5, 2, 0), found
