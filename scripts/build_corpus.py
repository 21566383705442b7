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

It also writes ``assets/ctx05_grader_windows.txt``: 48 windows of 1,025 characters (a window of
1,024 and its next character) from the *library* reference of the same package, a part of the
documentation that ``corpus.txt`` leaves out. No notebook reads it: the hidden tests of notebook
05's challenge score a learner's scaling rule on windows of it (``grader/judge/context_lm.py``), so
no notebook table, fit or public check has seen that text.
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
GRADER_SECTION = "library"
"""The part of the documentation the grader's windows come from (not in SECTIONS)."""
GRADER_OUT = OUT.with_name("ctx05_grader_windows.txt")
GRADER_WINDOWS, GRADER_WINDOW = 48, 1025
"""Windows of the grader's text: evenly spaced over the library reference, each 1,024 characters and the next."""

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


def collect(root: Path, sections=SECTIONS) -> str:
    parts = []
    for section in sections:
        path = root / section
        files = [path] if path.is_file() else sorted(path.rglob("*.rst.txt"))
        for file in files:
            parts.append(normalise(file.read_text(encoding="utf-8")))
    return "".join(parts)


def grader_windows(root: Path) -> str:
    """GRADER_WINDOWS windows of GRADER_WINDOW characters, evenly spaced over the library reference, concatenated."""
    text = collect(root, [GRADER_SECTION])
    step = (len(text) - GRADER_WINDOW) // (GRADER_WINDOWS - 1)
    return "".join(text[k * step: k * step + GRADER_WINDOW] for k in range(GRADER_WINDOWS))


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
        held = grader_windows(tmp / "x" / SOURCES)
    for out, content in ((args.out, text), (GRADER_OUT, held)):
        out.write_text(content, encoding="ascii", newline="\n")
        digest = hashlib.sha256(content.encode("ascii")).hexdigest()
        print(f"wrote {out} ({len(content):,} characters), sha256 {digest}")


if __name__ == "__main__":
    main()
