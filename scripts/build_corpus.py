"""Rebuild assets/corpus.txt (notebook 05's training text) from the Python 3.11 documentation.

Source: the Debian package ``python3.11-doc`` version 3.11.2-6+deb12u8 (bookworm), which ships
the reStructuredText sources of the Python documentation under
``/usr/share/doc/python3.11/html/_sources``. Licence: Python Software Foundation License
Version 2 (see assets/README.md). The text is prose with code examples.

Usage (on a Debian/Ubuntu machine with apt and dpkg-deb):

    python scripts/build_corpus.py                 # downloads the .deb with `apt-get download`
    python scripts/build_corpus.py --deb FILE.deb  # or uses a .deb you already have

The output is deterministic: the same package version gives the same bytes (the script prints
the SHA-256, which assets/README.md records).
"""
from __future__ import annotations

import argparse
import hashlib
import re
import subprocess
import tempfile
import unicodedata
from pathlib import Path

PACKAGE = "python3.11-doc"
VERSION = "3.11.2-6+deb12u8"
SOURCES = "usr/share/doc/python3.11/html/_sources"
SECTIONS = ["tutorial", "howto", "faq", "reference", "using", "glossary.rst.txt"]
"""Parts of the documentation kept, in this order (files sorted by path inside each part)."""
OUT = Path(__file__).resolve().parent.parent / "assets" / "corpus.txt"

_ROLE = re.compile(r":[a-zA-Z:]+:`~?!?([^`<]*?)\s*(?:<[^>`]*>)?`")
_LITERAL = re.compile(r"``([^`]+)``")
_LINK = re.compile(r"`([^`<]+?)\s*<[^>`]*>`_+")
_UNDERLINE = re.compile(r"^\s*([=\-~^\"'`#*+.:_])\1{2,}\s*$")


def normalise(text: str) -> str:
    """reStructuredText to plain ASCII prose: drop directives and underlines, unwrap roles."""
    lines = []
    for line in text.replace("\t", "    ").splitlines():
        if line.lstrip().startswith(".. ") or _UNDERLINE.match(line):
            continue
        line = _ROLE.sub(r"\1", line)
        line = _LINK.sub(r"\1", line)
        line = _LITERAL.sub(r"\1", line)
        line = unicodedata.normalize("NFKD", line).encode("ascii", "ignore").decode("ascii")
        line = "".join(ch for ch in line if 32 <= ord(ch) < 127)
        lines.append(line.rstrip())
    out = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip("\n")
    return out + "\n\n"


def collect(root: Path) -> str:
    parts = []
    for section in SECTIONS:
        path = root / section
        files = [path] if path.is_file() else sorted(path.rglob("*.rst.txt"))
        for file in files:
            parts.append(normalise(file.read_text(encoding="utf-8")))
    return "".join(parts)


def fetch(workdir: Path) -> Path:
    subprocess.run(["apt-get", "download", f"{PACKAGE}={VERSION}"], cwd=workdir, check=True)
    return next(workdir.glob(f"{PACKAGE}_*.deb"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deb", type=Path, help=f"a downloaded {PACKAGE}_{VERSION}_all.deb")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        deb = args.deb.resolve() if args.deb else fetch(tmp)
        subprocess.run(["dpkg-deb", "-x", str(deb), str(tmp / "x")], check=True)
        text = collect(tmp / "x" / SOURCES)
    args.out.write_text(text, encoding="ascii", newline="\n")
    digest = hashlib.sha256(text.encode("ascii")).hexdigest()
    print(f"wrote {args.out} ({len(text):,} characters), sha256 {digest}")


if __name__ == "__main__":
    main()
