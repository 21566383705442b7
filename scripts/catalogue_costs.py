#!/usr/bin/env python3
"""Print what each catalogued wrong answer costs: the hidden tests of its exercise it fails.

    python scripts/catalogue_costs.py NOTEBOOK [--exercise NAME ...] [--over]

NOTEBOOK is a solution notebook's name or its number (``02``). Each entry of
``tests/catalogue/NOTEBOOK.py`` is graded as ``tests/test_catalogue.py`` grades it (a copy of the
solution with the exercise cell replaced, through ``grader.batch.variants.VariantGrader``); one line per
entry gives the tests failed and points lost out of the exercise's, then the failing tests. DESIGN's
"one mistake costs once" asks for one failing test per mistake; an entry over its ``costs`` is
flagged (a failing public check is not counted: each fails on every mistake its inputs reveal), and
``--over`` prints only those. An entry that passes every public check of its exercise is flagged
PUBLIC-BLIND ("unmarked" where tests/catalogue/public_blind.py gives no reason). It prints; it
asserts nothing.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from grader.results import PASSED  # noqa: E402
from grader.batch.variants import VariantGrader  # noqa: E402
from tests.catalogue import modules  # noqa: E402
from tests.catalogue.public_blind import PUBLIC_BLIND  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebook", help="a solution notebook's name or number, e.g. 02")
    parser.add_argument("--exercise", action="append", metavar="NAME", help="only this exercise (repeatable)")
    parser.add_argument("--over", action="store_true", help="only the entries that fail more tests than their costs")
    parser.add_argument("--blind-table", action="store_true",
                        help="print tests/catalogue/public_blind.py's lines for the entries that pass every "
                             "public check and are not marked there yet (reason: the hidden tests that see it)")
    args = parser.parse_args()
    paths = [p for p in sorted((ROOT / "solutions").glob("*.ipynb"))
             if p.stem == args.notebook or p.stem.startswith(f"{args.notebook}_")]
    found = modules(paths)
    if len(found) != 1:
        parser.error(f"{args.notebook}: no single solution notebook with a catalogue matches; give a name "
                     f"or number of tests/catalogue/ such as 02")
    name, module = found[0]
    entries = [w for w in module.WRONG_ANSWERS if not args.exercise or w.exercise in args.exercise]
    if not entries:
        parser.error(f"--exercise {' '.join(args.exercise)}: no entry of {name}'s catalogue is for it")
    held = getattr(module, "COSTS_ONCE", False)
    print(f"{name}: {len(entries)} entries; one mistake costs once is {'checked' if held else 'not yet checked'} "
          f"by tests/test_catalogue.py")
    over, blind = 0, []
    with VariantGrader(next(p for p in paths if p.stem == name)) as grader:
        for wrong in entries:
            start = time.monotonic()
            report = grader.grade({wrong.exercise: wrong.source}, exercises=grader.reached({wrong.exercise: wrong.source}))
            failed = [t for t in report.tests if t.status != PASSED]
            hidden = [t for t in failed if not t.public]  # a public check fails too where it sees it
            over += len(hidden) > wrong.costs
            if args.blind_table:
                public = [t for t in report.tests if t.public and t.exercise == wrong.exercise]
                if all(t.status == PASSED for t in public) \
                        and (wrong.exercise, wrong.mistake) not in PUBLIC_BLIND.get(name, {}):
                    blind.append(f"    ({wrong.exercise!r}, {wrong.mistake!r}):\n        "
                                 f"{_reason(wrong, [t for t in hidden if t.exercise == wrong.exercise])!r},")
                continue
            if args.over and len(hidden) <= wrong.costs:
                continue
            flag = f"  OVER (costs {wrong.costs})" if len(hidden) > wrong.costs else ""
            public = [t for t in report.tests if t.public and t.exercise == wrong.exercise]
            if all(t.status == PASSED for t in public):
                marked = (wrong.exercise, wrong.mistake) in PUBLIC_BLIND.get(name, {})
                flag += "  PUBLIC-BLIND" + ("" if marked else " (unmarked)")
            print(f"{wrong.exercise:30s} {wrong.mistake[:50]:50s} fails {len(failed)}/{len(report.tests)} tests, "
                  f"{sum(t.max_score for t in failed):g}/{report.max_score:g} pts, "
                  f"{time.monotonic() - start:.1f} s{flag}")
            for test in failed:
                print(f"    {test.name}")
    if args.blind_table:
        print(f"    # {name}\n" + "\n".join(blind))
        return
    print(f"{over} of {len(entries)} entries fail more tests than their costs")


def _reason(wrong, failed) -> str:
    """Why the public checks cannot reveal ``wrong``: the hidden tests that do, by description."""
    if "public case" in wrong.mistake:
        return "it hard-codes the public case's answer: only the hidden cases differ from it"
    seen = "; ".join(dict.fromkeys(t.description.rstrip(".") for t in failed)) or "no test"
    return f"only inputs the public checks do not use show it; the hidden tests that do: {seen}"


if __name__ == "__main__":
    main()
