#!/usr/bin/env python3
"""Builds the Python wheels with the standard library only (a wheel is a zip
with a dist-info folder):
  build_wheel.py SO VERSION PLATFORM OUTDIR   sqlite-dedup, with the built extension
  build_wheel.py --plugins VERSION OUTDIR     sqlite-utils-sqlite-dedup and datasette-sqlite-dedup (pure Python)"""
import base64
import hashlib
import os
import re
import sys
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def digest(data):
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def write_wheel(path, files):
    info = [n for n in files if n.endswith("/METADATA")][0].rsplit("/", 1)[0]
    record = "".join(f"{name},{digest(data)},{len(data)}\n" for name, data in files.items())
    files[f"{info}/RECORD"] = (record + f"{info}/RECORD,,\n").encode()
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in files.items():
            zi = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
            zi.external_attr = (0o755 if name.endswith(".so") else 0o644) << 16
            zi.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(zi, data)
    print(path)


def plugins(version, outdir):
    """The two plugin wheels: one module each, an entry point, requirements."""
    for dist, module, group, host, summary in [
        ("sqlite-utils-sqlite-dedup", "sqlite_utils_sqlite_dedup", "sqlite_utils", "sqlite-utils",
         "sqlite-utils plugin: sqlite-dedup's functions in every connection and `sqlite-utils dedup`"),
        ("datasette-sqlite-dedup", "datasette_sqlite_dedup", "datasette", "datasette",
         "Datasette plugin: sqlite-dedup's functions in every query"),
    ]:
        with open(os.path.join(ROOT, "plugins", dist, module + ".py"), "rb") as f:
            code = f.read()
        info = f"{module}-{version}.dist-info"
        files = {
            f"{module}.py": code,
            f"{info}/METADATA": (f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\nSummary: {summary}\n"
                                 f"License: MIT\nRequires-Python: >=3.8\nRequires-Dist: sqlite-dedup == {version}\n"
                                 f"Requires-Dist: {host}\n").encode(),
            f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: sqlite-dedup scripts/build_wheel.py\n"
                             b"Root-Is-Purelib: true\nTag: py3-none-any\n",
            f"{info}/entry_points.txt": f"[{group}]\ndedup = {module}\n".encode(),
        }
        write_wheel(os.path.join(outdir, f"{module}-{version}-py3-none-any.whl"), files)


def main(so, version, platform, outdir):
    package = os.path.join(ROOT, "python", "sqlite_dedup")
    files = {}
    # The package and its subpackages (sqlite_dedup.spark), .py files only.
    for folder, dirs, names in sorted(os.walk(package)):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        rel = os.path.relpath(folder, package).replace(os.sep, "/")
        prefix = "sqlite_dedup/" if rel == "." else f"sqlite_dedup/{rel}/"
        for name in sorted(names):
            if not name.endswith(".py"):
                continue
            with open(os.path.join(folder, name), "rb") as f:
                text = f.read()
            if prefix == "sqlite_dedup/" and name == "__init__.py":
                text = re.sub(rb'__version__ = "[^"]*"', f'__version__ = "{version}"'.encode(), text)
            files[prefix + name] = text
    with open(so, "rb") as f:
        files["sqlite_dedup/dedup0.so"] = f.read()
    info = f"sqlite_dedup-{version}.dist-info"
    with open(os.path.join(ROOT, "python", "README.md"), "rb") as f:
        readme = f.read().decode()
    files[f"{info}/METADATA"] = (
        "Metadata-Version: 2.1\nName: sqlite-dedup\n"
        f"Version: {version}\n"
        "Summary: SQLite extension that finds and removes duplicate and near-duplicate web pages\n"
        "License: MIT\nRequires-Python: >=3.8\n"
        # `pip install "<the wheel>[spark]"`: the Spark layer (docs/scale-out.md),
        # with the pandas PySpark 4.0 supports (2.x) and numpy.
        "Provides-Extra: spark\n"
        'Requires-Dist: pyspark>=4.0; extra == "spark"\n'
        'Requires-Dist: pyarrow>=11; extra == "spark"\n'
        'Requires-Dist: pandas<3,>=2.2; extra == "spark"\n'
        'Requires-Dist: numpy; extra == "spark"\n'
        # `pip install "<the wheel>[scrapy]"`: the Scrapy middleware and item
        # pipeline (sqlite_dedup.scrapy).
        "Provides-Extra: scrapy\n"
        'Requires-Dist: scrapy>=2.11; extra == "scrapy"\n'
        "Description-Content-Type: text/markdown\n\n" + readme).encode()
    files[f"{info}/WHEEL"] = (f"Wheel-Version: 1.0\nGenerator: sqlite-dedup scripts/build_wheel.py\n"
                              f"Root-Is-Purelib: false\nTag: py3-none-{platform}\n").encode()
    files[f"{info}/entry_points.txt"] = b"[console_scripts]\nsqlite-dedup = sqlite_dedup.cli:main\n"
    with open(os.path.join(ROOT, "LICENSE"), "rb") as f:
        files[f"{info}/LICENSE"] = f.read()
    write_wheel(os.path.join(outdir, f"sqlite_dedup-{version}-py3-none-{platform}.whl"), files)


if __name__ == "__main__":
    if sys.argv[1] == "--plugins":
        plugins(*sys.argv[2:])
    else:
        main(*sys.argv[1:])
