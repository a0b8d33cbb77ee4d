# The two commands a fresh machine needs: `make evidence` and `make test` (see README.md).
PYTHON ?= $(shell if [ -x /usr/bin/python3.11 ]; then echo /usr/bin/python3.11; else command -v python3; fi)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
# The notebooks' kernelspec names this kernel: `make setup` installs it into .venv.
KERNEL := symcc-ulfm
KERNEL_SPEC := $(VENV)/share/jupyter/kernels/$(KERNEL)/kernel.json

# pytest-xdist workers of `make test`/`make test-all` (TEST_WORKERS=0: one process); a test file stays
# on one worker and the host_wide tests never run side by side (tests/conftest.py).
TEST_WORKERS ?= 2
XDIST := $(if $(filter 0,$(TEST_WORKERS)),,-n $(TEST_WORKERS) --dist loadgroup)

.PHONY: setup test test-all test-stress evidence lab

setup: $(STAMP) $(KERNEL_SPEC)

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	@touch $(STAMP)

test: setup
	$(BIN)/ruff check symcc_ulfm tests
	$(BIN)/python -m pytest $(XDIST) -m "not slow"

# make test with BUSY_CORES cores kept busy by other processes for the whole run: no verdict of the
# suite may depend on how much work fits into a wall-clock window (docs/notes.md, issue 38).
BUSY_CORES ?= 1
test-stress: setup
	@pids=""; for i in $$(seq $(BUSY_CORES)); do $(BIN)/python -c "while True: pass" & pids="$$pids $$!"; done; \
	trap "kill $$pids" EXIT; echo "test-stress: $(BUSY_CORES) busy process(es):$$pids"; $(MAKE) --no-print-directory test

test-all: setup
	$(BIN)/ruff check symcc_ulfm tests
	$(BIN)/python -m pytest $(XDIST)

# -- evidence: run notebooks/f447_run.ipynb into evidence/<run-id>/, seal, verify ----------------
# Notebook parameters as NAME=VALUE words, e.g. make evidence EVIDENCE_PARAMS="ranks=6 executor=simulate".
EVIDENCE_DIR ?= evidence
EVIDENCE_PARAMS ?=
$(KERNEL_SPEC): $(STAMP)
	$(BIN)/python -m ipykernel install --sys-prefix --name $(KERNEL) --display-name "Python (symcc-ulfm .venv)"

# The executed notebook is part of the seal: papermill writes it into the run directory when it
# finishes, so the run is sealed again afterwards; then sha256sum -c and symcc-ulfm verify.
evidence: setup $(KERNEL_SPEC)
	@set -u; run=$$($(BIN)/python -m symcc_ulfm.evidence.rundir "$(EVIDENCE_DIR)" $(EVIDENCE_PARAMS)) || exit 2; \
	run=$$(cd "$$run" && pwd); id=$$(basename "$$run"); params=""; \
	for kv in $(EVIDENCE_PARAMS); do params="$$params -p $${kv%%=*} $${kv#*=}"; done; \
	echo "run directory: $$run"; \
	$(BIN)/papermill -k $(KERNEL) --log-level WARNING notebooks/f447_run.ipynb "$$run/run.ipynb" \
		-p run_dir "$$run" $$params; status=$$?; \
	$(BIN)/python -c "import sys; from symcc_ulfm.launch.engines import ensure_stopped; ensure_stopped(sys.argv[1])" "$$id"; \
	if [ $$status -ne 0 ]; then mkdir -p "$(EVIDENCE_DIR)/.failed" && mv "$$run" "$(EVIDENCE_DIR)/.failed/"; \
		echo "make evidence: the notebook failed (papermill exit $$status); not accepted, kept in $(EVIDENCE_DIR)/.failed/$$id"; \
		exit $$status; fi; \
	$(BIN)/symcc-ulfm seal "$$run" || exit 1; \
	(cd "$$run" && sha256sum -c --quiet --strict SHA256SUMS.txt) || exit 1; \
	$(BIN)/symcc-ulfm verify "$$run" || exit 1; \
	echo "evidence: $$run"

