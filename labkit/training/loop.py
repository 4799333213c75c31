"""Train the embedded model from scratch: LLaDA's masked-diffusion loss (or next-token loss for
the autoregressive twin), a plain AdamW loop with checkpoints every few minutes and exact resume.

    python -m labkit train --out runs/tiny        # resumes from runs/tiny/ckpt.pt if present

`train` = `setup` (tokenizer, data, model, optimiser, a resumed checkpoint: a `Run`), then
`train_step` until done, with `save_checkpoint` on the way and `finish` at the end, on the
skeleton every trainer shares (`labkit.training.trainer`: run state, schedule, checkpoints, the
loop). The configurations are in `labkit.training.recipes`, the losses in `labkit.training.losses`.
"""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path

import torch
from safetensors.torch import load_file

from ..models.load import load, model_folder
from ..models.tiny_net import TinyDLM, TinyDLMConfig
from ..models.tokenizer import load_tokenizer, train_tokenizer
from ..tasks import TaskData, char_tokenizer
from ..tasks.layouts import ar_positions, prompt_formats
from ..tasks.layouts import structure as task_structure
from . import trainer
from .convert import anneal_layout, anneal_ratio, block_at
from .corpus import HELDOUT, Corpus, load_plays
from .distill import make_trajectories, pack, speech_eos
from .losses import (
    ar_loss,
    ar_sft_loss,
    block_diffusion_loss,
    block_distill_loss,
    draft_repair_loss,
    masked_count_loss,
    masked_diffusion_loss,
)
from .prompts import train_prompts
from .recipes import RECIPES, TrainConfig
from .seeds import CPU, data_seed, noise_seed
from .self_errors import Drafts, build_drafts, draft_summary, training_items
from .trainer import RunState, lr_at

CHECKPOINT = "ckpt.pt"         # in the output folder; a run resumes from it
DRAFTS = "drafts.pt"           # self_error_share: the drafts trained on, in the output folder
ADAM_BETAS = (0.9, 0.95)
HISTORY_EVERY = 50             # steps between entries of the logged loss history
LOSS_EMA_NEW = 0.02            # weight of the newest loss in the logged running mean


@dataclass(kw_only=True)
class Run(RunState):
    """One training run: its config, model, optimiser and data, and the state it carries (RunState:
    step, seconds, history of (step, running mean of the loss))."""
    cfg: TrainConfig
    out: Path
    device: torch.device
    model: TinyDLM
    opt: torch.optim.Optimizer
    corpus: Corpus | None          # None: every row is a teacher answer (or a task row)
    mask_id: int
    teacher: tuple | None = None   # distillation: (ids, attn, P) of the teacher's answers, on the device
    tasks: object = None           # data="tasks": a labkit.tasks.TaskData
    drafts: object = None          # self_error_share: init_from's drafts (labkit.training.self_errors.Drafts)

    def logits(self, x: torch.Tensor, attn: torch.Tensor | None = None) -> torch.Tensor:
        return self.model(x, attn).logits


def build_model(cfg: TrainConfig, tokenizer) -> TinyDLM:
    """A TinyDLM of cfg's shape, initialised from cfg.seed, or from init_from's weights."""
    structure, formats = None, None
    if cfg.data == "tasks":
        structure = next((s for t, _ in cfg.tasks if (s := task_structure(t, cfg.kind))), None)
        formats = [f.to_dict() for t, _ in cfg.tasks for f in prompt_formats(t, cfg.kind)]
    mcfg = TinyDLMConfig(vocab_size=len(tokenizer), hidden_size=cfg.hidden_size,
                         num_hidden_layers=cfg.num_layers, num_attention_heads=cfg.num_heads,
                         intermediate_size=cfg.intermediate_size, max_position_embeddings=cfg.seq_len,
                         is_causal=cfg.objective == "ar", shift_logits=cfg.shift_logits,
                         absolute_positions=cfg.absolute_positions, structure=structure, block_size=cfg.block_size,
                         prompt_formats=formats,
                         mask_token_id=tokenizer.mask_token_id,
                         pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id)
    with torch.random.fork_rng():
        torch.manual_seed(cfg.seed)
        model = TinyDLM(mcfg)
    if cfg.init_from:
        src = init_folder(cfg.init_from)
        state = load_file(src / "model.safetensors")
        state.pop("structure_ids", None)  # a buffer: the ids of this config's own layout (older weights lack it)
        if cfg.data == "tasks":
            state = _task_layout(cfg, state)
        def shapes(tensors) -> dict:
            return {k: tuple(v.shape) for k, v in tensors.items() if k not in ("lm_head.weight", "structure_ids")}
        if shapes(state) != shapes(model.state_dict()):
            raise ValueError(f"init_from={cfg.init_from!r}: its weights do not fit this TrainConfig's "
                             f"shape (vocab, hidden_size, layers, heads, intermediate_size must match)")
        model.load_state_dict(state, strict=False)
        model.tie_weights()
    return model


