# make lab  : set up .venv (first time) and open JupyterLab on the quickstart notebook
# make test : set up .venv (first time) and run the unit tests and the notebooks under nbval
# make nbval: set up .venv (first time) and run only the notebooks under nbval (as `pytest --nbval notebooks/`)
# make check: ruff and the fast unit tests (the inner loop, about 75 s on 2 cores)
PYTHON ?= python3
VENV   ?= .venv
# torch 2.13.0 from the configured package index (here a local CPU wheel). On a plain PyPI
# machine add TORCH_INDEX=https://download.pytorch.org/whl/cpu for the small CPU build, or
# .../whl/cu128 for CUDA; run `make clean-venv` first when switching builds.
TORCH_SPEC  ?= torch==2.13.0
TORCH_INDEX ?=
PORT ?= 8888

BIN := $(VENV)/bin
STAMP := $(VENV)/.labkit-installed
export PYTHONHASHSEED := 0
export TQDM_DISABLE := 1
export HF_HUB_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

.PHONY: lab test test-times check nbval install notebook notebooks notebook-sync student slides doctor model model-ar model-cap model-tasks model-sudoku-from-ar model-rl model-block model-llada21 bench-llada21 install-block bench-blocks bench-rl bench-rl-search bench-tasks bench-samplers bench-controls bench-panel bench-roofline gpu-check browser-check clean-venv

install: $(STAMP)

$(STAMP): pyproject.toml
	$(BIN)/python -m pip --version >/dev/null 2>&1 || { rm -rf $(VENV) && $(PYTHON) -m venv $(VENV); }
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet "$(TORCH_SPEC)" $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX))
	$(BIN)/python -m pip install --quiet -e ".[lab,dev,serve,eval]"
	touch $@

