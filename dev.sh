#!/usr/bin/env bash
# One entry point that sets everything up on a fresh machine and runs a job.
#   ./dev.sh perf [perf-test flags]   build, then run the perf test against an embedded local broker
#   ./dev.sh test [pytest args]       build, then run the whole test suite
#   ./dev.sh lint                     ruff check, ruff format --check, mypy, cython-lint
#   ./dev.sh setup                    only create .venv and build
set -euo pipefail
cd "$(dirname "$0")"
PY=${PYTHON:-python3}
VENV=${CPRODUCER_VENV:-.venv}

setup() {
    if [ ! -x "$VENV/bin/python" ]; then
        "$PY" -m venv "$VENV"
    fi
    "$VENV/bin/python" -m pip install -q --upgrade pip setuptools wheel
    "$VENV/bin/python" -m pip install -q "Cython>=3.0" "numpy>=1.24"
    # editable install: builds every extension in place
    "$VENV/bin/python" -m pip install -q --no-build-isolation -e ".[test]"
}

cmd=${1:-test}
shift || true
case "$cmd" in
    setup) setup ;;
    test) setup; exec "$VENV/bin/python" -m pytest "$@" ;;
    perf) setup; exec "$VENV/bin/python" -m cproducer.perf "$@" ;;
    demo) setup; exec "$VENV/bin/python" -m cproducer.demo "$@" ;;
    lint)
        "$VENV/bin/ruff" check .
        "$VENV/bin/ruff" format --check .
        "$VENV/bin/mypy"
        # cython-lint runs pycodestyle from PATH: the venv's
        PATH="$VENV/bin:$PATH" "$VENV/bin/cython-lint" --max-line-length 100 cproducer
        ;;
    *) echo "usage: $0 {test|perf|demo|lint|setup} [args]" >&2; exit 2 ;;
esac