def _task_layout(cfg: TrainConfig, state: dict) -> dict:
    """An AR twin's weights on the masked layout of cfg's task: each masked position takes the
    learned position vector of the AR position that plays its part (layouts.ar_positions); the
    structure ids are the new layout's own (the tables' vectors are shared by both layouts)."""
    state = dict(state)
    table = state.get("positions.weight")                    # (L_ar, D)
    if table is not None and table.shape[0] != cfg.seq_len:
        idx = ar_positions(cfg.tasks[0][0])
        if len(idx) != cfg.seq_len or max(idx) >= table.shape[0]:
            raise ValueError(f"init_from={cfg.init_from!r}: its {table.shape[0]} positions do not map onto "
                             f"seq_len={cfg.seq_len} of task {cfg.tasks[0][0]!r}")
        state["positions.weight"] = table[idx]               # (L, D)
    return state


def init_folder(init_from: str) -> Path:
    """The model folder named by `TrainConfig.init_from`: an embedded name or a path."""
    src = model_folder(init_from)
    if not (src / "model.safetensors").is_file():
        raise FileNotFoundError(f"init_from={init_from!r}: no model.safetensors in {src}")
    return src


def distill_rows(cfg: TrainConfig, out: Path, tokenizer, log,
                 device: str | torch.device = "cpu") -> tuple[torch.Tensor, torch.Tensor, int]:
    """The teacher's (init_from's) answers to `cfg.distill` training prompts (greedy, or sampled at
    distill_temperature), packed; decoded once into out/trajectories.pt (resumable: it is the slow
    part)."""
    teacher = load(str(init_folder(cfg.distill_teacher or cfg.init_from)), device=device)
    top_p = cfg.distill_top_p if cfg.distill_top_p < 1 else None
    traj = make_trajectories(teacher, train_prompts(cfg.distill, cfg.seed, tuple(cfg.distill_forms)), out / "trajectories.pt",
                             gen_length=cfg.distill_length, block_length=cfg.distill_block,
                             temperature=cfg.distill_temperature, top_p=top_p, seed=cfg.seed, log=log)
    if cfg.eos_every_speech:
        traj = {**traj, "answer": speech_eos(tokenizer, traj["answer"])}
    ids, attn, P = pack(tokenizer, traj, cfg.block_size or 1)
    return ids.to(device), attn.to(device), P                          # (N, P + G) each, on the device


def draft_rows(cfg: TrainConfig, out: Path, log):
    """init_from's drafts of `cfg.self_error_items` training questions under cfg.self_error_rules
    (`self_errors.build_drafts`, greedy, on the CPU), made once into out/drafts.pt."""
    path = out / DRAFTS
    if path.is_file():
        drafts = Drafts.load(path)
        if drafts.rules != tuple(cfg.self_error_rules):
            raise ValueError(f"{path} holds drafts of {drafts.rules}, not {tuple(cfg.self_error_rules)}; "
                             f"delete it or use another folder")
        return drafts
    drafter = load(str(init_folder(cfg.init_from)))
    items = training_items(cfg.tasks[0][0], cfg.self_error_items, cfg.seed)
    drafts = build_drafts(drafter, items, tuple(cfg.self_error_rules), seed=cfg.seed)
    log(f"drafts: {len(drafts)} states of {len(items)} questions {draft_summary(drafts, drafter.mask_id)}")
    drafts.save(path)
    return drafts


