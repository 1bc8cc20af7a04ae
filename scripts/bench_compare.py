#!/usr/bin/env python3
"""Wall-clock comparison of two contact_sim binaries in one run (BENCHMARKS.md method).

    python3 scripts/bench_compare.py OLD_BINARY NEW_BINARY [--runs 5] [--steps 20000] [SCENE ...]

Alternates the two binaries' `contact_sim bench --solver pgs,bisection --json` on the scenes
(default: the bisection paper's four experiments) and prints a Markdown table of the medians over
the runs of mean / p50 / p99 µs per whole step and the p50 ratio new/old. Alternating in one run
is what makes the ratio meaningful on a shared VM, where absolute figures move by tens of percent.
"""
import argparse
import json
import statistics
import subprocess

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("old")
parser.add_argument("new")
parser.add_argument("scenes", nargs="*", default=[f"config/examples/bisection_{s}.yaml" for s in ("trot", "hang", "drop", "random")])
parser.add_argument("--runs", type=int, default=5)
parser.add_argument("--steps", type=int, default=20000)
parser.add_argument("--solvers", default="pgs,bisection")
args = parser.parse_intermixed_args()

results = {}
for _ in range(args.runs):
    for label, binary in (("old", args.old), ("new", args.new)):
        out = subprocess.run([binary, "bench", *args.scenes, "--solver", args.solvers, "--steps", str(args.steps), "--json"],
                             capture_output=True, text=True, check=True).stdout
        for row in json.loads(out):
            results.setdefault((row["scene"], row["solver"], label), []).append(row)


def median(rows, key):
    return statistics.median(r[key] for r in rows)


print("| scene | solver | old mean | old p50 | new mean | new p50 | new p99 | p50 new/old |")
print("|---|---|---|---|---|---|---|---|")
for (scene, solver, label), rows in results.items():
    if label != "new":
        continue
    old = results[(scene, solver, "old")]
    print(f"| {scene} | {solver} | {median(old, 'mean_us'):.2f} | {median(old, 'p50_us'):.2f} | {median(rows, 'mean_us'):.2f} | "
          f"{median(rows, 'p50_us'):.2f} | {median(rows, 'p99_us'):.2f} | {median(rows, 'p50_us') / median(old, 'p50_us'):.3f} |")
