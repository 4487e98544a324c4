#!/usr/bin/env bash
# One device-machine call that checks and measures the CUDA backend (run from the repository root on
# a machine with a GPU, Triton and torch; tritium is used from src/ without installing it).
# Logs go to $OUT (or ./gpu-logs); the summary is printed last.
#   SUITE_SECONDS   time limit of the test-suite run (default 300)
set -u
OUT=${OUT:-gpu-logs}
mkdir -p "$OUT"
export PYTHONPATH=$PWD/src:$PWD/benchmarks/gpu TRITIUM_CACHE_DIR=${TMPDIR:-/tmp}/tritium-cache FAILURE_LOG=$OUT/failures.txt
python3 benchmarks/gpu/launch_overhead.py > "$OUT/launch.txt" 2>&1
python3 benchmarks/cuda_vs_triton.py > "$OUT/bench.txt" 2>&1
python3 -m pytest -q -p no:cacheprovider -p failure_log tests/backends/cuda/test_cuda_tensors.py \
  tests/backends/cuda/test_cuda_triton_bits.py > "$OUT/cuda_tensors.txt" 2>&1
# the execution tests on the CUDA backend alone (the backend fixture stages their host tensors on the GPU)
TRITIUM_TEST_BACKENDS=cuda timeout "${SUITE_SECONDS:-300}" \
  python3 -m pytest -q -n 16 -p no:cacheprovider -p no:benchmark -p failure_log -p timeout --timeout 60 \
  tests/execution tests/language/test_inline_asm.py > "$OUT/suite.log" 2>&1
echo "== launch overhead"; cat "$OUT/launch.txt" | tail -12
echo "== cuda_vs_triton"; tail -13 "$OUT/bench.txt"
echo "== CUDA-tensor and Triton-bits tests"; grep -E "^(FAILED|ERROR)|passed|failed" "$OUT/cuda_tensors.txt" | cut -c1-300 | tail -40
echo "== suite on the GPU"; tail -c 400 "$OUT/suite.log"; echo
echo "failures logged: $(grep -c '^FAILED' "$OUT/failures.txt" 2>/dev/null || echo 0)"
grep '^FAILED' "$OUT/failures.txt" 2>/dev/null | sed 's/\[.*//' | sort | uniq -c | sort -rn | head -30
