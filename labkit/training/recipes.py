"""Training configurations: `TrainConfig`, every knob of a run with its checks, and `RECIPES`, the
configurations of the committed models (`labkit train --recipe NAME`, `make model`)."""
from __future__ import annotations

from dataclasses import dataclass

from ..tasks import TASKS
from ..tasks.layouts import row_length, structure
from .masking import EPS

DATA = ("plays", "tasks")
# the forms a prompt cut from a speech can take (training.prompts.cut): a speaker's name alone, a name and
# the first words of a line, a cut in the middle of a speech, a whole first line
FORMS = ("speaker", "first words", "mid-speech", "first line")
# label → (registry rule, knobs): the draft rules whose recorded states a self-error editor trains on
# (TrainConfig.self_error_rules; labkit.training.self_errors)
DRAFT_RULES = {
    "threshold 0.5": ("threshold", {"threshold": 0.5}),
    "threshold 0.7": ("threshold", {"threshold": 0.7}),
    "S mode": ("speed", {}),
    "low-confidence": ("low_confidence", {}),
}


@dataclass(frozen=True)
class TrainConfig:
    objective: str = "diffusion"   # "diffusion" (masked, bidirectional) or "ar" (causal twin)
    data: str = "plays"            # "plays" (Shakespeare, BPE) or "tasks" (labkit.tasks puzzles, one token per char)
    vocab_size: int = 2048         # BPE vocabulary, specials included
    hidden_size: int = 256
    num_layers: int = 6
    num_heads: int = 4
    intermediate_size: int = 688
    seq_len: int = 256             # training window = the model's context
    batch_size: int = 16
    steps: int = 3000
    lr: float = 2e-3               # peak; linear warmup then cosine to lr * min_lr_ratio
    min_lr_ratio: float = 0.1
    warmup: int = 100
    weight_decay: float = 0.1
    grad_clip: float = 1.0
    eps: float = EPS               # t ~ U(eps, 1): smallest masking probability
    short_batch_prob: float = 0.1  # share of batches cut to a random shorter length (LLaDA uses 1%)
    bf16: bool = True              # bfloat16 autocast: faster matmuls on AVX512-BF16 CPUs and GPUs
    seed: int = 0
    ckpt_every: int = 200          # steps between resumable checkpoints
    cap_weight: float = 0.0        # CAP: entropy penalty on correct masked predictions (0 = off)
    edit_prob: float = 0.0         # T2T training: share of unmasked tokens swapped for noise (0 = off)
    edit_stutter: float = 0.0      # share of that noise that copies a neighbour (a parallel draft's collision)
    init_from: str = ""            # "" = random init; else a model folder or embedded name ("tiny-ar")
    shift_logits: bool = False     # Dream-style AR adaptation: hidden i-1 predicts token i
    absolute_positions: bool = False   # + learned position embeddings (the task models' fixed layouts)
    tasks: tuple = ()              # data="tasks": ((task, share of batch_size), ...), one model's tasks
    order: str = "reading"         # an AR Sudoku twin's answer: "reading" (the grid row by row) or
                                   # "solver" (cell-digit steps in a logic solver's order, labkit.tasks.solver)
    distill: int = 0               # > 0: self-distil on the init model's answers to this many prompts
    distill_teacher: str = ""      # the model whose answers are distilled ("" = init_from itself; a
                                   # causal one, e.g. "tiny-ar", answers left to right with its KV cache)
    distill_length: int = 128      # answer tokens the teacher writes per prompt
    distill_block: int = 32        # block length of the teacher's decoding and the student's canvases
    distill_temperature: float = 0.0  # the teacher's sampling temperature (0 = greedy answers)
    distill_top_p: float = 1.0     # ... within this nucleus (1.0 = the whole distribution)
    eos_every_speech: bool = False  # EOS after every speech of the plays, not only a play's end (answers
                                    # that stop); with distill, after every speech of the teacher's answers too
    distill_mix: float = 0.0       # share of each distillation batch drawn from the corpus instead
                                   # (plain masked or block diffusion: keeps the variety of real text)
    distill_forms: tuple = ("first line",)   # the teacher's prompts' forms (training.prompts.FORMS), in turn
    block_size: int = 0            # > 0: block diffusion (LLaDA2.x, BD3-LM): block-causal attention,
                                   # the noisy canvas and the clean sequence in one pass (losses.block_diffusion_loss)
    block_warmup: int = 0          # steps over which the trained block grows 1, 2, 4 .. block_size (LLaDA2.0)
    attn_anneal: int = 0           # steps over which attention opens from causal to full (DiffuLLaMA)
    self_error_share: float = 0.0  # data="tasks": share of each batch's rows that are init_from's own drafts
                                   # (labkit.training.self_errors), trained with losses.draft_repair_loss
    self_error_items: int = 2000   # training questions drafted (once, into the run folder's drafts.pt)
    self_error_rules: tuple = ("threshold 0.5", "S mode")   # the draft rules (self_errors.DRAFT_RULES labels)

    def __post_init__(self):
        self._check_sizes()
        self._check_shares()
        self._check_combinations()

    @property
    def kind(self) -> str:
        """The layout family of a task model: "masked", "ar" or "solver" (labkit.tasks.layouts)."""
        return "masked" if self.objective == "diffusion" else ("solver" if self.order == "solver" else "ar")

    def _check_sizes(self) -> None:
        if self.objective not in ("diffusion", "ar"):
            raise ValueError(f"objective must be 'diffusion' or 'ar', got {self.objective!r}")
        if self.data not in DATA:
            raise ValueError(f"data must be one of {', '.join(DATA)}, got {self.data!r}")
        for name in ("steps", "batch_size", "ckpt_every"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)}")
        if self.seq_len < 8:
            raise ValueError(f"seq_len must be >= 8, got {self.seq_len}")

    def _check_shares(self) -> None:
        if not 0 <= self.edit_prob < 1:
            raise ValueError(f"edit_prob must be in [0, 1), got {self.edit_prob}")
        if not 0 <= self.edit_stutter <= 1:
            raise ValueError(f"edit_stutter must be in [0, 1], got {self.edit_stutter}")
        if not self.distill_temperature >= 0:
            raise ValueError(f"distill_temperature must be >= 0, got {self.distill_temperature}")
        if not 0 < self.distill_top_p <= 1:
            raise ValueError(f"distill_top_p must be in (0, 1], got {self.distill_top_p}")
        if not 0 <= self.distill_mix < 1:
            raise ValueError(f"distill_mix must be in [0, 1), got {self.distill_mix}")

    def _check_combinations(self) -> None:
        if self.distill_mix and not self.distill:
            raise ValueError("distill_mix mixes corpus rows into distillation batches; set distill > 0 too")
        if round(self.batch_size * self.distill_mix) >= self.batch_size:
            raise ValueError(f"distill_mix={self.distill_mix} leaves no teacher row in a batch of "
                             f"{self.batch_size}; use a smaller distill_mix or a larger batch_size")
        if not self.cap_weight >= 0:
            raise ValueError(f"cap_weight must be >= 0, got {self.cap_weight}")
        if (self.cap_weight or self.edit_prob or self.shift_logits or self.distill) and self.objective != "diffusion":
            raise ValueError("shift_logits, cap_weight, edit_prob and distill apply to objective='diffusion' only")
        if self.data == "tasks" and (self.distill or self.cap_weight or self.edit_stutter or self.eos_every_speech):
            raise ValueError("data='tasks' takes no distill, cap_weight, edit_stutter or eos_every_speech")
        if self.data == "tasks" and self.init_from and (self.objective != "diffusion" or len(self.tasks) != 1):
            raise ValueError("data='tasks' with init_from converts one task's AR twin to a masked model: "
                             "objective='diffusion' and a single task")
        if self.distill < 0 or (self.distill and not self.init_from):
            raise ValueError(f"distill must be 0 (off) or a prompt count > 0 with init_from set (the "
                             f"teacher), got distill={self.distill}, init_from={self.init_from!r}")
        if self.data == "tasks":
            self._check_tasks()
        elif self.tasks:
            raise ValueError("tasks applies to data='tasks' only")
        self._check_conversion()
        self._check_self_errors()
        if self.order not in ("reading", "solver"):
            raise ValueError(f"order must be 'reading' or 'solver', got {self.order!r}")
        if self.order == "solver" and (self.objective != "ar" or [t for t, _ in self.tasks] != ["sudoku"]):
            raise ValueError("order='solver' is the AR Sudoku twin's layout: objective='ar', data='tasks', "
                             "tasks=(('sudoku', 1.0),)")

    def _check_conversion(self) -> None:
        for name in ("block_size", "block_warmup", "attn_anneal"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"{name} must be an integer >= 0 (0 = off), got {value!r}")
        if self.block_size and (self.objective != "diffusion" or self.data != "plays"):
            raise ValueError("block_size trains a block-diffusion LM on the plays: objective='diffusion', "
                             "data='plays'")
        if self.block_size and self.distill and self.block_warmup:
            raise ValueError("a block model distils in its own blocks: block_warmup must be 0 with block_size and distill")
        if not self.distill_forms or any(f not in FORMS for f in self.distill_forms):
            raise ValueError(f"distill_forms must be a non-empty tuple of {FORMS}, got {self.distill_forms!r}")
        if self.distill_teacher and not self.distill:
            raise ValueError(f"distill_teacher={self.distill_teacher!r} names whose answers are distilled; set distill > 0 too")
        if self.block_size > self.seq_len:
            raise ValueError(f"block_size must be at most seq_len ({self.seq_len}), got {self.block_size}")
        if self.block_warmup and not self.block_size:
            raise ValueError("block_warmup grows the block length up to block_size; set block_size > 0 too")
        if self.block_warmup > self.steps:
            raise ValueError(f"block_warmup must be at most steps ({self.steps}), got {self.block_warmup}")
        if self.attn_anneal and (self.objective != "diffusion" or self.block_size or self.data != "plays"
                                 or self.distill or not self.init_from):
            raise ValueError("attn_anneal opens an AR model's attention over training: objective='diffusion', "
                             "data='plays', init_from set, no block_size, no distill")
        if self.attn_anneal > self.steps:
            raise ValueError(f"attn_anneal must be at most steps ({self.steps}), got {self.attn_anneal}")

    def _check_self_errors(self) -> None:
        if not 0 <= self.self_error_share < 1:
            raise ValueError(f"self_error_share must be in [0, 1), got {self.self_error_share}")
        if not self.self_error_share:
            return
        if self.data != "tasks" or self.objective != "diffusion" or not self.init_from:
            raise ValueError("self_error_share trains on init_from's own drafts of task questions: "
                             "data='tasks', objective='diffusion', init_from set")
        if round(self.batch_size * self.self_error_share) < 1:
            raise ValueError(f"self_error_share={self.self_error_share} gives no draft row in a batch of "
                             f"{self.batch_size}; use a larger share or batch_size")
        if self.self_error_items < 1:
            raise ValueError(f"self_error_items must be >= 1, got {self.self_error_items}")
        if not self.self_error_rules or any(r not in DRAFT_RULES for r in self.self_error_rules):
            raise ValueError(f"self_error_rules must name rules from {', '.join(DRAFT_RULES)}, "
                             f"got {self.self_error_rules!r}")

    def _check_tasks(self) -> None:
        names = [t for t, _ in self.tasks] if all(isinstance(t, (tuple, list)) and len(t) == 2
                                                  for t in self.tasks) else None
        if not names or any(t not in TASKS for t in names):
            raise ValueError(f"tasks must be ((task, share), ...) with tasks from {', '.join(TASKS)}, got {self.tasks!r}")
        kind = self.kind
        if len(names) > 1 and any(structure(t, kind) for t in names):
            raise ValueError(f"tasks {names}: a task with structure tables (sudoku, addition) trains alone")
        longest = max(row_length(t, kind) for t in names)
        if self.seq_len < longest:
            raise ValueError(f"seq_len must be >= {longest} (the longest row of {', '.join(names)}), got {self.seq_len}")