# The URL it prints opens notebook 01 (default_url), not the Launcher. The project's notebooks are
# trusted first, so their stored panels (widget state) are drawn before any cell runs.
# NOTEBOOKS=student opens the students' copies (make student) instead of the teacher's notebooks.
NOTEBOOKS ?= notebooks
lab: install
	$(BIN)/jupyter trust $(NOTEBOOKS)/*.ipynb
	$(BIN)/jupyter lab --ServerApp.ip=127.0.0.1 --ServerApp.port=$(PORT) \
	    --ServerApp.root_dir=$(NOTEBOOKS) --ServerApp.allow_root=True \
	    --LabApp.default_url=/lab/tree/01_quickstart.ipynb

# Two pytest workers (one per core, one torch thread each: labkit's default on 2 cores); a test file
# or a notebook runs whole on one worker (--dist loadfile), so a notebook's cells stay in order.
TEST_WORKERS ?= 2
TEST_FLAGS ?=
test: install
	$(BIN)/python -m ruff check labkit tests benchmarks
	LABKIT_SCRATCH_SECONDS=20 $(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadfile -p tests.nbval_plugin tests notebooks \
	    --nbval --nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg $(TEST_FLAGS)

# Where make test's time goes (docs/benchmarks.md, "Test times"): the same run with every test's
# seconds, summed per notebook and per test file into benchmarks/results/test_times.json.
test-times: install
	$(MAKE) --no-print-directory test TEST_FLAGS=--durations=0 > $(VENV)/test-times.log 2>&1; status=$$?; \
	    $(BIN)/python benchmarks/test_times.py $(VENV)/test-times.log --out benchmarks/results/test_times.json; exit $$status

# The inner loop: ruff and the unit tests that take seconds (tests/conftest.py names the slow files).
check: install
	$(BIN)/python -m ruff check labkit tests benchmarks
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadfile -m "not slow_file" tests

# Only the notebooks, compared with their stored outputs: the root conftest.py registers the nbval
# plugin and its sanitizer and picks this environment's kernel, so no other flag is needed.
nbval: install
	LABKIT_SCRATCH_SECONDS=20 $(BIN)/python -m pytest -q notebooks --nbval

# The notebooks from their sources (notebook_sources/, paired by jupytext.toml; CONTRIBUTING.md).
# make notebook NB=12: notebook_sources/12_*.py into notebooks/12_*.ipynb, that notebook re-executed in
# place (the stored outputs nbval compares against), with its widget state so a copy opened without a
# kernel (or on GitHub) still shows the panels, then its Chinese twin: code and outputs from it, markdown
# from notebook_sources/zh-CN/12_*.py. make notebooks: the same for every notebook.
# make notebook-sync NB=12 (or every notebook without NB): the sources in, nothing executed, for markdown
# edits (every output kept); it refuses a code edit, which needs make notebook.
SYNC := $(BIN)/python benchmarks/sync_notebooks.py
define run_notebooks
	$(SYNC) --before-run $(1)
	names="$$($(SYNC) --list $(1))" && cd notebooks && for name in $$names; do \
	    $(abspath $(BIN))/jupyter nbconvert --to notebook --execute --inplace \
	        --ExecutePreprocessor.kernel_name=python3 --ExecutePreprocessor.store_widget_state=True "$$name.run.ipynb" \
	        && mv "$$name.run.ipynb" "$$name.ipynb" || { rm -f "$$name.run.ipynb"; exit 1; }; done
	$(SYNC) $(1)
endef

notebook: install
	@test -n "$(NB)" || { echo "which notebook? make notebook NB=12 (make notebooks runs them all)"; exit 1; }
	$(call run_notebooks,$(NB))

notebooks: install
	$(call run_notebooks,)

notebook-sync: install
	$(SYNC) $(NB)

# Reproduce the embedded models (each resumes if interrupted; times measured on 2 cores):
# tiny-ar from scratch (40 min), tiny adapted from it (40 min), tiny-cap distilled from tiny (43 min: 22 teacher decoding, 21 training).
model-ar: install
	mkdir -p runs/tiny-ar && cp labkit/weights/tiny/tokenizer.json labkit/weights/tiny/tokenizer_config.json runs/tiny-ar/
	$(BIN)/labkit train --recipe tiny-ar --out runs/tiny-ar
	$(call install_model,tiny-ar)

model: install
	$(BIN)/labkit train --recipe tiny --out runs/tiny
	$(call install_model,tiny)

model-cap: install
	$(BIN)/labkit train --recipe tiny-cap --out runs/tiny-cap
	$(call install_model,tiny-cap)

# Block diffusion and conversion from tiny-ar (issue 41; labkit.training.convert), two queues of one thread
# each (each run's training.json records its minutes, measured with both queues running): tiny-block4-from-ar
# (converted, block warm-up 1 -> 4) then tiny-anneal (full attention opened gradually) then tiny-scratch
# (full attention from scratch), and tiny-block4 (from scratch) then tiny-block16 (converted) then
# tiny-block4-edit (T2T fine-tune of tiny-block4-from-ar, which it waits for), then tiny's own recipe
# again, stopped at half its steps (its curve; tiny itself is its end).
# Each keeps snapshots at 10/25/50% for the curves; the committed ones are stored at 16 bits where
# their figures hold (labkit.bench.storage). Then `make bench-blocks`.
BLOCK_QUEUE_A := tiny-block4-from-ar tiny-anneal tiny-scratch
BLOCK_QUEUE_B := tiny-block4 tiny-block16 tiny-block4-edit
BLOCK_MODELS := tiny-block4-from-ar tiny-block4 tiny-block16 tiny-block4-edit
model-block: install
	for r in $(BLOCK_QUEUE_A) $(BLOCK_QUEUE_B); do mkdir -p runs/$$r; cp -n labkit/weights/tiny/tokenizer.json labkit/weights/tiny/tokenizer_config.json runs/$$r/; done
	( for r in $(BLOCK_QUEUE_A); do OMP_NUM_THREADS=1 LABKIT_THREADS=1 $(BIN)/labkit train --recipe $$r --out runs/$$r --keep-steps 120,300,600 || exit 1; \
	    [ $$r = tiny-block4-from-ar ] && { mkdir -p labkit/weights/$$r && cp runs/$$r/*.json runs/$$r/model.safetensors labkit/weights/$$r/; }; done ) & \
	( for r in $(BLOCK_QUEUE_B); do [ $$r = tiny-block4-edit ] && while [ ! -f labkit/weights/tiny-block4-from-ar/model.safetensors ]; do sleep 30; done; \
	    OMP_NUM_THREADS=1 LABKIT_THREADS=1 $(BIN)/labkit train --recipe $$r --out runs/$$r $$([ $$r = tiny-block4 ] && echo --keep-steps 120,300,600) || exit 1; done; \
	  mkdir -p runs/tiny && cp -n labkit/weights/tiny/tokenizer*.json runs/tiny/ && \
	  OMP_NUM_THREADS=1 LABKIT_THREADS=1 $(BIN)/labkit train --recipe tiny --out runs/tiny --keep-steps 120,300,600,1200 --stop-at 1200 ) & \
	wait
	for r in $(BLOCK_MODELS); do $(MAKE) --no-print-directory install-block MODEL=$$r || exit 1; done

# The tiny LLaDA2.1 (issue 53; labkit.training.recipes.llada21_stage1 / _stage2), one thread: stage 1 kept and
# stopped at step 600 of its schedule, stage 2 distilled from that copy; then `make bench-llada21`.
LLADA21_BLOCK := 32
model-llada21: install
	mkdir -p runs/tiny-block$(LLADA21_BLOCK)-from-ar runs/tiny-llada21
	cp -n labkit/weights/tiny/tokenizer*.json runs/tiny-block$(LLADA21_BLOCK)-from-ar/
	OMP_NUM_THREADS=1 LABKIT_THREADS=1 $(BIN)/labkit train --recipe tiny-block$(LLADA21_BLOCK)-from-ar \
	  --out runs/tiny-block$(LLADA21_BLOCK)-from-ar --keep-steps 600 --stop-at 600
	OMP_NUM_THREADS=1 LABKIT_THREADS=1 $(BIN)/labkit train --recipe tiny-llada21 --out runs/tiny-llada21
	$(call install_model,tiny-llada21)

bench-llada21: install
	OMP_NUM_THREADS=1 LABKIT_THREADS=1 $(BIN)/labkit bench llada21 --out benchmarks/results

install-block:
	$(call copy_run,$(MODEL))
	$(BIN)/python -c "from labkit.bench.storage import store_16bit; print(store_16bit('labkit/weights/$(MODEL)'))"
	$(call card,$(MODEL))

bench-blocks: install
	$(BIN)/labkit bench blocks --out benchmarks/results
	$(BIN)/python benchmarks/make_blocks_section.py

# A run installed as an embedded model: its files copied from runs/NAME, then its card (labkit eval
# stores the figures as eval.json, benchmarks/docgen writes README.md from them). install-block stores
# the weights at 16 bits between the two.
define copy_run
	mkdir -p labkit/weights/$(1)
	$(BIN)/python -c "import shutil; [shutil.copy('runs/$(1)/'+f, 'labkit/weights/$(1)/') for f in ('model.safetensors','config.json','tokenizer.json','tokenizer_config.json','training.json')]"
endef
define card
	$(BIN)/labkit eval --model $(1) --card
	$(BIN)/python -m benchmarks.docgen cards $(1)
endef
define install_model
	$(call copy_run,$(1))
	$(call card,$(1))
endef

# The task models, one pair per task family (labkit.tasks): the masked models (then the Sudoku twin that
# writes in a solver's order, the third Sudoku model) in one queue and their
# AR twins in another, side by side, one thread each (each run resumes if interrupted), then evaluated
# into their cards. The AR lane is the longer: 3 h as recorded in the twins' training.json beside
# other work (docs/models.md gives each model's minutes); less on a quiet machine.
TASK_MASKED := tiny-sudoku tiny-facts tiny-add tiny-sudoku-ar-solver
TASK_AR     := tiny-sudoku-ar tiny-facts-ar tiny-add-ar
model-tasks: install
	( for m in $(TASK_MASKED); do OMP_NUM_THREADS=1 LABKIT_THREADS=1 $(BIN)/labkit train --recipe $$m --out runs/$$m || exit 1; done ) & \
	( for m in $(TASK_AR); do OMP_NUM_THREADS=1 LABKIT_THREADS=1 $(BIN)/labkit train --recipe $$m --out runs/$$m || exit 1; done ); \
	status=$$?; wait $$! && test $$status -eq 0
	$(call install_model,tiny-sudoku)
	$(call install_model,tiny-sudoku-ar)
	$(call install_model,tiny-facts)
	$(call install_model,tiny-facts-ar)
	$(call install_model,tiny-add)
	$(call install_model,tiny-add-ar)
	$(call install_model,tiny-sudoku-ar-solver)

# The Sudoku AR twin converted to a masked model on the grid canvas (a quarter of tiny-sudoku's steps)
# and its control, the same recipe from scratch, side by side, one thread each, snapshots at 10/25/50%
# for their curves; then the converted one evaluated into its card.
model-sudoku-from-ar: install
	( OMP_NUM_THREADS=1 LABKIT_THREADS=1 $(BIN)/labkit train --recipe tiny-sudoku-from-ar --out runs/tiny-sudoku-from-ar --keep-steps 150,375,750 ) & \
	( OMP_NUM_THREADS=1 LABKIT_THREADS=1 $(BIN)/labkit train --recipe tiny-sudoku-scratch --out runs/tiny-sudoku-scratch --keep-steps 150,375,750 ); \
	status=$$?; wait $$! && test $$status -eq 0
	$(call install_model,tiny-sudoku-from-ar)

# The Sudoku models after RL with exact rewards (labkit.training.rl; each resumes if interrupted): the
# decisions recipe and the ELBO control in one lane, the AR twin in the other, one thread each, then
# evaluated into their cards; then `labkit bench rl` (rl.json: every rule before and after, the
# surrogates' curves, gradient noise, seeds) and docs/models.md's section from it.
model-rl: install
	( OMP_NUM_THREADS=1 LABKIT_THREADS=1 $(BIN)/labkit train-rl --recipe tiny-sudoku-rl --out runs/tiny-sudoku-rl && \
	  OMP_NUM_THREADS=1 LABKIT_THREADS=1 $(BIN)/labkit train-rl --recipe tiny-sudoku-rl-elbo --out runs/tiny-sudoku-rl-elbo ) & \
	( OMP_NUM_THREADS=1 LABKIT_THREADS=1 $(BIN)/labkit train-rl --recipe tiny-sudoku-ar-rl --out runs/tiny-sudoku-ar-rl ); \
	status=$$?; wait $$! && test $$status -eq 0
	$(call install_model,tiny-sudoku-rl)
	$(call install_model,tiny-sudoku-rl-elbo)
	$(call install_model,tiny-sudoku-ar-rl)

bench-rl: install
	OMP_NUM_THREADS=1 LABKIT_THREADS=1 $(BIN)/labkit bench rl --out benchmarks/results
	$(BIN)/python benchmarks/make_rl_section.py

# The self-error editor and its control (editor.json), the RL recipe search (rl_sweep.json: each run
# trained to its end, resumable) and the learned unmasking policy (learned_policy.json), one thread
# each in turn, then docs/models.md's sections from them.
bench-rl-search: install
	OMP_NUM_THREADS=1 LABKIT_THREADS=1 $(BIN)/labkit bench editor --out benchmarks/results
	OMP_NUM_THREADS=1 LABKIT_THREADS=1 $(BIN)/labkit bench rl-sweep --out benchmarks/results
	OMP_NUM_THREADS=1 LABKIT_THREADS=1 $(BIN)/labkit bench learned-policy --out benchmarks/results
	$(BIN)/python -m benchmarks.docgen

# Every rule on each task pair (tasks.json), then the Sudoku pair over 3 training seeds
# (task_seeds.json): seeds 1 and 2 of each twin train first, the masked models and the AR twins in two
# queues side by side, one thread each (resumable), then all three seeds are evaluated.
SEED_RUNS := runs/task-seeds
bench-tasks: install
	$(BIN)/labkit bench tasks --out benchmarks/results
	( for s in 1 2; do OMP_NUM_THREADS=1 LABKIT_THREADS=1 $(BIN)/labkit train --recipe tiny-sudoku --seed $$s --out $(SEED_RUNS)/tiny-sudoku-seed$$s || exit 1; done ) & \
	( for s in 1 2; do OMP_NUM_THREADS=1 LABKIT_THREADS=1 $(BIN)/labkit train --recipe tiny-sudoku-ar --seed $$s --out $(SEED_RUNS)/tiny-sudoku-ar-seed$$s || exit 1; done ); \
	status=$$?; wait $$! && test $$status -eq 0
	$(BIN)/labkit bench task-seeds --out benchmarks/results

# The speed-quality table of every sampler on tiny and tiny-cap, 96 prompts (tiny-cap alone took 52 min on 2 cores).
bench-samplers: install
	$(BIN)/labkit bench samplers --model tiny --cap-model tiny-cap --out benchmarks/results
	$(BIN)/labkit bench draft-edit --out benchmarks/results

# Keyword control hit rates and gen-PPL ratio (30 triples x 4 samples), infill and re-noise checks.
bench-controls: install
	$(BIN)/labkit bench controls --out benchmarks/results
	$(BIN)/labkit bench steering --out benchmarks/results

# On a CUDA machine: a random LLaDA-8B-shaped model in bf16: forward vs compute floor, labkit vs the
# official loops (copies you fetch into benchmarks/official/, ignored by git: generate.py of
# ML-GSAI/LLaDA as llada_generate.py, llada/generate.py of NVlabs/Fast-dLLM as fastdllm_generate.py;
# absent files are skipped), caches, overhead, batch 1-64, the families (skips on a CPU).
OFFICIAL := benchmarks/official
GPU_CHECK_FLAGS := $(if $(wildcard $(OFFICIAL)/llada_generate.py),--llada-generate $(OFFICIAL)/llada_generate.py) \
	$(if $(wildcard $(OFFICIAL)/fastdllm_generate.py),--fast-dllm-generate $(OFFICIAL)/fastdllm_generate.py)
gpu-check: install
	$(BIN)/python benchmarks/gpu_check.py $(GPU_CHECK_FLAGS) --out benchmarks/results/gpu_check.json

# The lab panel's Generate → re-rendered latency (target ≤ 1.5 s for 64 tokens, 64 steps), for each
# thread setting, quiet and next to a busy neighbour process (about 9 min on 2 cores).
bench-panel: install
	$(BIN)/labkit bench panel --out benchmarks/results

# When does parallel decoding pay (labkit.bench.roofline): one cached pass timed against the positions it
# computes (W = 1 .. 256 after 128 cached, batch 1 and 8) on tiny-ar and random-weight stand-ins of hidden
# 512, 1024 and 2048, beside a roofline of this machine's measured FLOP/s and bandwidth and the H200 points
# of gpu_check.json (roofline.json, roofline.png). Run it on a quiet machine: the timings are the result
# (about 5 min on one thread, estimated from short runs on a busy 2-core machine).
bench-roofline: install
	$(BIN)/labkit bench roofline --out benchmarks/results

# The students' copies of the notebooks and their Chinese twins (student/, student/zh-CN): every
# solution cell (tagged "solution") replaced by a stub; `make lab NOTEBOOKS=student` opens them.
student: install
	$(BIN)/labkit student --out student

# One reveal.js deck per course session from the notebooks' own cells, English and Chinese
# (reveal.js, require.js and MathJax fetched once from the npm registry, checked, kept beside them).
slides: install
	$(BIN)/labkit slides --out build/slides
	$(BIN)/labkit slides --out build/slides --lang zh-CN --offline-only

# Is this machine ready for the lab? (exit 1, with each fix, if not)
doctor: install
	$(BIN)/labkit doctor

# Every notebook run in a real JupyterLab + headless chromium (installs chromium with apt if
# missing); screenshots in build/browser, the README's two copied to docs/ with DOCS=1.
CHROMIUM ?= /usr/bin/chromium
browser-check: install
	@test -x $(CHROMIUM) || { echo "installing chromium (apt)"; \
	    $(if $(filter 0,$(shell id -u)),,sudo) apt-get update -qq && \
	    DEBIAN_FRONTEND=noninteractive $(if $(filter 0,$(shell id -u)),,sudo) apt-get install -y -qq chromium >/dev/null; }
	$(BIN)/python -m pip install --quiet -e ".[browser]"
	LABKIT_SCRATCH_SECONDS=20 $(BIN)/python tests/browser_check.py --workers $(TEST_WORKERS) --chromium $(CHROMIUM) $(if $(DOCS),--docs)
	$(MAKE) slides
	$(BIN)/python tests/slides_check.py --chromium $(CHROMIUM) --decks build/slides

clean-venv:
	rm -rf $(VENV)