# JupyterLab on notebooks/ with the project's environment (kernel "Python (symcc-ulfm .venv)").
LAB_ARGS ?=
lab: setup $(KERNEL_SPEC)
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/jupyter lab --notebook-dir=notebooks $(if $(filter 0,$(shell id -u)),--allow-root) $(LAB_ARGS)

# -- multinode: the cross-node gate on two network-namespace hosts (needs root; docs/multinode.md) -----
# Writes, seals and verifies $(MULTINODE_OUT); exit 2 with the reason when not root or no `ip netns`.
.PHONY: multinode
MULTINODE_OUT ?= runs/multinode-$(shell date -u +%Y%m%dT%H%M%SZ)
multinode: setup
	$(BIN)/python -m symcc_ulfm.gates.multinode --out "$(MULTINODE_OUT)" --wrong-mode-check

# -- slurm: sbatch campaigns on a real two-node Slurm (root, ip netns, slurm-wlm, munge; docs/slurm.md) --
# Exit 2 with the reason when it cannot run here.
.PHONY: slurm
SLURM_OUT ?= runs/slurm-$(shell date -u +%Y%m%dT%H%M%SZ)
slurm: setup
	$(BIN)/python -m symcc_ulfm.gates.slurm --out "$(SLURM_OUT)"

# -- faults: the fault matrix, every scenario several times, the oracle deciding (symcc_ulfm/gates/faults.py) --
FAULT_REPEATS ?= 3
.PHONY: faults
faults: setup
	$(BIN)/python -m symcc_ulfm.gates.faults --repeats $(FAULT_REPEATS)

# -- scale: the preregistered scaling study (notebooks/f447_scale.ipynb) into $(SCALE_DIR)/scale-<time>-<protocol>/ --
# A study keeps every cell's campaign state (thousands of files), so it goes under runs/ (ignored
# by git) unless SCALE_DIR says otherwise; SCALE_PROTOCOL=protocols/large.json for a big machine.
# As for evidence: papermill writes the executed notebook into the study, so the study is sealed
# again afterwards, then sha256sum -c and the study verifier. A study whose only problem is cells
# that failed internally is kept sealed (reliability evidence) and the recipe exits 3 (make prints
# "Error 3", its own status is 2); any other failure moves the study to $(SCALE_DIR)/.failed/.
SCALE_DIR ?= runs
SCALE_PROTOCOL ?= protocols/default.json
.PHONY: scale
scale: setup $(KERNEL_SPEC)
	@set -u; study=$$($(BIN)/python -m symcc_ulfm.experiment.study new "$(SCALE_DIR)" "$(SCALE_PROTOCOL)") || exit 2; \
	id=$$(basename "$$study"); echo "study directory: $$study"; \
	$(BIN)/papermill -k $(KERNEL) --log-level WARNING notebooks/f447_scale.ipynb "$$study/scale.ipynb" \
		-p protocol_path "$(abspath $(SCALE_PROTOCOL))" -p study_dir "$$study"; status=$$?; \
	if [ $$status -ne 0 ] && ! $(BIN)/python -m symcc_ulfm.experiment.study sealed-with-failed-cells "$$study"; then \
		mkdir -p "$(SCALE_DIR)/.failed" && mv "$$study" "$(SCALE_DIR)/.failed/"; \
		echo "make scale: the notebook failed (papermill exit $$status); not accepted, kept in $(SCALE_DIR)/.failed/$$id"; \
		exit $$status; fi; \
	$(BIN)/symcc-ulfm seal "$$study" || exit 1; \
	(cd "$$study" && sha256sum -c --quiet --strict SHA256SUMS.txt) || exit 1; \
	$(BIN)/python -m symcc_ulfm.experiment.study verify "$$study" || exit 1; \
	if [ $$status -ne 0 ]; then echo "make scale: sealed, but matrix cells failed internally (exit 3): $$study"; exit 3; fi; \
	echo "scale: $$study"

