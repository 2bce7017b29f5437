"""A broken build fails the suite: it never turns into skipped or passing tests.

The subprocess runs pytest on one trivial test of this suite with ``vtrn._C`` made impossible to
import, as when the extension is missing or does not load. Autoload then only warns (so that
`import torch` keeps working), and the suite's conftest must turn that into a failure.
"""

import os
import pathlib
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent

BLOCKER = """
import sys

class _NoExtension:
    def find_spec(self, name, path=None, target=None):
        if name == "vtrn._C":
            raise ImportError("vtrn._C is blocked by the broken-build test")
        return None

sys.meta_path.insert(0, _NoExtension())
"""


def test_missing_extension_fails_the_suite(tmp_path):
    (tmp_path / "sitecustomize.py").write_text(BLOCKER)
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])
    )
    target = f"{HERE / 'test_typed_api.py'}::test_nest_is_row_major"
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", target],
        capture_output=True,
        text=True,
        env=env,
        cwd=HERE,
        timeout=300,
    )
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    assert "blocked by the broken-build test" in output
    assert " passed" not in output and " skipped" not in output