# The committed models, in the order they are trained: tiny-ar from scratch, tiny adapted from it,
# tiny-cap distilled from tiny. How tiny-cap's settings were chosen: benchmarks/results/recipes.md.
RECIPES = {
    "tiny-ar": TrainConfig(objective="ar"),
    "tiny": TrainConfig(init_from="tiny-ar", shift_logits=True, steps=2400, lr=1e-3),
    # self-distilled on tiny's own greedy answers to 512 training prompts, with CAP and T2T noise
    # (half of it neighbour copies: the stutters a parallel draft makes)
    "tiny-cap": TrainConfig(init_from="tiny", shift_logits=True, steps=2000, lr=5e-4, warmup=50,
                            cap_weight=0.5, edit_prob=0.2, edit_stutter=0.5, distill=512),
}


# The task models: one pair (masked model, AR twin) per task family, twins of one shape, data,
# batch and step count, from scratch, each layout's positions known to the model (labkit.tasks.layouts).
# The number of masks is drawn uniformly (losses.masked_count_loss); how the recipe was found:
# docs/models.md. tiny-sudoku also learns to repair written cells (edit_prob), for draft-and-edit.
TASK_SHAPE = dict(data="tasks", vocab_size=77, hidden_size=128, num_layers=4, num_heads=4, intermediate_size=344,
                  absolute_positions=True, lr=1e-3, warmup=300, weight_decay=0.01, short_batch_prob=0.0, bf16=False,
                  ckpt_every=250)


