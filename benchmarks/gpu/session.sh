#!/usr/bin/env bash
# Device-machine calls that check and measure the CUDA backend (run from the repository root on a
# machine with a GPU, Triton and torch; tritium is used from src/ without installing it).
#   bash benchmarks/gpu/session.sh suite   the whole test suite (every backend, cuda included), the
#                                          CUDA-tensor tests, the launch overhead, the wgmma probe
#   bash benchmarks/gpu/session.sh matmul  tests/backends/cuda, then benchmarks/gpu/matmul_stages.py (tutorial 03
#                                          config by config: mma.sync, wgmma, Triton)
#   bash benchmarks/gpu/session.sh tensor-cores   the same, then benchmarks/gpu/attention_fwd.py
#   TESTS_SECONDS, MATMUL_SECONDS, ATTENTION_SECONDS: time limits of those parts; CONFIGS: matmul configs timed
#   bash benchmarks/gpu/session.sh bench   benchmarks/cuda_vs_triton.py; with BASELINE_SRC=<a src/
#                                          folder of another build>, that build's run too, in the
#                                          same call, for a before/after on one card
#   bash benchmarks/gpu/session.sh         both
# Logs go to $OUT (or ./gpu-logs); the summary is printed last.
#   SUITE_SECONDS   time limit of the test-suite run (default 420)
set -u
OUT=${OUT:-gpu-logs}
mkdir -p "$OUT"
WHAT=${1:-all}
export PYTHONPATH=$PWD/src:$PWD/benchmarks/gpu TRITIUM_CACHE_DIR=${TMPDIR:-/tmp}/tritium-cache FAILURE_LOG=$OUT/failures.txt
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/card.txt" 2>&1
if [ "$WHAT" = matmul ] || [ "$WHAT" = tensor-cores ]; then
  timeout "${TESTS_SECONDS:-300}" python3 -m pytest -q -n 12 -p no:cacheprovider -p failure_log tests/backends/cuda > "$OUT/cuda_tests.txt" 2>&1
  timeout "${MATMUL_SECONDS:-240}" python3 benchmarks/gpu/matmul_stages.py --repeat "${REPEAT:-2}" --configs "${CONFIGS:-10}" > "$OUT/matmul_stages.txt" 2>&1
  if [ "$WHAT" = tensor-cores ]; then
    timeout "${ATTENTION_SECONDS:-240}" python3 benchmarks/gpu/attention_fwd.py --repeat "${REPEAT:-2}" > "$OUT/attention_fwd.txt" 2>&1
  fi
  echo "== card"; cat "$OUT/card.txt"
  echo "== tests/backends/cuda"; grep -E "^(FAILED|ERROR)|passed|failed" "$OUT/cuda_tests.txt" | cut -c1-300 | tail -30
  echo "== matmul_stages"; tail -24 "$OUT/matmul_stages.txt"
  if [ "$WHAT" = tensor-cores ]; then echo "== attention_fwd"; tail -40 "$OUT/attention_fwd.txt"; fi
  exit 0
fi
if [ "$WHAT" != bench ]; then
  python3 benchmarks/gpu/launch_overhead.py > "$OUT/launch.txt" 2>&1
  python3 benchmarks/gpu/wgmma_probe.py --run > "$OUT/wgmma_probe.txt" 2>&1
  python3 -m pytest -q -p no:cacheprovider -p failure_log tests/backends/cuda > "$OUT/cuda_tests.txt" 2>&1
  # the suite as `make test` runs it: the execution tests once per backend (interpreter, cpu, cuda)
  timeout "${SUITE_SECONDS:-420}" python3 -m pytest -q -n 16 -p no:cacheprovider -p no:benchmark -p failure_log \
    -p timeout --timeout 120 tests > "$OUT/suite.log" 2>&1
  python3 -m pytest -o addopts= -q -p no:cacheprovider --collect-only tests 2>/dev/null | grep -oE '[-[](interpreter|cpu|cuda)[]-]' \
    | tr -d '[]-' | sort | uniq -c > "$OUT/per_backend.txt"
fi
if [ "$WHAT" != suite ]; then
  python3 benchmarks/cuda_vs_triton.py > "$OUT/bench.txt" 2>&1
  if [ -n "${BASELINE_SRC:-}" ]; then
    PYTHONPATH=$BASELINE_SRC:$PWD/benchmarks/gpu TRITIUM_CACHE_DIR=${TMPDIR:-/tmp}/tritium-cache-base \
      python3 benchmarks/cuda_vs_triton.py > "$OUT/bench_baseline.txt" 2>&1
  fi
fi
echo "== card"; cat "$OUT/card.txt"
if [ "$WHAT" != bench ]; then
  echo "== launch overhead"; tail -12 "$OUT/launch.txt"
  echo "== wgmma probe"; tail -5 "$OUT/wgmma_probe.txt"
  echo "== tests/backends/cuda"; grep -E "^(FAILED|ERROR)|passed|failed" "$OUT/cuda_tests.txt" | cut -c1-300 | tail -20
  echo "== suite (items per backend collected:)"; cat "$OUT/per_backend.txt"; tail -c 400 "$OUT/suite.log"; echo
  echo "failures logged: $(grep -c '^FAILED' "$OUT/failures.txt" 2>/dev/null || echo 0)"
  grep '^FAILED' "$OUT/failures.txt" 2>/dev/null | sed 's/\[.*//' | sort | uniq -c | sort -rn | head -30
fi
if [ "$WHAT" != suite ]; then
  echo "== cuda_vs_triton"; tail -13 "$OUT/bench.txt"
  if [ -n "${BASELINE_SRC:-}" ]; then echo "== cuda_vs_triton, baseline build"; tail -13 "$OUT/bench_baseline.txt"; fi
fi
