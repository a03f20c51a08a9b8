#!/usr/bin/env bash
# Install a built wheel the way a user without Rust does and run it: a fresh virtualenv,
# no cargo or rustc on PATH, no package built from source; then the import and the
# offline demo. With --smoke, also the smoke tests (pytest -m smoke) against it.
#
#   bash scripts/wheel_check.sh dist/fastcompact-*.whl [--smoke]
set -euo pipefail
cd "$(dirname "$0")/.."

wheel="${1:?usage: wheel_check.sh WHEEL [--smoke]}"
smoke="${2:-}"
[ -f "$wheel" ] || { echo "no wheel at $wheel" >&2; exit 1; }
python="${PYTHON:-$(command -v python3 || command -v python)}"

home="$(mktemp -d)"
trap 'rm -rf "$home"' EXIT
"$python" -m venv "$home/venv"
bin="$home/venv/bin"
[ -d "$home/venv/Scripts" ] && bin="$home/venv/Scripts"

# PATH without any folder that holds a Rust toolchain.
clean="$bin"
IFS=':' read -r -a folders <<<"$PATH"
for folder in "${folders[@]}"; do
    if [ -n "$folder" ] && [ ! -e "$folder/cargo" ] && [ ! -e "$folder/rustc" ] \
        && [ ! -e "$folder/cargo.exe" ] && [ ! -e "$folder/rustc.exe" ]; then
        clean="$clean:$folder"
    fi
done
export PATH="$clean"
unset CARGO CARGO_HOME RUSTUP_HOME RUSTC
if command -v cargo >/dev/null || command -v rustc >/dev/null; then
    echo "a Rust toolchain is still on PATH: the check would not show a Rust-free install" >&2
    exit 1
fi

extras="demo"
[ "$smoke" = "--smoke" ] && extras="demo,smoke"
python -m pip install --quiet --upgrade pip
# Binary wheels only: a dependency that needed a compiler would fail here, not pass.
python -m pip install --quiet --only-binary=:all: "$wheel[$extras]"

echo "== the wheel, installed without Rust: import and the offline demo"
python -c "import fastcompact, fastcompact._core; print('fastcompact', fastcompact.__version__, 'from', fastcompact.__file__)"
fastcompact --version
fastcompact demo --fast >"$home/demo.txt"
tail -n 6 "$home/demo.txt"
grep -q "^Done in" "$home/demo.txt"

if [ "$smoke" = "--smoke" ]; then
    echo "== smoke tests against the installed wheel"
    # Only the modules marked as a whole: the others import test-only packages
    # (checkpointers, Postgres) that the smoke extra leaves out.
    # (A read loop, not mapfile: macOS ships bash 3.2.)
    modules=()
    while IFS= read -r module; do modules+=("$module"); done \
        < <(grep -rlx --include='test_*.py' 'pytestmark = pytest.mark.smoke' tests | sort)
    [ "${#modules[@]}" -gt 0 ] || { echo "no smoke modules under tests/" >&2; exit 1; }
    python -m pytest -m smoke "${modules[@]}" -p no:cacheprovider -q
fi