def load_or_make_tokenizer(cfg: TrainConfig, out: Path, texts: list[str]):
    """out's tokenizer when resuming; else init_from's (it keeps the token ids the weights were
    trained on); else a BPE trained on `texts`. A new one is saved into out."""
    if (out / "tokenizer.json").is_file():
        return load_tokenizer(out)
    if cfg.init_from:
        tokenizer = load_tokenizer(init_folder(cfg.init_from))
    else:
        tokenizer = train_tokenizer(texts, cfg.vocab_size)
    tokenizer.save_pretrained(out)
    return tokenizer


def make_optimizer(cfg: TrainConfig, model: torch.nn.Module) -> torch.optim.AdamW:
    """AdamW with weight decay on the matrices only (not on norms' gains)."""
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    return torch.optim.AdamW([{"params": decay, "weight_decay": cfg.weight_decay},
                              {"params": no_decay, "weight_decay": 0.0}], lr=cfg.lr, betas=ADAM_BETAS)


def resume(run: Run, log) -> None:
    """Load run.out's checkpoint, if any, into the run (it must have been written with run.cfg)."""
    trainer.resume(run.out / CHECKPOINT, run.model, run.opt, run, run.cfg, run.device, log)


def setup(cfg: TrainConfig, out: str | Path, log, device: str | torch.device) -> Run:
    """Everything before the first step: the output folder, tokenizer, data, model and optimiser,
    the checkpoint to resume from and, for distillation, the teacher's answers."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    if cfg.data == "tasks":
        tokenizer, corpus = char_tokenizer(), None
        tokenizer.save_pretrained(out)
    else:
        texts = list(load_plays("train").values())
        tokenizer = load_or_make_tokenizer(cfg, out, texts)
        corpus = Corpus(tokenizer, texts, cfg.eos_every_speech) if not cfg.distill or cfg.distill_mix else None
    device = torch.device(device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError("device='cuda' but torch sees no GPU here; use device='cpu'")
    model = build_model(cfg, tokenizer).to(device)
    run = Run(cfg=cfg, out=out, device=device, model=model, opt=make_optimizer(cfg, model), corpus=corpus,
              mask_id=tokenizer.mask_token_id)
    resume(run, log)
    if cfg.data == "tasks":
        drafted = round(cfg.batch_size * cfg.self_error_share)     # rows of each batch that are drafts
        run.tasks = TaskData(tokenizer, cfg.seed, cfg.batch_size - drafted, cfg.tasks, cfg.kind)
    if cfg.distill:
        run.teacher = distill_rows(cfg, out, tokenizer, log, device)
    if cfg.self_error_share:
        run.drafts = draft_rows(cfg, out, log)
    model.train()
    return run


def _extra_terms(cfg: TrainConfig) -> dict:
    return dict(cap_weight=cfg.cap_weight, edit_prob=cfg.edit_prob, edit_stutter=cfg.edit_stutter)


def distill_loss(run: Run, x0: torch.Tensor | None, g: torch.Generator) -> torch.Tensor:
    """A distillation batch: teacher rows (block-shaped loss) and, with distill_mix, corpus rows
    (plain masked diffusion), each part a per-token mean, weighted by its rows."""
    cfg = run.cfg
    ids, attn, P = run.teacher
    n_corpus = round(cfg.batch_size * cfg.distill_mix)                 # the rest: teacher answers
    rows = torch.randint(len(ids), (cfg.batch_size - n_corpus,), generator=g, device=CPU).to(run.device)
    if cfg.block_size:                  # a block model: every answer block at once, in its own blocks
        loss = block_diffusion_loss(run.model, ids[rows], run.mask_id, eps=cfg.eps, generator=g,
                                    attention_mask=attn[rows], clean_prefix=P, **_extra_terms(cfg))
    else:
        loss = block_distill_loss(run.logits, ids[rows], attn[rows], P, cfg.distill_block, run.mask_id,
                                  eps=cfg.eps, generator=g, **_extra_terms(cfg))
    if n_corpus:                        # corpus rows: the model's own objective on real text
        plain = (block_diffusion_loss(run.model, x0[:n_corpus], run.mask_id, eps=cfg.eps, generator=g,
                                      **_extra_terms(cfg)) if cfg.block_size else
                 masked_diffusion_loss(run.logits, x0[:n_corpus], run.mask_id, eps=cfg.eps, generator=g,
                                       **_extra_terms(cfg)))
        loss = (loss * len(rows) + plain * n_corpus) / cfg.batch_size
    return loss


def task_loss(run: Run, g: torch.Generator) -> torch.Tensor:
    """One group of rows per task (each its own canvas length), the objective on each row's loss
    positions (masked: the number of masks uniform, with T2T repair at edit_prob); with
    self_error_share, that share of the rows are states of init_from's own drafts
    (`losses.draft_repair_loss`); groups weighted by their rows."""
    total, rows = 0.0, 0
    if run.drafts is not None:                      # the model's own drafts, drawn by (seed, step)
        n = round(run.cfg.batch_size * run.cfg.self_error_share)
        rows_g = torch.Generator().manual_seed(data_seed(run.cfg.seed, run.step))
        pick = torch.randint(len(run.drafts), (n,), generator=rows_g)          # (n,) states, on the CPU
        d = run.drafts
        loss = draft_repair_loss(run.logits, d.canvas[pick].to(run.device), d.truth[pick].to(run.device),
                                 d.written[pick].to(run.device), run.mask_id)
        total, rows = loss * n, n
    for x0, answer in run.tasks.batch(run.step).values():
        x0, answer = x0.to(run.device), answer.to(run.device)
        if run.cfg.objective == "diffusion":
            loss = masked_count_loss(run.logits, x0, run.mask_id, answer=answer, generator=g,
                                     edit_prob=run.cfg.edit_prob)
        else:
            loss = ar_sft_loss(run.logits, x0, answer)
        total, rows = total + loss * len(x0), rows + len(x0)
    return total / rows


def step_loss(run: Run, x0: torch.Tensor | None, g: torch.Generator) -> torch.Tensor:
    """The recipe's loss on batch x0 (None when every row is a teacher answer), noise from g."""
    cfg = run.cfg
    if cfg.distill:
        return distill_loss(run, x0, g)
    if cfg.data == "tasks":
        return task_loss(run, g)
    if cfg.block_size:
        return block_diffusion_loss(run.model, x0, run.mask_id, block=block_at(cfg.block_size, cfg.block_warmup, run.step),
                                    eps=cfg.eps, generator=g, **_extra_terms(cfg))
    if cfg.attn_anneal and (layout := anneal_layout(anneal_ratio(cfg.attn_anneal, run.step), x0.shape[1], g)) is not None:
        layout = layout.to(run.device)                                 # (L, L), drawn on the CPU
        return masked_diffusion_loss(lambda x: run.model(x, layout=layout).logits, x0, run.mask_id, eps=cfg.eps,
                                     generator=g, **_extra_terms(cfg))
    if cfg.objective == "diffusion":
        return masked_diffusion_loss(run.logits, x0, run.mask_id, eps=cfg.eps, generator=g, **_extra_terms(cfg))
    return ar_loss(run.logits, x0)


