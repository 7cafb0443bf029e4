#!/usr/bin/env python3
"""Google Benchmark JSON (stdin) -> CSV (stdout) with one column per counter.

Benchmark's own CSV reporter aborts when benchmarks carry different counters (ours do), so
results are written as JSON and converted here:
  lockstep-bench-sim --benchmark_format=json | scripts/bench-csv.py > bench/results/<machine>/sim.csv
"""
import csv
import json
import sys

FIXED = ["name", "iterations", "real_time", "cpu_time", "time_unit"]
SKIP = set(FIXED) | {"family_index", "per_family_instance_index", "run_name", "run_type",
                     "repetitions", "repetition_index", "threads", "aggregate_name",
                     "aggregate_unit", "big_o", "rms", "complexity_n", "error_occurred",
                     "error_message", "label"}

data = json.load(sys.stdin)
rows = data.get("benchmarks", [])
counters = sorted({k for r in rows for k in r if k not in SKIP})
out = csv.writer(sys.stdout, lineterminator="\n")
out.writerow(FIXED + counters)
for r in rows:
    out.writerow([r.get(k, "") for k in FIXED] + [r.get(k, "") for k in counters])
