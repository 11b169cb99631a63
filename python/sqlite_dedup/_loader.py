"""Loading the extension into a connection (the standard sqlite3 module's
or apsw's): the one place that knows where the library lies."""
import os


class ExtensionLoadError(RuntimeError):
    """The connection cannot load SQLite extensions, or the extension's
    library is not beside the package."""


def loadable_path():
    """The path to pass to `load_extension` (without the `.so` suffix, which
    SQLite adds)."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "dedup0")


def load(conn):
    """Loads the extension into `conn`, a `sqlite3.Connection` or an
    `apsw.Connection`."""
    enable = getattr(conn, "enable_load_extension", None)
    if enable is None:
        raise ExtensionLoadError(
            "this Python's sqlite3 module cannot load extensions (it was built without "
            "SQLITE_ENABLE_LOAD_EXTENSION, as pyenv and python.org macOS builds are). Use an interpreter "
            "that can (Debian/Ubuntu's /usr/bin/python3), or `pip install apsw` and pass an apsw.Connection.")
    if not any(os.path.isfile(loadable_path() + suffix) for suffix in (".so", ".dylib", ".dll")):
        raise ExtensionLoadError(
            f"the extension's library is not installed: no {loadable_path()}.so. Install the package from "
            "its wheel, which carries it; in a source checkout, copy target/release/libdedup.so there "
            "as dedup0.so after `cargo build --release --features loadable_extension`.")
    enable(True)
    try:
        conn.load_extension(loadable_path())
    finally:
        try:
            enable(False)
        except Exception:  # apsw keeps it enabled; nothing to undo
            pass