def _pair(name: str, masked_len: int, ar_len: int, edit_prob: float = 0.0, **knobs) -> dict:
    """tiny-NAME and tiny-NAME-ar: the same shape, data, batch and steps (seq_len: each layout's row)."""
    shape = {**TASK_SHAPE, **knobs}
    return {f"tiny-{name}": TrainConfig(seq_len=masked_len, edit_prob=edit_prob, **shape),
            f"tiny-{name}-ar": TrainConfig(objective="ar", seq_len=ar_len, **shape)}


RECIPES.update(_pair("sudoku", 37, 74, edit_prob=0.1, tasks=(("sudoku", 1.0),), batch_size=64, steps=6000))
# the third Sudoku twin: AR, the same shape, data and steps, answering in a logic solver's order
RECIPES["tiny-sudoku-ar-solver"] = TrainConfig(objective="ar", order="solver", seq_len=94, tasks=(("sudoku", 1.0),),
                                               batch_size=64, steps=6000, **TASK_SHAPE)
RECIPES.update(_pair("facts", 22, 22, tasks=(("reversal", 0.8), ("mirror", 0.2)), batch_size=160, steps=6000,
                     weight_decay=0.0))
RECIPES.update(_pair("add", 19, 19, tasks=(("addition", 1.0),), batch_size=128, steps=8000))
TASK_MODELS = tuple(name for name, cfg in RECIPES.items() if cfg.data == "tasks" and cfg.order == "reading")   # pairs
# Block diffusion (LLaDA2.x's architecture) and the ways of making a diffusion LM from tiny-ar, each at
# half of tiny's budget (1200 steps of 16 x 256 tokens), kept at 10/25/50% for the curves (make model-block):
# tiny-block4-from-ar converted from tiny-ar with the block grown 1 -> 2 -> 4 over the first 10% (LLaDA2.0),
# and tiny-block4 from scratch; full attention opened gradually from causal over the first 25% (DiffuLLaMA) and from
# scratch, beside tiny's own recipe (opened at once, Dream, 2400 steps). tiny-block16 is converted at
# an eighth of tiny's budget (what the time allowed); tiny-block4-edit fine-tunes tiny-block4-from-ar
# with CAP and T2T noise (tiny-cap's terms, on the corpus instead of distilled answers).
RECIPES.update({
    "tiny-block4-from-ar": TrainConfig(init_from="tiny-ar", shift_logits=True, block_size=4, block_warmup=120,
                                       steps=1200, lr=1e-3),
    "tiny-block4": TrainConfig(block_size=4, steps=1200),
    "tiny-anneal": TrainConfig(init_from="tiny-ar", shift_logits=True, attn_anneal=300, steps=1200, lr=1e-3),
    "tiny-scratch": TrainConfig(steps=1200),
    "tiny-block16": TrainConfig(init_from="tiny-ar", shift_logits=True, block_size=16, block_warmup=30,
                                steps=300, lr=1e-3),
    "tiny-block4-edit": TrainConfig(init_from="tiny-block4-from-ar", shift_logits=True, block_size=4, steps=150,
                                    lr=5e-4, warmup=15, cap_weight=0.5, edit_prob=0.2, edit_stutter=0.5),
})
# The tiny LLaDA2.1 (issue 53), in two stages. (1) tiny-blockB-from-ar: tiny-ar converted at blocks of B with
# the block grown over the first 10%, tiny-block4-from-ar's schedule, kept and stopped at step 600 (half of it:
# what this machine's time allowed; `labkit train --keep-steps 600 --stop-at 600`). (2) tiny-llada21: that copy
# distilled in its own blocks on tiny-ar's answers (its block-1 self: the same network, exact bits) to 512
# training openings, 192 tokens each with EOS after every speech, with tiny-cap's CAP and T2T noise terms.
LLADA21_BLOCKS, LLADA21_STAGE1 = (8, 16, 32), 600


