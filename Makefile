# The README's commands. Each installs what is missing first (scripts/setup.sh), then builds
# incrementally (persistent build dirs and ccache), so a second run starts work in seconds.
PYTHON ?= python3
JOBS ?= 2
STAMPS := build/.stamps
# Everything the compiled extension modules are built from.
NATIVE_SOURCES := CMakeLists.txt pyproject.toml $(shell find src -type f \( -name '*.cc' -o -name '*.cpp' -o -name '*.h' -o -name 'CMakeLists.txt' \) 2>/dev/null)
# The editable install records which Python modules exist; a module added or removed needs a
# new install. This stamp changes only when that list does.
PYTHON_FILES_STAMP := $(STAMPS)/python-files
$(shell mkdir -p $(STAMPS); find python -name '*.py' | sort > $(PYTHON_FILES_STAMP).new; cmp -s $(PYTHON_FILES_STAMP).new $(PYTHON_FILES_STAMP) || mv $(PYTHON_FILES_STAMP).new $(PYTHON_FILES_STAMP); rm -f $(PYTHON_FILES_STAMP).new)

# The editable install points at one checkout; when another checkout (a CI clone, say) took it
# over, this one must install again whatever its stamp says.
INSTALLED_FROM := $(shell $(PYTHON) -c "import importlib.util as u; s = u.find_spec('vtrn'); print(s.origin if s else '')" 2>/dev/null)
ifneq ($(INSTALLED_FROM),$(CURDIR)/python/vtrn/__init__.py)
  $(shell rm -f $(STAMPS)/install)
endif

.PHONY: all setup install demo test cpp-test py-test bench lint format clean

all: install

$(STAMPS)/setup: scripts/setup.sh requirements-dev.txt requirements-torch-nodeps.txt examples/torchtitan/torchtitan-0.3.0.patch
	@mkdir -p $(STAMPS)
	PYTHON=$(PYTHON) scripts/setup.sh
	@touch $@

setup: $(STAMPS)/setup

# The Python package, installed editable: Python sources are used in place, the extension
# modules are rebuilt in build/py when a native source changes. flock serialises concurrent
# runs that share the build directory.
$(STAMPS)/install: $(STAMPS)/setup $(NATIVE_SOURCES) $(PYTHON_FILES_STAMP)
	@mkdir -p $(STAMPS)
	TORCH_DEVICE_BACKEND_AUTOLOAD=0 flock build/.install.lock $(PYTHON) -m pip install --quiet --no-build-isolation --no-deps -e .
	@touch $@

install: $(STAMPS)/install

demo: install
	$(PYTHON) examples/train_mlp.py

# The C++ layers build and test without PyTorch.
cpp-test: setup
	cmake -S . -B build/cpp -G Ninja -DVTRN_BUILD_TESTS=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo > /dev/null
	cmake --build build/cpp -j $(JOBS)
	ctest --test-dir build/cpp -j $(JOBS) --output-on-failure

py-test: install
	$(PYTHON) -m pytest -q tests/python tests/nki

test: cpp-test py-test

# Every C++ benchmark bench/CMakeLists.txt names (it lists them in benchmarks.txt), then every
# Python one.
bench: install
	cmake -S . -B build/bench -G Ninja -DVTRN_BUILD_BENCH=ON -DCMAKE_BUILD_TYPE=Release > /dev/null
	cmake --build build/bench -j $(JOBS)
	@test -s build/bench/benchmarks.txt || { echo "bench: no C++ benchmarks listed"; exit 1; }
	@for b in $$(cat build/bench/benchmarks.txt); do echo "== $$b"; $$b || exit 1; done
	@for b in bench/*.py; do echo "== $$b"; $(PYTHON) $$b || exit 1; done

# Formatting is enforced, not suggested: clang-format for C++, ruff for Python (lint and
# format). The line budget is reported, not enforced: a file over 800 lines is a sign that it
# holds more than one concept.
CXX_SOURCES = $(shell git ls-files '*.cc' '*.cpp' '*.h')
lint: setup
	@echo "clang-format --dry-run -Werror (every C++ file)"
	@clang-format --dry-run -Werror $(CXX_SOURCES)
	$(PYTHON) -m ruff check .
	$(PYTHON) -m ruff format --check .
	@git ls-files '*.cc' '*.cpp' '*.h' '*.py' | xargs wc -l | awk '$$2 != "total" && $$1 > 800 {print "lint: over 800 lines: " $$2 " (" $$1 ")"}'

format: setup
	clang-format -i $(CXX_SOURCES)
	$(PYTHON) -m ruff check --fix .
	$(PYTHON) -m ruff format .

clean:
	rm -rf build
