#!/usr/bin/env python3
"""Builds the Python wheel of sqlite-dedup from python/sqlite_dedup and a
built extension, with the standard library only (a wheel is a zip with a
dist-info folder): build_wheel.py SO VERSION PLATFORM OUTDIR."""
import base64
import hashlib
import os
import sys
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def digest(data):
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def main(so, version, platform, outdir):
    package = os.path.join(ROOT, "python", "sqlite_dedup")
    files = {}
    for name in sorted(os.listdir(package)):
        if name.endswith(".py"):
            with open(os.path.join(package, name), "rb") as f:
                text = f.read()
            if name == "__init__.py":
                text = text.replace(b'__version__ = "0.1.0"', f'__version__ = "{version}"'.encode())
            files[f"sqlite_dedup/{name}"] = text
    with open(so, "rb") as f:
        files["sqlite_dedup/dedup0.so"] = f.read()
    info = f"sqlite_dedup-{version}.dist-info"
    with open(os.path.join(ROOT, "python", "README.md"), "rb") as f:
        readme = f.read().decode()
    files[f"{info}/METADATA"] = (
        "Metadata-Version: 2.1\nName: sqlite-dedup\n"
        f"Version: {version}\n"
        "Summary: SQLite extension that finds and removes duplicate and near-duplicate web pages\n"
        "License: MIT\nRequires-Python: >=3.8\nDescription-Content-Type: text/markdown\n\n" + readme).encode()
    files[f"{info}/WHEEL"] = (f"Wheel-Version: 1.0\nGenerator: sqlite-dedup scripts/build_wheel.py\n"
                              f"Root-Is-Purelib: false\nTag: py3-none-{platform}\n").encode()
    files[f"{info}/entry_points.txt"] = b"[console_scripts]\nsqlite-dedup = sqlite_dedup.cli:main\n"
    with open(os.path.join(ROOT, "LICENSE"), "rb") as f:
        files[f"{info}/LICENSE"] = f.read()
    record = "".join(f"{name},{digest(data)},{len(data)}\n" for name, data in files.items())
    files[f"{info}/RECORD"] = (record + f"{info}/RECORD,,\n").encode()
    path = os.path.join(outdir, f"sqlite_dedup-{version}-py3-none-{platform}.whl")
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in files.items():
            zi = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
            zi.external_attr = (0o755 if name.endswith(".so") else 0o644) << 16
            zi.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(zi, data)
    print(path)


if __name__ == "__main__":
    main(*sys.argv[1:])
