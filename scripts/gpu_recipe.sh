#!/usr/bin/env bash
# The conditioned P&C RNN-T at GPU scale on a CUDA machine without network access (docs/gpu.md).
#
#   scripts/gpu_recipe.sh prepare                  on a networked Debian machine with `make install` done: fills
#                                                  .gpu_carry/ with the TTS .debs, the KJV text and the Python wheels
#                                                  that a CUDA PyTorch image lacks
#   scripts/gpu_recipe.sh run [PHASE ...] [OPTS]   on the CUDA machine, from the repository root with .gpu_carry/
#                                                  in it: unpacks and installs what it holds, then runs
#                                                  benchmarks/run_gpu_recipe.py (phases corpus, train, evaluate; all
#                                                  by default; each skips what an earlier run finished)
#
# Environment: PYTHON (python3), GPU_CARRY (.gpu_carry), GPU_TTS_PREFIX (/tmp/nemo_pc_tts), GPU_SITE
# (/tmp/nemo_pc_site), GPU_PYTHON_VERSION (3.12: the CUDA machine's Python, for the binary wheels).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CARRY=${GPU_CARRY:-$ROOT/.gpu_carry}
PYTHON=${PYTHON:-python3}
PREFIX=${GPU_TTS_PREFIX:-/tmp/nemo_pc_tts}
SITE=${GPU_SITE:-/tmp/nemo_pc_site}
ARCH_LIB=usr/lib/x86_64-linux-gnu

TTS_PACKAGES="espeak-ng flite festival festvox-kallpc16k festvox-kdlpc16k festvox-us-slt-hts sox libsox-fmt-base"
# Not carried from the TTS packages' dependency closure: the C/C++ runtime (the CUDA machine's own is newer, and the
# engines run on it) and packages that hold no library the engines load (system tools, audio-device plugins).
SKIP_PACKAGES="libc6 libgcc-s1 gcc-12-base libstdc++6 debconf cdebconf dpkg tar passwd adduser lsb-base
  sysvinit-utils libpam0g libpam-modules libpam-modules-bin libpam-runtime install-info readline-common kmod libkmod2
  alsa-utils sgml-base libdebian-installer4 libnewt0.52 libslang2 libtextwrap1 libsemanage2 libsemanage-common
  libsepol2 libaudit1 libaudit-common libcap-ng0 libcrypt1 libssl3 libelogind0 libao4 libao-common libsox-fmt-alsa
  libsox-fmt-ao libsox-fmt-oss libsox-fmt-pulse"
# What the recipe imports beyond a CUDA PyTorch image (torch, numpy, scipy, pandas, transformers, sentencepiece,
# matplotlib, numba, ... are there), at the versions of this repository's .venv. lightning is carried because NeMo
# 3.0 asks for lightning <= 2.4.0.
WHEELS="nemo-toolkit lightning lhotse hydra-core omegaconf antlr4-python3-runtime braceexpand cytoolz datasets dill
  multiprocess intervaltree kaldialign librosa decorator pooch platformdirs soundfile cffi rapidfuzz smart-open
  webdataset pydantic pydantic-core annotated-types typing-inspection overrides sniffio strenum toml
  googleapis-common-protos nv-one-logger-core nv-one-logger-training-telemetry
  nv-one-logger-pytorch-lightning-integration"

prepare() {
  local venv=$ROOT/.venv/bin/python pyver=${GPU_PYTHON_VERSION:-3.12}
  [ -x "$venv" ] || { echo "prepare: no $venv (run make install first: it pins the wheel versions)" >&2; exit 2; }
  have bible || { echo "prepare: no 'bible' (apt-get install bible-kjv)" >&2; exit 2; }
  mkdir -p "$CARRY/debs" "$CARRY/wheels"
  local closure
  # shellcheck disable=SC2086
  closure=$(apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks --no-replaces \
    --no-enhances --no-pre-depends $TTS_PACKAGES | grep -v '^[ <]' | sort -u)
  local skip
  skip=" $(echo $SKIP_PACKAGES) "  # one space between names
  for package in $closure; do
    [[ $skip == *" $package "* ]] && continue
    ls "$CARRY/debs/${package}_"*.deb >/dev/null 2>&1 || (cd "$CARRY/debs" && apt-get download -q "$package")
  done
  bible -l0 "gen1:1-rev22:21" | gzip -9 >"$CARRY/kjv.txt.gz"
  local platforms=""
  for tag in manylinux_2_17 manylinux2014 manylinux_2_24 manylinux_2_27 manylinux_2_28 manylinux_2_31 manylinux_2_34; do
    platforms="$platforms --platform ${tag}_x86_64"
  done
  for name in $WHEELS; do
    local version
    version=$("$venv" -c "import importlib.metadata as m; print(m.version('$name'))")
    # shellcheck disable=SC2086
    "$venv" -m pip download -q --no-deps --only-binary=:all: --python-version "$pyver" --implementation cp \
      $platforms -d "$CARRY/wheels" "$name==$version" 2>/dev/null ||
      "$venv" -m pip wheel -q --no-deps -w "$CARRY/wheels" "$name==$version"  # a pure-Python sdist
  done
  echo "carried (KiB): $(du -sk "$CARRY" | cut -f1) total"
  du -sk "$CARRY"/debs "$CARRY"/wheels "$CARRY"/kjv.txt.gz
}

have() {  # an executable program of that name on PATH
  local path
  path=$(command -v "$1") && [ -x "$path" ]
}

# A system folder that a Debian-built program only looks for at its built-in path (sox's format plugins, festival's
# library and voices): a link to the unpacked copy, made only where nothing is (and only as root).
link_system_dir() {
  local path=$1
  [ -e "$path" ] && return 0
  if [ "$(id -u)" -ne 0 ]; then
    echo "gpu_recipe: warning: $path is missing and only root can link it to $PREFIX$path" >&2
    return 1
  fi
  mkdir -p "$(dirname "$path")" && ln -s "$PREFIX$path" "$path"
}

