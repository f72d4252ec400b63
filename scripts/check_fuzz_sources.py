#!/usr/bin/env python3
"""`make lint`: the fuzz build (tests/fuzz/CMakeLists.txt, its own CMake project) lists its
sources by hand, and every fuzz target reaches the whole of core/ and pattern/ through
materialize(). A source added to core/CMakeLists.txt or pattern/CMakeLists.txt but not to
that list links in `make test` and fails to link in `make fuzz` — which only CI runs. This
check says so at lint time, naming the missing file.

    python3 scripts/check_fuzz_sources.py [--self-test]
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
LIBRARIES = ("core", "pattern")  # every fuzz target links all of them


def library_sources(cmake_text: str) -> list:
    """The .cpp files named in one folder's CMakeLists.txt (its add_library list)."""
    return re.findall(r"([\w/]+\.cpp)", cmake_text)


def missing(folders: dict, fuzz_cmake: str) -> list:
    """`folder/file.cpp` for each library source the fuzz list does not name."""
    listed = set(re.findall(r"\$\{REPO\}/([\w/]+\.cpp)", fuzz_cmake))
    return [f"{folder}/{src}" for folder, text in folders.items()
            for src in library_sources(text) if f"{folder}/{src}" not in listed]


def self_test() -> None:
    folders = {"core": "add_library(sparseattn_core tensor.cpp npy.cpp)"}
    fuzz = "add_library(fuzz STATIC\n  ${REPO}/core/tensor.cpp\n)"
    assert missing(folders, fuzz) == ["core/npy.cpp"], missing(folders, fuzz)
    assert missing(folders, fuzz + "\n${REPO}/core/npy.cpp") == []
    print("check_fuzz_sources self-test: 2 cases pass")


def main() -> int:
    if "--self-test" in sys.argv:
        self_test()
        return 0
    folders = {f: (ROOT / f / "CMakeLists.txt").read_text() for f in LIBRARIES}
    gaps = missing(folders, (ROOT / "tests" / "fuzz" / "CMakeLists.txt").read_text())
    for g in gaps:
        print(f"check_fuzz_sources: {g} is in {g.split('/')[0]}/CMakeLists.txt but not in "
              "tests/fuzz/CMakeLists.txt's source list (make fuzz would fail to link)")
    if gaps:
        return 1
    print(f"check_fuzz_sources: tests/fuzz/CMakeLists.txt lists every source of "
          f"{', '.join(LIBRARIES)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
