#!/usr/bin/env bash
# Applies torchtitan-0.3.0.patch to the torchtitan installed for $PYTHON (default python3).
# Idempotent: a tree that already has the patch is left as it is. README.md says what the
# patch changes and why.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
PYTHON=${PYTHON:-python3}
version=$("$PYTHON" -c "import importlib.metadata as m; print(m.version('torchtitan'))")
if [ "$version" != "0.3.0" ]; then
  echo "apply_patch: torchtitan $version is installed; the patch is for 0.3.0" >&2
  exit 1
fi
# The directory holding the torchtitan package, found without importing it (the import is
# what the patch repairs).
site=$("$PYTHON" -c "import importlib.util, os; s = importlib.util.find_spec('torchtitan'); print(os.path.dirname(os.path.dirname(s.origin)))")
if patch -p1 -R --dry-run --silent -d "$site" < "$here/torchtitan-0.3.0.patch" >/dev/null 2>&1; then
  exit 0
fi
patch -p1 --forward --silent -d "$site" < "$here/torchtitan-0.3.0.patch"
echo "apply_patch: patched torchtitan 0.3.0 in $site"