def train_step(run: Run) -> float:
    """One optimiser step at run.step (its batch and noise are functions of the seed and the step):
    learning rate, loss under autocast, backward, clipped AdamW update. Returns the loss."""
    cfg, step = run.cfg, run.step
    x0 = run.corpus.batch(cfg, step).to(run.device) if run.corpus is not None else None   # (B, L) or None
    g = torch.Generator().manual_seed(noise_seed(cfg.seed, step))
    trainer.set_lr(run.opt, lr_at(cfg, step))
    with torch.autocast(run.device.type, dtype=torch.bfloat16, enabled=cfg.bf16):
        loss = step_loss(run, x0, g)
    trainer.optimizer_step(loss, run.model, run.opt, cfg.grad_clip)
    run.step += 1
    return loss.item()


def save_checkpoint(run: Run) -> None:
    """Model, optimiser, step, time and history into run.out/ckpt.pt (`trainer.save_checkpoint`)."""
    trainer.save_checkpoint(run.out / CHECKPOINT, run.model, run.opt, run, run.cfg)


def start_record(cfg: TrainConfig) -> dict:
    """Where a run started, when that is a kept copy of another run (OUT/step-N, `snapshot`), which
    no one else can open: {"init_snapshot": its step, minutes, config, the recipe that config is (or
    None) and its model config}, so a card can say how the start was made. {} otherwise."""
    if not cfg.init_from:
        return {}
    src = init_folder(cfg.init_from)
    if not (src / "snapshot.json").is_file():
        return {}
    snap = json.loads((src / "snapshot.json").read_text())
    recipe = next((name for name, r in RECIPES.items() if trainer.same_config(snap["config"], r)), None)
    return {"init_snapshot": {**snap, "recipe": recipe, "model_config": json.loads((src / "config.json").read_text())}}


