#!/usr/bin/env bash
# One offline check of a CUDA machine, inside a wall-clock budget (docs/gpu.md, "The device check"):
#
#   1. installs what .gpu_carry/ holds (scripts/gpu_recipe.sh prepare fills it on a networked machine);
#   2. runs the tests that only a GPU can decide (tests/device: NeMo's CUDA RNN-T loss against nemo_pc's scan loss,
#      bf16 training of both families, decoding and n-gram LM fusion on the device against CPU, ONNX export) and
#      the loss tests, with NEMO_PC_TEST_DEVICE=cuda;
#   3. runs the GPU recipe (benchmarks/run_gpu_recipe.py: corpus, the conditioned RNN-T at FastConformer size in bf16
#      for the minutes left, both outputs scored), whose training gives steps/s and audio-seconds/s;
#   4. writes $OUT/device_check.json (benchmarks/render_device_check.py): the machine, the test outcomes, the throughput,
#      and the recipe's scores.
#
#   scripts/device_check.sh                         everything in DEVICE_CHECK_SECONDS (540)
#
# Environment: DEVICE_CHECK_SECONDS (540), DEVICE_CHECK_HOURS (planned corpus hours, 12), DEVICE_CHECK_TESTS (the
# pytest paths, "tests/device tests/losses"), DEVICE_CHECK_TESTS_SECONDS (240), DEVICE_CHECK_RECIPE_ARGS (more options
# of benchmarks/run_gpu_recipe.py, e.g. toy sizes for a dry run on CPU), NEMO_PC_REVISION (recorded in the JSON), OUT (where the JSON, the test report, the curve and the log go; gpu_out/check), and those of
# scripts/gpu_recipe.sh (PYTHON, GPU_CARRY, ...). Each stage runs even when an earlier one failed.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=scripts/gpu_recipe.sh
source "$ROOT/scripts/gpu_recipe.sh"
set +e  # the sourced script sets -e: here every stage runs whatever the last one did
BUDGET=${DEVICE_CHECK_SECONDS:-540}
HOURS=${DEVICE_CHECK_HOURS:-12}
OUT=${OUT:-$ROOT/gpu_out/check}
WORK=${DEVICE_CHECK_WORK:-$ROOT/gpu_out/work}
START=$SECONDS
mkdir -p "$OUT" "$WORK"
export OUT PYTHONUNBUFFERED=1

log() { echo "[device_check $((SECONDS - START)) s] $*" >&2; }
left() { echo $((BUDGET - (SECONDS - START))); }

cd "$ROOT"
setup_tts
setup_python
have nvidia-smi && { nvidia-smi -L || true; }
log "installed"

log "tests on the device: ${DEVICE_CHECK_TESTS:-tests/device tests/losses}"
NEMO_PC_TEST_DEVICE=${NEMO_PC_TEST_DEVICE:-cuda} timeout "${DEVICE_CHECK_TESTS_SECONDS:-240}" \
  "$PYTHON" -m pytest ${DEVICE_CHECK_TESTS:-tests/device tests/losses} -q -p no:cacheprovider -p no:warnings \
  --junitxml "$OUT/device_tests.xml" 2>&1 | tail -n 40
log "tests: exit ${PIPESTATUS[0]}"

# shellcheck disable=SC2206  # the extra options are words
recipe=("$PYTHON" benchmarks/run_gpu_recipe.py --work "$WORK" --out "$OUT" --hours "$HOURS" ${DEVICE_CHECK_RECIPE_ARGS:-})
have bible || [ ! -f "$CARRY/kjv.txt.gz" ] || recipe+=(--kjv-text "$CARRY/kjv.txt.gz")
# the corpus, then training for what is left less about 100 s for the probe and 90 s for scoring
timeout $(($(left) - 150)) "${recipe[@]}" corpus
log "corpus: exit $?"
minutes=$("$PYTHON" -c "print(max(0.5, round(($(left) - 190) / 60, 2)))")
log "training for $minutes minutes"
timeout $(($(left) - 60)) "${recipe[@]}" train --train-minutes "$minutes"
log "train: exit $?"
timeout $(($(left) > 30 ? $(left) : 30)) "${recipe[@]}" evaluate
log "evaluate: exit $?"

"$PYTHON" benchmarks/render_device_check.py --tests "$OUT/device_tests.xml" --recipe "$OUT/gpu_recipe.json" \
  --seconds $((SECONDS - START)) --out "$OUT/device_check.json"
log "wrote $OUT/device_check.json"
