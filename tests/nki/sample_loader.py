"""Loads the AWS sample kernels copied into tests/nki/samples without their import-time side
effects (environment variables) leaking into other tests or benchmarks."""

import importlib
import os
import sys

SAMPLES = os.path.join(os.path.dirname(__file__), "samples")


def load_sample(name):
    """Imports tests/nki/samples/<name>.py; restores the environment variables it sets."""
    saved = dict(os.environ)
    if SAMPLES not in sys.path:
        sys.path.insert(0, SAMPLES)
    try:
        return importlib.import_module(name)
    finally:
        os.environ.clear()
        os.environ.update(saved)