def finish(run: Run) -> Path:
    """The final model (safetensors + config; the tokenizer is there already) and training.json."""
    record = {"config": dataclasses.asdict(run.cfg), "train_seconds": round(run.seconds, 1), "device": run.device.type,
              "loss_history": run.history, **({"heldout_plays": HELDOUT} if run.cfg.data == "plays" else {}),
              **start_record(run.cfg)}
    return trainer.save_model(run.model.cpu(), run.out, record)


def snapshot(run: Run) -> Path:
    """The model as it is at run.step, into run.out/step-N/ (`trainer.snapshot`): a curve's point."""
    return trainer.snapshot(run.model, run.out, run, run.cfg)


def train(cfg: TrainConfig, out: str | Path, *, progress: bool = True, log=print,
          device: str | torch.device = "cpu", keep_steps=(), stop_at: int | None = None) -> Path:
    """Train into `out`; resume from `out/ckpt.pt` when present. Returns the folder of the final
    model (safetensors + config + tokenizer), loadable with `labkit.load(out)`. `device` ("cuda")
    runs the same recipe on a GPU: batches and noise are drawn on the CPU as before, so only the
    arithmetic moves (its results differ from the CPU's in the last bits, not in kind).
    `keep_steps`: steps at which a copy of the model is kept in out/step-N/ (`snapshot`; a training
    curve). `stop_at`: stop after that many steps with a checkpoint (the schedule is still the
    recipe's: a later call resumes it); returns the checkpoint's folder, and no final model."""
    keep = sorted({int(k) for k in keep_steps})
    if any(k < 1 or k > cfg.steps for k in keep):
        raise ValueError(f"keep_steps must be steps in 1..{cfg.steps}, got {list(keep_steps)}")
    if stop_at is not None and not 1 <= stop_at <= cfg.steps:
        raise ValueError(f"stop_at must be a step in 1..{cfg.steps}, got {stop_at}")
    end = cfg.steps if stop_at is None else stop_at
    run = setup(cfg, out, log, device)
    ema = None                                     # the running mean of the loss (this call's steps)

    def after(loss: float) -> None:
        nonlocal ema
        ema = loss if ema is None else (1 - LOSS_EMA_NEW) * ema + LOSS_EMA_NEW * loss
        if run.step % HISTORY_EVERY == 0:
            run.history.append((run.step, round(ema, 4)))
        if run.step in keep:
            snapshot(run)

    trainer.fit(run, end, lambda: train_step(run), after=after, checkpoint=lambda: save_checkpoint(run),
                ckpt_every=cfg.ckpt_every, final=cfg.steps, progress=progress, desc=f"train {cfg.objective}",
                postfix=lambda _: {"loss": f"{ema:.3f}", "lr": f"{lr_at(cfg, run.step - 1):.1e}"})
    if run.step < cfg.steps:
        return run.out
    return finish(run)


__all__ = ["ADAM_BETAS", "CHECKPOINT", "DRAFTS", "HISTORY_EVERY", "LOSS_EMA_NEW", "RECIPES", "build_model", "draft_rows",
           "distill_loss",
           "distill_rows", "finish", "init_folder", "load_or_make_tokenizer", "lr_at", "make_optimizer", "resume",
           "Run", "save_checkpoint", "setup", "snapshot", "start_record", "step_loss", "task_loss", "train", "train_step",
           "TrainConfig"]