# -- bench: the performance figures (benchmarks/bench_runtime.py) into runs/bench-<time>/, sealed ----------
# Installs the bench extra (Dask, py-spy) once; BENCH_QUICK=1 for a shorter run (~4 min instead of ~10),
# BENCH_ARGS for more (e.g. --only control,recovery). Prints the table; asserts nothing about speed.
BENCH_STAMP := $(VENV)/.bench-stamp
BENCH_QUICK ?=
BENCH_ARGS ?=
$(BENCH_STAMP): $(STAMP) pyproject.toml
	$(BIN)/python -m pip install --quiet -e '.[bench]'
	@touch $(BENCH_STAMP)
.PHONY: bench
bench: setup $(BENCH_STAMP)
	$(BIN)/python benchmarks/bench_runtime.py $(if $(filter 1,$(BENCH_QUICK)),--quick) $(BENCH_ARGS)

# -- bench-engine / bench-hybrid: the benchmark comparison studies (docs/compare.md): make compare with
# protocols/compare/engine.json (two stdlib parsers: the Python hybrid against two atheris processes) or
# hybrid-$(HYBRID_PART).json (the C targets' harness builds, made first by benchmarks/compare_targets.py into
# HARNESSES_DIR: our hybrid against AFL++ as its parallel-fuzzing guide arranges it; three parts of about
# two hours, HYBRID_PART=1, 2 or 3, one per sitting). Each runs for hours on 2 cores: take one up again
# on the same machine with COMPARE_OUT=<its directory> COMPARE_ARGS=--resume.
HYBRID_PART ?= 1
HARNESSES_DIR ?= $(if $(wildcard /work/scratch),/work/scratch/compare-harnesses,runs/compare-harnesses)
.PHONY: bench-engine bench-hybrid
bench-engine:
	$(MAKE) --no-print-directory compare COMPARE_PROTOCOL=protocols/compare/engine.json
bench-hybrid: setup
	SYMCC_CC="$(SYMCC_CC)" $(BIN)/python -m benchmarks.compare_targets --out "$(HARNESSES_DIR)"
	$(MAKE) --no-print-directory compare COMPARE_PROTOCOL=protocols/compare/hybrid-$(HYBRID_PART).json HARNESSES="$(abspath $(HARNESSES_DIR))"

# -- bench-engine-tools: the concolic engine (now and before issue 16), atheris and CrossHair on stdlib
# parsers one core each, one coverage.py measurer (benchmarks/bench_engine.py; ~25 min with 60 s windows on 2 cores):
# the tools a comparison study has no system kind for.
ENGINE_SECONDS ?= 60
ENGINE_JOBS ?= 2
.PHONY: bench-engine-tools
bench-engine-tools: setup $(BENCH_STAMP)
	$(BIN)/python -m benchmarks.bench_engine --seconds $(ENGINE_SECONDS) --jobs $(ENGINE_JOBS) $(ENGINE_ARGS)

# -- bench-symcc-helpers: AFL++, SymCC, SymCC's fuzzing helpers and our hybrid campaigns on the C targets and
# two Debian-source libraries (benchmarks/bench_hybrid.py, benchmarks/README.md "Hybrid campaigns"): the SymCC
# helper arrangements a comparison study has no system kind for. Full: 5 targets x 8 systems x 2 rounds x 600 s
# (~14 h on 2 cores); BENCH_QUICK=1: 2 targets, 4 systems, 45 s (~10 min); HYBRID_ARGS='--out DIR --resume' takes
# an interrupted run up again. SYMCC_CC, SYMCC_HELPER (the Rust helper) and MPI_HELPER (upstream's
# mpi_fuzzing_helper.py) default to the builds of benchmarks/README.md in /work/scratch when they are there.
SYMCC_CC ?= $(firstword $(wildcard /work/scratch/symcc-build/symcc))
SYMCC_HELPER ?= $(firstword $(wildcard /work/scratch/symcc-helper/release/symcc_fuzzing_helper))
MPI_HELPER ?= $(firstword $(wildcard /work/scratch/src/symcc-7dc2ee66/util/mpi_fuzzing_helper.py))
HYBRID_ARGS ?=
.PHONY: bench-symcc-helpers
bench-symcc-helpers: setup $(BENCH_STAMP)
	SYMCC_CC="$(SYMCC_CC)" SYMCC_HELPER="$(SYMCC_HELPER)" MPI_HELPER="$(MPI_HELPER)" \
		$(BIN)/python -m benchmarks.bench_hybrid $(if $(filter 1,$(BENCH_QUICK)),--quick) $(HYBRID_ARGS)

