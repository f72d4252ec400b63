"""The throwaway virtual environment with the peers (PyTorch, transformers) that the peer
scripts run in: tools/make_peer_fixtures.py and tools/peers_bench.py, each with `--venv DIR`.

`run_in_venv(DIR, script, args)` creates DIR with this interpreter (so the in-place module
`make python` built, python/sparseattn/, imports there too: same Python version), runs
`pip install torch transformers numpy` into it (PyPI only; the plain torch wheel for Linux
pulls its CUDA libraries too: about 5.6 GB installed, 1.5 minutes here; a second run only
checks), and runs `script args` with that interpreter, HF_HUB_OFFLINE=1 (nothing is
downloaded from a model hub: the scripts build every layer from a config). Returns the
script's exit status.
"""
import os
import subprocess
import sys

PACKAGES = ("torch", "transformers", "numpy")


def make_venv(venv):
    """Creates `venv` (if absent) and installs PACKAGES into it; returns its python."""
    py = os.path.join(venv, "bin", "python")
    if not os.path.exists(py):
        subprocess.check_call([sys.executable, "-m", "venv", venv])
    subprocess.check_call([py, "-m", "pip", "install", "--progress-bar", "off", *PACKAGES])
    return py


def run_in_venv(venv, script, args, env=None):
    """make_venv(venv), then `script args` with its python; returns the exit status."""
    py = make_venv(venv)
    env = dict(os.environ if env is None else env, HF_HUB_OFFLINE="1")
    return subprocess.call([py, os.path.abspath(script), *args], env=env)