def llada21_stage1(block: int) -> TrainConfig:
    return TrainConfig(init_from="tiny-ar", shift_logits=True, block_size=block, block_warmup=120, steps=1200,
                       lr=1e-3, ckpt_every=50)


def llada21_stage2(block: int, start: int = LLADA21_STAGE1, forms: tuple = ("first line",), mix: float = 0.0,
                   prompts: int = 512) -> TrainConfig:
    """Stage 2 from stage 1's copy at step `start`: `prompts` teacher answers to training prompts of
    `forms`, with a `mix` share of each batch from the corpus (block diffusion on real text)."""
    return TrainConfig(init_from=f"runs/tiny-block{block}-from-ar/step-{start}", distill_teacher="tiny-ar",
                       shift_logits=True, block_size=block, distill=prompts, distill_length=192, steps=600, lr=5e-4,
                       warmup=50, cap_weight=0.5, edit_prob=0.2, edit_stutter=0.5, eos_every_speech=True,
                       ckpt_every=50, distill_forms=tuple(forms), distill_mix=mix)


RECIPES.update({f"tiny-block{b}-from-ar": llada21_stage1(b) for b in LLADA21_BLOCKS})
LLADA21_BLOCK = 32     # chosen between 16 and 32 by `labkit bench llada21`'s block_choice (llada21.json)
# Round 6's tiny-llada21: prompts of one form only (a speaker and a whole first line), teacher rows only
RECIPES["tiny-llada21-first-line"] = llada21_stage2(LLADA21_BLOCK)
# (3) Round 7 (issue 60): that model taught prompts of every form (training.prompts.FORMS, in turn: a speaker's
# name alone, a name and the first words of a line, a cut inside a speech, a whole first line), tiny-ar's
# answers to 1024 of them, a quarter of each batch from the corpus (block diffusion on the plays, EOS after every
# speech). float32: the machine that trained it has no bfloat16 matmuls (AVX2 only; autocast there is ~8x slower).
RECIPES["tiny-llada21-any"] = TrainConfig(
    init_from="runs/tiny-llada21-first-line", distill_teacher="tiny-ar", shift_logits=True, block_size=LLADA21_BLOCK,
    distill=1024, distill_length=192, distill_forms=FORMS, distill_mix=0.25, steps=300, lr=3e-4, warmup=30,
    cap_weight=0.5, edit_prob=0.2, edit_stutter=0.5, eos_every_speech=True, ckpt_every=25, bf16=False)
