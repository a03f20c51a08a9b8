#!/usr/bin/env bash
# Build fastcompact's wheel once and run every check against it in a fresh virtualenv:
# Rust format, lints and tests, the Python lint, types, tests and docstring examples,
# the docs, then the wheel itself (its ABI and platform tags, an install with no Rust on
# PATH running the demo) and the sdist.
# Needs only a Rust toolchain and Python >= 3.11 with pip.
set -euo pipefail
cd "$(dirname "$0")/.."

VENV="${FASTCOMPACT_VENV:-.venv-test}"
# Reuse compiled crates between runs on the same machine.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/fastcompact/target}"

python3 -m venv "$VENV"
# shellcheck disable=SC1091
. "$VENV/bin/activate"
python -m pip install --quiet --upgrade pip
python -m pip install --quiet --group wheel

echo "== the wheel, built once: every check below runs against it"
DIST="$(mktemp -d)"
# manylinux2014 (glibc 2.17) where zig can link it, as the release builds are.
MANYLINUX2014=--manylinux2014
if ! maturin build --release --quiet --zig --compatibility manylinux2014 --out "$DIST"; then
    echo "zig could not link a manylinux2014 wheel here: building for this machine's glibc"
    MANYLINUX2014=
    maturin build --release --quiet --out "$DIST"
fi
WHEEL="$(ls "$DIST"/fastcompact-*.whl)"
python -m pip install --quiet "$WHEEL[test,docs]"

echo "== cargo fmt / clippy / test"
cargo fmt --check
cargo clippy --all-features --all-targets --quiet -- -D warnings
cargo test --quiet

echo "== ruff"
ruff check python tests benches tools fuzz
ruff format --check python tests benches tools fuzz

echo "== types (the package under mypy --strict; the .pyi of the compiled core against the module itself)"
python -m mypy --strict python/fastcompact
python -m mypy.stubtest fastcompact._core

# As root every system part is installed here, and the tests that need one must run
# (elsewhere they skip, saying why).
if [ "$(id -u)" = 0 ]; then export FASTCOMPACT_FULL_CHECK=1; fi

echo "== postgresql (for the multi-worker test)"
if [ -z "${FASTCOMPACT_PG_URL:-}" ]; then
    if bash scripts/pg.sh install && PG_ENV=$(bash scripts/pg.sh start); then
        eval "$PG_ENV"
        trap 'bash scripts/pg.sh stop' EXIT
    else
        echo "PostgreSQL could not be started here: the multi-worker test will say why"
    fi
fi

echo "== chromium (to check the notebook pictures as a browser draws them)"
if ! command -v chromium >/dev/null && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi

echo "== pytest"
# The installed package is tested (not the source folder, which lacks the compiled core).
python -m pytest tests -p no:cacheprovider
python -m pytest --doctest-modules --pyargs fastcompact -p no:cacheprovider

echo "== README and docs examples (the outputs they show are what the code prints)"
python tools/readme_examples.py --check

echo "== docs (the site builds, every page in the nav and every link whole)"
NO_MKDOCS_2_WARNING=1 mkdocs build --strict --quiet -d "$(mktemp -d)"

echo "== fuzz (a short run; see docs/reliability.md for the long one)"
python fuzz/fuzz_inputs.py --iterations 300
python fuzz/fuzz_search.py --iterations 12

echo "== the wheel: stable ABI, platform tag, a Rust-free install, the sdist"
abi3audit --strict --report "$WHEEL"
auditwheel show "$WHEEL"
bash scripts/wheel_check.sh "$WHEEL"
maturin sdist --out "$DIST"
python tools/check_dist.py "$WHEEL" "$DIST"/fastcompact-*.tar.gz $MANYLINUX2014
