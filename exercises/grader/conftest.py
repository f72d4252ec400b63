"""The grader's options: whose files are graded.

    make exercises                                # exercises/ex*.py, the student's own
    make exercises SOLUTIONS=/path/to/hand-ins    # a teacher's folder outside the repository
    python3 -m pytest exercises/grader --solutions DIR   (or SPARSEATTN_SOLUTIONS=DIR)
"""
import os
import pathlib

import pytest

EXERCISES = pathlib.Path(__file__).resolve().parents[1]


def pytest_addoption(parser):
    parser.addoption("--solutions", default=None, metavar="DIR",
                     help="folder holding ex01_masked_softmax.py ... ex07_softmax_backward.py "
                          "(default: $SPARSEATTN_SOLUTIONS, else exercises/)")


@pytest.fixture(scope="session")
def solutions_dir(request) -> pathlib.Path:
    given = request.config.getoption("--solutions") or os.environ.get("SPARSEATTN_SOLUTIONS")
    d = pathlib.Path(given).expanduser().resolve() if given else EXERCISES
    if not d.is_dir():
        pytest.exit(f"--solutions {given}: not a folder", returncode=2)
    return d


def pytest_report_header(config):
    given = config.getoption("--solutions") or os.environ.get("SPARSEATTN_SOLUTIONS")
    return f"grading: {given or EXERCISES}"