RECIPES["tiny-llada21"] = RECIPES["tiny-llada21-first-line"]
# The Sudoku AR twin converted to a masked model on the grid canvas (its '=' and solution positions
# become the grid's, attention opened at once, logits shifted: Dream's recipe) at a quarter of
# tiny-sudoku's 6000 steps, with tiny-sudoku's repair noise; kept at 10/25/50% for its curve.
RECIPES["tiny-sudoku-from-ar"] = TrainConfig(**{**TASK_SHAPE, "warmup": 100}, init_from="tiny-sudoku-ar",
                                             shift_logits=True, seq_len=37, edit_prob=0.1,
                                             tasks=(("sudoku", 1.0),), batch_size=64, steps=1500)
# ... and the same recipe from scratch (tiny-sudoku's own shape and noise at these 1500 steps), its control
RECIPES["tiny-sudoku-scratch"] = TrainConfig(**{**TASK_SHAPE, "warmup": 100}, seq_len=37, edit_prob=0.1,
                                             tasks=(("sudoku", 1.0),), batch_size=64, steps=1500)
# The editor trained on its own errors (labkit.training.self_errors): tiny-sudoku fine-tuned for 1000 steps
# with a quarter of each batch its own threshold-0.5 and S-mode drafts of training puzzles (the rest its own
# recipe's rows and repair noise; the share chosen among 1/8, 1/4 and 1/2 by `labkit bench editor`), beside
# the control at the same steps with the random repair noise only.
EDITOR_TUNE = dict(**{**TASK_SHAPE, "warmup": 50, "lr": 2e-4, "ckpt_every": 100}, init_from="tiny-sudoku", seq_len=37,
                   edit_prob=0.1, tasks=(("sudoku", 1.0),), batch_size=64, steps=1000)
RECIPES["tiny-sudoku-editor"] = TrainConfig(**EDITOR_TUNE, self_error_share=0.25)
RECIPES["tiny-sudoku-t2t"] = TrainConfig(**EDITOR_TUNE)
SUDOKU_CURVE_STEPS = (150, 375, 750)
CURVE_STEPS = (120, 300, 600, 1200)     # 10/25/50% of the 1200-step runs (then their end); 5/12.5/25/50% of tiny's


def curve_steps(cfg: TrainConfig) -> tuple[int, ...]:
    """The steps a run's curve is read at: the CURVE_STEPS before its end, then its end."""
    return (*(s for s in CURVE_STEPS if s < cfg.steps), cfg.steps)

SOLVER_TWINS = tuple(name for name, cfg in RECIPES.items() if cfg.order == "solver")