# NAME COMMAND...: a program on PATH that runs COMMAND with the unpacked libraries, which stay out of the
# environment of everything else (Python and CUDA keep the machine's own)
wrapper() {
  local name=$1
  shift
  cat >"$PREFIX/wrap/$name" <<EOF
#!/bin/sh
export LD_LIBRARY_PATH="$PREFIX/$ARCH_LIB:$PREFIX/lib/x86_64-linux-gnu:$PREFIX/$ARCH_LIB/pulseaudio\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
export ESPEAK_DATA_PATH="$PREFIX/$ARCH_LIB"
exec$(printf ' %q' "$@") "\$@"
EOF
  chmod +x "$PREFIX/wrap/$name"
}

# DEB PREFIX: the files of a .deb under PREFIX, as `dpkg -x` does; Python reads the ar archive where there is no dpkg
unpack_deb() {
  if have dpkg; then
    dpkg -x "$1" "$2"
    return
  fi
  "$PYTHON" - "$1" "$2" <<'PYEOF'
import io, sys, tarfile
deb, prefix = sys.argv[1], sys.argv[2]
with open(deb, "rb") as handle:
    data = handle.read()
assert data[:8] == b"!<arch>\n", f"{deb}: not a .deb (ar) archive"
offset = 8
while offset + 60 <= len(data):
    name, size = data[offset:offset + 16].decode().strip().rstrip("/"), int(data[offset + 48:offset + 58].decode())
    if name.startswith("data.tar"):
        with tarfile.open(fileobj=io.BytesIO(data[offset + 60:offset + 60 + size]), mode="r:*") as tar:
            tar.extractall(prefix, filter="fully_trusted")  # our own downloads, unpacked as dpkg -x would
        break
    offset += 60 + size + (size & 1)
else:
    sys.exit(f"{deb}: no data.tar member")
PYEOF
}

# Each TTS program answers (a missing library or binary is named here, not deep inside the corpus phase)
check_tts() {
  local program
  for program in "espeak-ng --version" "flite -lv" "sox --version"; do
    # shellcheck disable=SC2086  # the program and its option are words
    if ! have ${program%% *}; then
      echo "gpu_recipe: warning: no ${program%% *}" >&2
    elif ! err=$($program 2>&1 >/dev/null); then
      echo "gpu_recipe: warning: '$program' fails: ${err:0:300}" >&2
    fi
  done
}

setup_tts() {
  compgen -G "$CARRY/debs/*.deb" >/dev/null || return 0
  if [ ! -f "$PREFIX/.unpacked" ]; then
    mkdir -p "$PREFIX/wrap"
    for deb in "$CARRY"/debs/*.deb; do unpack_deb "$deb" "$PREFIX" || return 1; done
    touch "$PREFIX/.unpacked"
  fi
  have espeak-ng || wrapper espeak-ng "$PREFIX/usr/bin/espeak-ng"
  have flite || wrapper flite "$PREFIX/usr/bin/flite"
  # sox writes flac through a plugin it looks for in /usr/lib/x86_64-linux-gnu/sox only
  if ! have sox && link_system_dir "/$ARCH_LIB/sox"; then
    wrapper sox "$PREFIX/usr/bin/sox"
  fi
  # festival reads init.scm and its voices from /usr/share/festival only (voices.py lists them there too); its
  # text2wave script names /usr/bin/festival, so the wrapper runs the script itself. Without the link: no festival
  if ! have text2wave && link_system_dir /usr/share/festival; then
    wrapper text2wave "$PREFIX/usr/bin/festival" --script "$PREFIX/usr/bin/text2wave"
  fi
  export PATH="$PREFIX/wrap:$PATH"
  check_tts
}

setup_python() {  # nemo_pc runs from this tree (the CUDA machine's torch stays), the carried wheels beside it
  local site=""
  if compgen -G "$CARRY/wheels/*.whl" >/dev/null; then
    if [ ! -f "$SITE/.installed" ]; then
      "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --target "$SITE" "$CARRY"/wheels/*.whl
      touch "$SITE/.installed"
    fi
    site=":$SITE"
    # numba-cuda releases that register numpy.row_stack fail at import on numpy 2.5, which removed it (an alias of
    # vstack): the alias is put back for this run's interpreters only
    if ! "$PYTHON" -c "import numpy; numpy.row_stack" 2>/dev/null; then
      echo "import numpy; numpy.row_stack = numpy.vstack  # removed in numpy 2.5; numba-cuda still names it" \
        >"$SITE/sitecustomize.py"
      echo "gpu_recipe: numpy $("$PYTHON" -c "import numpy; print(numpy.__version__)") has no row_stack:" \
        "aliased to vstack in $SITE/sitecustomize.py" >&2
    fi
  fi
  export PYTHONPATH="$ROOT$site${PYTHONPATH:+:$PYTHONPATH}"
}

run() {
  setup_tts
  setup_python
  local kjv=()
  have bible || [ ! -f "$CARRY/kjv.txt.gz" ] || kjv=(--kjv-text "$CARRY/kjv.txt.gz")
  have nvidia-smi && { nvidia-smi -L || true; }
  cd "$ROOT"
  exec "$PYTHON" benchmarks/run_gpu_recipe.py "$@" "${kjv[@]}"
}

# sourced (scripts/device_check.sh): the functions only
if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  case "${1:-}" in
    prepare) prepare ;;
    run) shift && run "$@" ;;
    *) sed -n '2,13p' "$0" >&2 && exit 2 ;;
  esac
fi
