"""Writes the wheel of the neardup Python package (no setuptools, no
network): the package's .py files, libneardup.so and the neardup binary
given, with METADATA, WHEEL, entry_points.txt and RECORD. Reproducible:
fixed timestamps and order. Called by scripts/wheel.

    python3 build_wheel.py --version V --plat manylinux_2_34_x86_64 \
        --lib libneardup.so --bin neardup --out dist/
"""

import argparse
import base64
import hashlib
import os
import re
import sys
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
PKG = os.path.join(HERE, "neardup")
EPOCH = (1980, 1, 1, 0, 0, 0)

SUMMARY = "Near-duplicate detection (MinHash LSH, SimHash, exact, Bloom, KSentence) in-process, with a datasketch-compatible API"


def metadata(version):
    readme = os.path.join(HERE, "README.md")
    desc = open(readme, encoding="utf-8").read() if os.path.exists(readme) else SUMMARY
    return (
        "Metadata-Version: 2.1\n"
        "Name: neardup\n"
        f"Version: {version}\n"
        f"Summary: {SUMMARY}\n"
        "Home-page: https://github.com/neardup/neardup\n"
        "Requires-Python: >=3.9\n"
        "Classifier: Programming Language :: Python :: 3\n"
        "Classifier: Programming Language :: Go\n"
        "Classifier: Topic :: Text Processing\n"
        "Description-Content-Type: text/markdown\n"
        "\n" + desc
    )


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--version", required=True)
    ap.add_argument("--plat", required=True, help="wheel platform tag, e.g. manylinux_2_34_x86_64")
    ap.add_argument("--lib", required=True)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()

    files = []  # (archive name, bytes, mode)
    for name in sorted(os.listdir(PKG)):
        if name.endswith(".py") or name == "py.typed":
            if name == "_version.py":
                continue
            with open(os.path.join(PKG, name), "rb") as f:
                files.append((f"neardup/{name}", f.read(), 0o644))
    files.append(("neardup/_version.py", f'__version__ = "{a.version}"\n'.encode(), 0o644))
    with open(a.lib, "rb") as f:
        files.append(("neardup/libneardup.so", f.read(), 0o755))
    with open(a.bin, "rb") as f:
        files.append(("neardup/_bin/neardup", f.read(), 0o755))
    di = f"neardup-{a.version}.dist-info"
    files.append((f"{di}/METADATA", metadata(a.version).encode(), 0o644))
    wheel = (
        "Wheel-Version: 1.0\n"
        "Generator: neardup scripts/wheel\n"
        "Root-Is-Purelib: false\n"
        f"Tag: py3-none-{a.plat}\n"
    )
    files.append((f"{di}/WHEEL", wheel.encode(), 0o644))
    files.append((f"{di}/entry_points.txt", b"[console_scripts]\nneardup = neardup._cli:main\n", 0o644))
    files.append((f"{di}/top_level.txt", b"neardup\n", 0o644))

    record = []
    for name, data, _ in files:
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(data)}")
    record.append(f"{di}/RECORD,,")
    files.append((f"{di}/RECORD", ("\n".join(record) + "\n").encode(), 0o644))

    os.makedirs(a.out, exist_ok=True)
    path = os.path.join(a.out, f"neardup-{a.version}-py3-none-{a.plat}.whl")
    tmp = path + ".tmp"
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data, mode in files:
            zi = zipfile.ZipInfo(name, EPOCH)
            zi.external_attr = (0o100000 | mode) << 16
            zi.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(zi, data, compresslevel=6)
    os.replace(tmp, path)
    # The wheels of other versions for this platform go: docs/python.md's
    # `pip install --no-index dist/neardup-*-manylinux_*_x86_64.whl` took
    # every one that the glob matched after a second build (another
    # commit, another version) and pip stopped with ResolutionImpossible.
    for old in stale_wheels(a.out, path, a.plat):
        os.remove(old)
        print(f"removed the older {old}")
    print(path)


def stale_wheels(out, path, plat):
    """The neardup wheels in out, other than path, for plat's system and
    architecture (manylinux_2_34_x86_64 and manylinux_2_28_x86_64 alike:
    one glob of the docs matches both)."""
    m = re.fullmatch(r"(manylinux|musllinux)_\d+_\d+_(.+)", plat)
    same = (lambda p: re.fullmatch(rf"{m[1]}_\d+_\d+_{re.escape(m[2])}", p) is not None) if m else (lambda p: p == plat)
    for name in sorted(os.listdir(out)):
        w = re.fullmatch(r"neardup-[^-]+-py3-none-(.+)\.whl", name)
        full = os.path.join(out, name)
        if w and same(w[1]) and os.path.abspath(full) != os.path.abspath(path):
            yield full


if __name__ == "__main__":
    sys.exit(main())
