"""What a release ships, checked before it ships: the wheel's tags (CPython 3.11 stable
ABI, and manylinux2014 when asked), its metadata (the version Cargo.toml writes, the
licence and its file), and an sdist that holds everything a build from source reads.

    python tools/check_dist.py WHEEL SDIST [--manylinux2014]

Exits 1 naming each problem; prints what it checked otherwise.
"""

from __future__ import annotations

import argparse
import sys
import tarfile
import tomllib
import zipfile
from email.parser import HeaderParser
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# What `pip install fastcompact-*.tar.gz` needs to build, besides Cargo's own files.
SDIST_NEEDS = [
    "Cargo.toml",
    "Cargo.lock",
    "pyproject.toml",
    "README.md",
    "LICENSE",
    "CHANGELOG.md",
    "src/lib.rs",
    "src/search/short_forms.txt",
    "python/fastcompact/__init__.py",
    "python/fastcompact/_core.pyi",
    "python/fastcompact/py.typed",
]


def version() -> str:
    return str(tomllib.loads((ROOT / "Cargo.toml").read_text())["package"]["version"])


def wheel_problems(wheel: Path, manylinux2014: bool) -> list[str]:
    problems = []
    # name-version-python-abi-platform.whl
    parts = wheel.name.removesuffix(".whl").split("-")
    if len(parts) != 5:
        return [f"{wheel.name}: not a wheel's name"]
    _, found_version, python, abi, platform = parts
    if (python, abi) != ("cp311", "abi3"):
        problems.append(f"{wheel.name}: tagged {python}-{abi}, not cp311-abi3")
    if manylinux2014 and "manylinux2014" not in platform and "manylinux_2_17" not in platform:
        problems.append(f"{wheel.name}: platform {platform}, not manylinux2014")
    if found_version != version():
        problems.append(f"{wheel.name}: version {found_version}, Cargo.toml says {version()}")
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        meta_name = next((n for n in names if n.endswith(".dist-info/METADATA")), None)
        if meta_name is None:
            return [*problems, f"{wheel.name}: no METADATA"]
        meta = HeaderParser().parsestr(z.read(meta_name).decode())
    if meta["Version"] != version():
        problems.append(f"METADATA: version {meta['Version']}, Cargo.toml says {version()}")
    if meta["License-Expression"] != "MIT":
        problems.append(f"METADATA: License-Expression {meta['License-Expression']!r}, not 'MIT'")
    if not any(n.endswith(".dist-info/licenses/LICENSE") for n in names):
        problems.append(f"{wheel.name}: the LICENSE file is not in it")
    if "fastcompact/py.typed" not in names:
        problems.append(f"{wheel.name}: no py.typed (the package is typed)")
    return problems


def sdist_problems(sdist: Path) -> list[str]:
    with tarfile.open(sdist) as tar:
        top = f"fastcompact-{version()}/"
        names = {m.name.removeprefix(top) for m in tar.getmembers() if m.name.startswith(top)}
        info = tar.extractfile(top + "PKG-INFO") if top + "PKG-INFO" in tar.getnames() else None
        meta = HeaderParser().parsestr(info.read().decode()) if info else None
    problems = [f"{sdist.name}: {n} is missing" for n in SDIST_NEEDS if n not in names]
    if meta is None:
        problems.append(f"{sdist.name}: no PKG-INFO under {top}")
    elif meta["Version"] != version():
        problems.append(f"{sdist.name}: PKG-INFO version {meta['Version']}, Cargo.toml says {version()}")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("wheel", type=Path)
    parser.add_argument("sdist", type=Path)
    parser.add_argument("--manylinux2014", action="store_true", help="the wheel must run on glibc 2.17")
    args = parser.parse_args(argv)
    problems = wheel_problems(args.wheel, args.manylinux2014) + sdist_problems(args.sdist)
    for problem in problems:
        print(f"check_dist: {problem}", file=sys.stderr)
    if not problems:
        print(f"check_dist: {args.wheel.name} and {args.sdist.name} hold what a release ships")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
