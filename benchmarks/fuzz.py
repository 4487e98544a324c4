"""Differential fuzzing campaign: random kernels on every execution path, for N minutes.

    python benchmarks/fuzz.py --minutes 30 [--seed 0] [--frontend] [--keep FOLDER]

Draws kernels from ``tests/fuzz/generator.py`` (seeds ``seed, seed + 1, ...``), runs each on the
interpreter's reference mode, the interpreter (with the compiler's analysis claims checked), the
interpreter with small batches and every compiled backend present (``tests/fuzz/differential.py``),
and reports kernels tried, paths compared, kernels every path refused alike, and findings:
internal errors, exceptions on some paths only, and disagreements beyond the documented bounds.
``--frontend`` fuzzes the frontend instead: mutated kernel sources must run or fail with a
``CompilationError`` naming a line of the kernel (``tests/fuzz/frontend.py``). Each finding is
printed with its kernel, and with ``--keep`` written to a file there. The exit status is 1 when
anything was found.
"""
from __future__ import annotations

import argparse
import collections
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))

from fuzz.differential import available_paths, check_case  # noqa: E402
from fuzz.frontend import check_mutant, mutant  # noqa: E402
from fuzz.generator import RandomDraw, draw_case  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=0, help="the first seed (each kernel takes the next)")
    parser.add_argument("--frontend", action="store_true", help="fuzz the frontend with mutated sources")
    parser.add_argument("--keep", help="a folder to write each finding to")
    args = parser.parse_args(argv)
    os.environ.setdefault("TRITIUM_AUTOTUNE_PROGRESS", "0")
    deadline = time.monotonic() + args.minutes * 60
    paths = available_paths()
    tried = compared = refused = 0
    found = collections.Counter()
    features = collections.Counter()
    seed = args.seed
    while time.monotonic() < deadline:
        if args.frontend:
            case, outcome, findings = _frontend_one(seed)
            refused += outcome == "compilation error"
        else:
            case = draw_case(RandomDraw(seed))
            features.update(case.features)
            findings = check_case(case, seed, paths)
            compared += len(paths) - 1
        tried += 1
        for finding in findings:
            found[finding.kind] += 1
            text = f"seed {seed}: {finding.report()}"
            print(text, flush=True)
            if args.keep:
                os.makedirs(args.keep, exist_ok=True)
                with open(os.path.join(args.keep, f"finding-{seed}.txt"), "w") as f:
                    f.write(text)
        seed += 1
    minutes = args.minutes
    if args.frontend:
        print(f"frontend: {tried} mutated kernels in {minutes:g} min (seeds {args.seed}..{seed - 1}); "
              f"{refused} refused with a CompilationError at a kernel line, {tried - refused - sum(found.values())} "
              f"ran; findings: {dict(found) or 'none'}")
    else:
        print(f"differential: {tried} kernels in {minutes:g} min (seeds {args.seed}..{seed - 1}), paths "
              f"{', '.join(paths)}: {compared} comparisons with the reference; findings: {dict(found) or 'none'}")
        print("features: " + ", ".join(f"{k} {n}" for k, n in sorted(features.items())))
    return 1 if found else 0


def _frontend_one(seed: int):
    case, source = mutant(RandomDraw(seed))
    outcome, findings = check_mutant(case, source, seed)
    return case, outcome, findings


if __name__ == "__main__":
    sys.exit(main())