# -- bench-harness: AFL++-only campaigns against AFL++ -M/-S at equal cores on the OSS-Fuzz harnesses of
# three Debian source packages (cjson, libpng1.6, expat), built by symcc-ulfm build, one measurer
# (benchmarks/bench_harness.py, benchmarks/README.md "OSS-Fuzz harnesses"). Full: 3 targets x 3 systems x
# HARNESS_ROUNDS x HARNESS_SECONDS (600 s, 2 rounds: about 3 h on 2 cores); BENCH_QUICK=1: one 30 s round
# (about 8 min); HARNESS_ARGS='--out DIR --resume' takes an interrupted run up again.
HARNESS_SECONDS ?= $(if $(filter 1,$(BENCH_QUICK)),30,600)
HARNESS_ROUNDS ?= $(if $(filter 1,$(BENCH_QUICK)),1,2)
HARNESS_ARGS ?=
.PHONY: bench-harness
bench-harness: setup $(BENCH_STAMP)
	$(BIN)/python -m benchmarks.bench_harness $(if $(filter 1,$(BENCH_QUICK)),--quick) \
		--seconds $(HARNESS_SECONDS) --rounds $(HARNESS_ROUNDS) $(HARNESS_ARGS)

# -- compare: a preregistered comparison study (symcc-ulfm compare) into $(COMPARE_OUT), its report notebook
# (notebooks/compare_report.ipynb), sealed and verified. COMPARE_PROTOCOL=protocols/compare/NAME.json for another
# protocol (the benchmark ones need HARNESSES=DIR, made by python -m benchmarks.compare_targets); resume an
# interrupted study with COMPARE_OUT=<its directory> COMPARE_ARGS=--resume; COMPARE_ARGS='--parallel N' runs N
# cells at once on disjoint cores. A study whose cells stand failed is kept, sealed, and the recipe exits 3.
COMPARE_PROTOCOL ?= protocols/compare/quick.json
COMPARE_OUT ?= runs/compare-$(shell date -u +%Y%m%dT%H%M%SZ)
COMPARE_ARGS ?=
HARNESSES ?=
.PHONY: compare
compare: setup $(KERNEL_SPEC)
	@set -u; study="$(abspath $(COMPARE_OUT))"; echo "study directory: $$study"; \
	$(BIN)/symcc-ulfm compare "$(COMPARE_PROTOCOL)" --out "$$study" $(if $(HARNESSES),--harnesses "$(HARNESSES)") \
		$(COMPARE_ARGS); status=$$?; \
	if [ $$status -ne 0 ] && [ $$status -ne 3 ]; then \
		echo "make compare: the study stopped (exit $$status); resume: COMPARE_OUT=$$study COMPARE_ARGS=--resume"; \
		exit $$status; fi; \
	$(BIN)/papermill -k $(KERNEL) --log-level WARNING notebooks/compare_report.ipynb "$$study/compare_report.ipynb" \
		-p study_dir "$$study" || exit 1; \
	$(BIN)/symcc-ulfm seal "$$study" || exit 1; \
	(cd "$$study" && sha256sum -c --quiet --strict SHA256SUMS.txt) || exit 1; \
	$(BIN)/symcc-ulfm verify "$$study" || exit 1; \
	if [ $$status -eq 3 ]; then echo "make compare: sealed, but cells stand failed (exit 3): $$study"; exit 3; fi; \
	echo "compare: $$study"
