"""Shared helpers for the NKI tests: loading the copied AWS samples without their import-time
side effects leaking into other tests."""

import importlib
import os
import sys

import numpy as np
import pytest

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


@pytest.fixture
def rng():
    return np.random.default_rng(0)
