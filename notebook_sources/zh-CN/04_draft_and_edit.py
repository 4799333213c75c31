# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% tags=["zh-setup"]
# 中文版：代码与英文版逐格相同，输出也相同。这一格把内核移到上一级目录 notebooks/，
# 英文版代码里的相对路径（../benchmarks/results）从那里才成立。
import os
if os.path.basename(os.getcwd()) == "zh-CN":
    os.chdir("..")

# %% [markdown]
# # 04 · Draft and edit: can a diffusion LM fix what it already wrote?（草稿—编辑：扩散语言模型能修正自己已经写下的内容吗？）
#
# *阅读并运行约 20 分钟，不含练习 · 前置：notebook 03（并行解码） · 下一步：notebook 11（扩散模型在哪里胜出）。*
#
# **问题：** 掩码扩散模型落定（commit，即 unmask，去掩码）一个 token 之后就再也不回头看。LLaDA2.1 加上了**编辑**：除了把概率高于 `threshold` 的掩码落定（掩码 → token，**M2T**）之外，当模型现在更倾向于另一个 token、且概率高于 `editing_threshold` 时，每一步还可以改写画布上已有的 token（token → token，**T2T**）。一个块填满之后仍继续迭代，直到某一步什么都没有改变，最多再走 `max_post_steps` 步。LLaDA2.1 的模型卡给出了两个预设，S 模式（极速模式）和 Q 模式（质量模式）：
#
# | 模式 | threshold | editing_threshold | max_post_steps |
# |---|---|---|---|
# | S（极速） | 0.5 | 0.0 | 16 |
# | Q（质量） | 0.7 | 0.5 | 16 |
#
# 编辑需要专门为它训练过的模型：普通的掩码扩散模型从来没有在已经填好的位置上训练过，所以它在那些位置上的候选只是噪声。`tiny-cap` 训练时还加了 T2T 噪声（可见 token 中有 20% 被换成别的 token，要模型改回来；其中一半是相邻 token 的复制，正是并行草稿会造成的那种冲突），所以本 notebook 使用它。

# %%
# Parameters: CI runs this notebook on a CPU with these values.
MODEL, AR_MODEL = "tiny-cap", "tiny-ar"
PROMPT = "MACBETH:\n"
import json, pathlib
import labkit as lk
from labkit.bench import draft_edit
from labkit.bench.samplers import per_prompt, run_one
from labkit.eval.evaluate import sample_prompts
from labkit.eval.intervals import paired_ratio
from labkit.eval.metrics import gen_ppl
lk.viz.notebook_mode()
lm, ar = lk.load(MODEL), lk.load(AR_MODEL)
KW = dict(gen_length=128, block_length=32, steps=128)
RESULTS = pathlib.Path("..") / "benchmarks" / "results"
SAVED = json.loads((RESULTS / "draft_edit.json").read_text())     # `labkit bench draft-edit`: the sweeps below

# %% [markdown]
# ## S and Q mode side by side（S 模式与 Q 模式并排对比）

# %%
# NBVAL_CHECK_OUTPUT
runs = {"S": lk.DraftEdit.speed(), "Q": lk.DraftEdit.quality()}
outs = {}
for mode, rule in runs.items():
    out = outs[mode] = lk.generate(lm, PROMPT, rule, **KW)
    tr = out.trace
    print(f"--- {mode} mode: NFE {out.stats['nfe']}, TPF {out.stats['tpf']:.2f}, "
          f"commits {int(tr.committed().sum())}, edits {int(tr.edits().sum())}")
    print(PROMPT + out.text)


# %% [markdown]
# 两种模式每次前向都写下 4 到 5 个 token 的草稿。文本和它的教师模型的贪心解码一样重复（`No, no, no` 一遍又一遍：一个 5M 参数模型的贪心解码会陷入循环），只在并行草稿发生冲突的地方略有断裂（`no more more`，以及 S 模式中一个说话人的名字连写了两次，`CRESSIDA` / `CRESSIDA:`）。编辑要修复的正是这些冲突。Q 模式的阈值更高，冲突也更少：它在上面的这次运行中两种冲突都没有，每次前向 4.13 个 token，S 模式是 4.92 个；编辑 8 次，S 模式是 35 次。
#
# ## Real edit events（真实的编辑事件）
#
# S 模式这次运行中的每一次 T2T 编辑：所在的步、在回答中的位置、原来的 token 和替换它的 token，以及模型给新 token 的概率。留意那些 p 较低的编辑（p 在 0.2 到 0.6 之间）：在 `editing_threshold=0.0` 下，S 模式允许任何不同的候选覆盖一个 token，这正是 Q 模式的 0.5 所要防范的。（LLaDA2.1 的模型卡提醒，低阈值可能导致“重复”（stuttering），即 n-gram 反复出现。）在从未训练过编辑的普通 `tiny` 模型上，S 模式每次前向只落定 0.77 个 token，不到一个，gen-PPL 为 1651：这是 notebook 03 保存的基准表中 `tiny` 的 `draft_edit_speed` 一行；下面的练习 2 会运行它并打印它的编辑。

# %%
# NBVAL_CHECK_OUTPUT
def edit_events(out, model=lm):
    tr, P = out.trace, out.trace.prompt_len
    before = tr.init.long()
    events = []
    for rec in tr:
        for pos in rec.edited[0].nonzero().flatten().tolist():
            old, new = model.token_strings([before[0, pos], rec.tokens[0, pos]])
            events.append((rec.step, pos - P, old, new, round(float(rec.confidence[0, pos]), 2)))
        before = rec.tokens.long()
    return events
ev = edit_events(outs["S"])
print(len(ev), "edits; the first ten (step, position, old → new, p):")
for step, pos, old, new, p in ev[:10]:
    print(f"  step {step:>3}  pos {pos:>3}  {old!r} → {new!r}  p={p}")

# %% [markdown]
# **编辑热力图**标出每一次改写（步 × 位置）；旁边的状态热力图显示每个块的收尾步从哪里开始（没有新落定的那些行）。

# %%
# NBVAL_IGNORE_OUTPUT
lk.viz.heatmap(outs["S"].trace, lm, kind="edits")

# %%
# NBVAL_IGNORE_OUTPUT
first_edit = ev[0][0] if ev else 0
lk.viz.token_grid(outs["S"].trace, lm, step=first_edit)

# %% [markdown]
# ## A readable correction（一次看得懂的修正）
#
# 上面的编辑是在草稿进行中把一个子词片段换成另一个，很难读成“改正了一个错误”。要找到看得懂的修正，就把每个块的 **草稿**（它最后一个掩码被落定的那一步的画布）和它的**最终**文本（收尾步之后）逐词比较。如果草稿里有一个训练用的剧本从不使用的词（或者连写两次的词），而最终文本里只有剧本用过的词，被替换的这一段就算一次*看得懂的修正*（`labkit.eval.corrections.corrections`）。搜索在 12 个留出提示词上用 3 个种子运行 S 模式（种子 0 为贪心，种子 1 和 2 以温度 0.8 采样；64 个 token，块长度 32）。它的 36 次运行由 `labkit bench draft-edit` 保存（`benchmarks/results/draft_edit.json`）；下面的单元格用种子 0 在前 2 个提示词上现场运行同样的代码，检查它在这里找到的修正与保存的搜索相同，并列出完整搜索中的每一处修正。

# %%
# NBVAL_CHECK_OUTPUT
from labkit.eval.corrections import corrections
SEARCH = dict(gen_length=64, block_length=32, steps=64)
search_prompts = sample_prompts(12)
rules = {seed: lk.DraftEdit.speed(temperature=0.0 if seed == 0 else 0.8) for seed in range(3)}
found = []                                              # (seed, prompt index, Correction)
for seed in (0,):                                       # live: seed 0 on the first 2 prompts (the saved run: all 36)
    for i, p in enumerate(search_prompts[:2]):
        out = lk.generate(lm, p, rules[seed], seed=seed, **SEARCH)
        found += [(seed, i, c) for c in corrections(out, lm, SEARCH["block_length"])]
print(f"live, seed 0, prompts 0-1: {len(found)} readable corrections")
for seed, i, c in found:
    print(f"  seed {seed}  prompt {i:>2}  block {c.block}  {c.before!r} → {c.after!r}  ({c.why})")
saved = SAVED["corrections"]["found"]
same = [(s, i, c.before, c.after) for s, i, c in found] == \
    [(f["seed"], f["prompt"], f["before"], f["after"]) for f in saved if f["seed"] == 0 and f["prompt"] < 2]
print("the same as the saved search's:", same)
print("\nthe saved search:")
print(draft_edit.corrections_table(SAVED))

# %% [markdown]
# 拼写错误最长的那一处，重新运行一次：它所在的块刚写完草稿时和完成时的样子，以及收尾步在这个块里做的每一次编辑（步、在回答中的位置、旧片段 → 新片段、p）。

# %%
# NBVAL_CHECK_OUTPUT
import re
longest = max(saved, key=lambda f: len(f["before"]))             # the first of the longest
seed, i = longest["seed"], longest["prompt"]
run = lk.generate(lm, search_prompts[i], rules[seed], seed=seed, **SEARCH)
best = next(c for c in corrections(run, lm, SEARCH["block_length"]) if c.before == longest["before"])
lo = best.block * SEARCH["block_length"]
fix = [e for e in edit_events(run) if lo <= e[1] < lo + SEARCH["block_length"] and e[0] > best.draft_step]
mark = lambda text, span: re.sub(r"\s*".join(map(re.escape, span.split())), lambda m: f"[{m.group()}]", text, count=1)
print(f"seed {seed}, prompt {i} (…{search_prompts[i][-40:]!r}), block {best.block}, full at step {best.draft_step}")
print("draft:", repr(mark(best.draft, best.before)))
print("final:", repr(mark(best.final, best.after)))
for step, pos, old, new, p in fix:
    print(f"  step {step:>3}  pos {pos:>3}  {old!r} → {new!r}  p={p}")

# %%
# NBVAL_IGNORE_OUTPUT
import matplotlib.pyplot as plt
fig, (ax_map, ax_text) = plt.subplots(1, 2, figsize=(11, 4), layout="constrained", width_ratios=(1.3, 1))
lk.viz.heatmap_matplotlib(run.trace, lm, kind="edits", ax=ax_map)
ax_map.axvspan(lo - 0.5, lo + SEARCH["block_length"] - 0.5, color="gold", alpha=0.15)
ax_map.axhline(best.draft_step + 0.5, color="black", lw=0.8, ls="--")       # the block is full below it
ax_map.set_title(f"edits (block {best.block} shaded; dashed: block full)")
ax_text.axis("off")
for y, (label, text, colour) in zip((0.95, 0.45), (("draft", mark(best.draft, best.before), "firebrick"),
                                                    ("final", mark(best.final, best.after), "darkgreen"))):
    ax_text.text(0, y, label, fontweight="bold", color=colour, va="top", transform=ax_text.transAxes)
    ax_text.text(0, y - 0.07, text, family="monospace", fontsize=9, va="top", transform=ax_text.transAxes)
plt.close(fig)
fig

# %% [markdown]
# 搜索在 36 次运行中找到了 13 处看得懂的修正，其中 7 处在说话人的名字里，一个片段写错了一眼就能看出来。最长的一处来自提示词 1 的贪心运行：它的第一个块在第 3 步就填满了，下一个说话人的名字是 `OMERINIUS`，剧本里从没有这个名字。在收尾步中，S 模式改写了两个片段，先是 `'OM'` → `'C'`（p 0.71），然后是 `'ER'` → `'OM'`（p 0.79），名字变成了 `COMINIUS`，模型在训练中见过的一个说话人；块里别的都没有变。这正是 T2T 的用途：草稿的各个片段是并排落定的，每个片段在周围还是掩码时置信度都足够高；只有等整个名字都出现在画布上，模型才更倾向于另一个开头片段。这份列表也显示了这项检验的局限：逐词比较能抓住拼写错误和连写两次的词，却抓不住用错了但确实存在的词。

# %% [markdown]
# ## Does it help? Editing and multi-block editing on several prompts（有用吗？在多个提示词上比较编辑与多块编辑）
#
# 多块编辑（MBE，multi-block editing）让 T2T 也能改写前一个块，但只在高于它自己的阈值（0.9）时，并且每步最多改一个 token（见 `labkit/samplers/draft_edit.py`）。我们在同样的 6 个留出提示词上比较有它和没有它时的 gen-PPL、TPF（每次前向写下的 token 数）和 distinct-2，并与完全不编辑（相同 τ 的阈值解码）对比（结果由 `labkit bench draft-edit` 保存；单元格在前 2 个提示词上现场运行其中两条规则）。gen-PPL 要和 distinct-2 一起读：循环的文本（或大部分是空行的文本）很容易预测，所以 gen-PPL 低而 distinct-2 也低，并不说明流畅。

# %%
# NBVAL_CHECK_OUTPUT
prompts = sample_prompts(6)
rules = {"threshold 0.5 (no edits)": lk.Threshold(threshold=0.5), "S": lk.DraftEdit.speed(),
         "S + MBE": lk.DraftEdit.speed(mbe_blocks=1), "threshold 0.7 (no edits)": lk.Threshold(threshold=0.7),
         "Q": lk.DraftEdit.quality(), "Q + MBE": lk.DraftEdit.quality(mbe_blocks=1)}
print("live, the first 2 prompts:")
for name in ("threshold 0.5 (no edits)", "S"):
    row, texts = run_one(lm, rules[name], prompts[:2], steps=128, gen_length=128, block_length=32, tps_prompts=0)
    print(f"{name:<26} NFE {row['nfe']:6.1f}  TPF {row['tpf']:.2f}  gen-PPL {gen_ppl(ar, prompts[:2], texts):6.2f}"
          f"  distinct-2 {row['distinct_2']:.3f}")
print(f"\nsaved, all {SAVED['prompts']} prompts:")
print(draft_edit.modes_table(SAVED))
cap96 = json.loads((RESULTS / "samplers.json").read_text())["cap"]
print("\ngen-PPL ratios on the same prompts, 95% bootstrap interval (1 inside = within noise):")
for n, res, a, b in ((6, SAVED["modes"], "threshold 0.5 (no edits)", "S"), (6, SAVED["modes"], "threshold 0.7 (no edits)", "Q"),
                     (6, SAVED["modes"], "S + MBE", "S"), (6, SAVED["modes"], "Q + MBE", "Q"),
                     (96, cap96, "draft_edit_speed_mbe", "draft_edit_speed"), (96, cap96, "draft_edit_quality_mbe", "draft_edit_quality")):
    r, lo, hi = paired_ratio(per_prompt(res[a]), per_prompt(res[b]))
    print(f"  {n:>2} prompts  {a} / {b}: {r:.3f} [{lo:.3f}, {hi:.3f}]")

# %% [markdown]
# 编辑让低阈值变得可用。在保存的运行中，τ 0.5 不编辑时 gen-PPL 为 35.9；S 模式以同样的 τ 落定并加上编辑，gen-PPL 降到 6.6，每次前向 5.8 个 token。Q 模式与单用 τ 0.7 相比：6.6 对 13.4，每次前向 4.0 个 token，而不是 5.1 个。即使只有 6 个提示词，这两个差距也超出噪声：单用 τ 0.5 的 gen-PPL 是 S 模式的 5.478 [3.388, 9.032] 倍，单用 τ 0.7 是 Q 模式的 2.021 [1.541, 2.978] 倍。
#
# 多块编辑在这些提示词上把 S 模式的 gen-PPL 从 6.56 变为 6.36（每次前向 5.9 个 token 对 5.8 个），比值 0.970 [0.913, 1.000]：在噪声之内。对 Q 模式则毫无改变：数字到最后一位都相同，说明 Q 模式对前面的块提出的候选没有一个越过 0.9 这道门槛。在 96 个提示词的基准上（`benchmarks/results/samplers.json`，`cap`），它把 S 模式的 gen-PPL 从 7.38 变为 7.36，Q 模式的从 6.62 变为 6.59，每次前向的 token 数相差不到 0.01：两者都在噪声之内（0.997 [0.991, 1.001] 和 0.996 [0.986, 1.003]）。一个用自己的贪心回答蒸馏出来的模型，很少会以 p > 0.9 改变对一个已完成的块的判断。

# %% [markdown]
# ## The spectrum between S and Q: a sweep of both thresholds（S 与 Q 之间的连续谱：同时扫描两个阈值）
#
# LLaDA2.1 把 S 和 Q 说成同一个旋钮的两个档位，而不是两种算法：掩码阈值 τ_M2T 决定一个草稿 token 要有多高的置信度才能落定，编辑阈值 τ_T2T 决定模型对另一个 token 要有多高的置信度才会改写已写的 token。S 模式是 τ_M2T 0.5 / τ_T2T 0.0，Q 模式是 0.7 / 0.5。`labkit bench draft-edit` 在同样的 6 个提示词上（128 个 token，块长度 32）扫描了这两个阈值：画出每次前向的 token 数对 gen-PPL，每个编辑阈值一条线，并在网格上标出 S 和 Q。单元格在前 2 个提示词上现场运行网格中的两个点，然后打印保存的网格。

# %%
# NBVAL_CHECK_OUTPUT
M2T, T2T = (0.3, 0.5, 0.7, 0.9), (0.0, 0.5, 0.9)
for m2t, t2t in ((0.3, 0.9), (0.7, 0.9)):                     # live: two points, the first 2 prompts
    rule = lk.DraftEdit(threshold=m2t, editing_threshold=t2t)
    row, texts = run_one(lm, rule, prompts[:2], steps=128, gen_length=128, block_length=32, tps_prompts=0)
    print(f"live, 2 prompts: tau M2T {m2t} tau T2T {t2t}: TPF {row['tpf']:.2f}, gen-PPL {gen_ppl(ar, prompts[:2], texts):.2f}")
sweep = {(s["m2t"], s["t2t"]): (s["tpf"], s["gen_ppl"]) for s in SAVED["sweep"]}    # (τ_M2T, τ_T2T) → (TPF, gen-PPL)
print(f"\nsaved, all {SAVED['prompts']} prompts:")
print(draft_edit.sweep_table(SAVED))

# %%
# NBVAL_IGNORE_OUTPUT
import matplotlib.pyplot as plt
fig, ax = plt.subplots(figsize=(6, 3.8), layout="constrained")
for t2t in T2T:
    pts = [sweep[m2t, t2t] for m2t in M2T]
    ax.plot(*zip(*pts), "o-", label=f"τ_T2T {t2t}")
    for m2t, (x, y) in zip(M2T, pts):
        ax.annotate(f"{m2t}", (x, y), textcoords="offset points", xytext=(4, 4), fontsize=8)
for name, key in (("S", (0.5, 0.0)), ("Q", (0.7, 0.5))):
    ax.scatter(*sweep[key], s=220, facecolors="none", edgecolors="black")
    ax.annotate(f"{name} mode", sweep[key], textcoords="offset points", xytext=(8, -14), fontweight="bold")
ax.set(xlabel="tokens per forward pass (TPF)", ylabel="gen-PPL (AR twin)", yscale="log",
       title="tiny-cap: mask threshold (labels) × editing threshold (lines)")
ax.legend(); ax.grid(alpha=0.3)
plt.close(fig)
fig

# %% [markdown]
# 把这几条线相互对照着读。编辑很少时（τ_T2T 0.9），低掩码阈值又快又差（最右边的点也是最高的），提高 τ_M2T 就是用速度换质量。允许在任意置信度下编辑时（τ_T2T 0.0，S 模式那条线），gen-PPL 在每个掩码阈值下都保持很低：编辑修复了草稿写错的地方；而在最低的 τ_M2T 下，编辑要额外花很多次前向，TPF 又降了下来。S 和 Q 只是这个曲面上的两个点，其他任何一点都只差一个 `lk.DraftEdit(threshold=..., editing_threshold=...)`；面板（notebook 05）上两个滑块都有。

# %% [markdown]
# Where do S and Q sit on it?（S 和 Q 在网格上处于什么位置？）下面的单元格从网格中读出两者，以及 gen-PPL 最低的点，并给出 notebook 03 那个 96 个提示词的基准（`benchmarks/results/samplers.json`）中同样两种模式的结果。

# %%
# NBVAL_CHECK_OUTPUT
s, q = sweep[0.5, 0.0], sweep[0.7, 0.5]
low = min(sweep, key=lambda k: sweep[k][1])
print(f"{SAVED['prompts']} prompts: S mode TPF {s[0]:.2f}, gen-PPL {s[1]:.2f} | Q mode TPF {q[0]:.2f}, gen-PPL {q[1]:.2f}"
      f" | faster: {'S' if s[0] > q[0] else 'Q'}, lower gen-PPL: {'S' if s[1] < q[1] else 'Q'}")
print(f"  lowest gen-PPL of the grid: tau M2T {low[0]} / tau T2T {low[1]}, TPF {sweep[low][0]:.2f}, gen-PPL {sweep[low][1]:.2f}")
bench = json.loads((RESULTS / "samplers.json").read_text())["cap"]
s96, q96 = bench["draft_edit_speed"], bench["draft_edit_quality"]
print(f"{s96['prompts']} prompts: S mode TPF {s96['tpf']:.2f}, gen-PPL {s96['gen_ppl']:.2f} | Q mode TPF {q96['tpf']:.2f}, "
      f"gen-PPL {q96['gen_ppl']:.2f} | faster: {'S' if s96['tpf'] > q96['tpf'] else 'Q'}, "
      f"lower gen-PPL: {'S' if s96['gen_ppl'] < q96['gen_ppl'] else 'Q'}")
by_point = {(r["m2t"], r["t2t"]): r for r in SAVED["sweep"]}
for n, (srow, qrow) in ((SAVED["prompts"], (by_point[0.5, 0.0], by_point[0.7, 0.5])), (s96["prompts"], (s96, q96))):
    r, lo, hi = paired_ratio(per_prompt(srow), per_prompt(qrow))      # the same prompts, resampled together
    print(f"{n} prompts: gen-PPL S / Q {r:.3f}, 95% interval [{lo:.3f}, {hi:.3f}] -> "
          + ("within noise" if lo <= 1 <= hi else "S lower" if hi < 1 else "Q lower"))

# %% [markdown]
# 在这 6 个提示词上，S 模式是两者中更快的（每次前向 5.77 个 token 对 3.98 个），gen-PPL 也略低（6.56 对 6.61），但在噪声之内：S 与 Q 之比 0.992 [0.793, 1.160]。τ_M2T 0.7 / τ_T2T 0.9 是整个网格中 gen-PPL 最低的（6.06），每次前向 4.17 个 token：比 Q 模式快，比 S 模式慢；只有 6 个提示词，它与两个预设都分不开。“S 更快、Q 更好”这个 LLaDA2.1 给出的排序，要在 notebook 03 基准的 96 个提示词上才看得到（S 模式 gen-PPL 7.38，Q 模式 6.62：S 与 Q 之比 1.116 [1.028, 1.217]，超出噪声），在这 6 个提示词上看不到。在这么小的模型上，哪个预设读起来更好取决于提示词；网格告诉你该往哪里看。

# %% [markdown]
# ## Exercises（练习）
#
# 每道题的参考答案就在它下面：先在一个新单元格里自己试一试。
#
# **1.** 在 `PROMPT` 上用 `editing_threshold=0.9` 运行 S 模式（`lk.DraftEdit.speed(editing_threshold=0.9)`）：它做了多少次编辑，其中置信度最低的一次是多少，冲突又怎样了？

# %% tags=["solution"]
# Solution
# NBVAL_CHECK_OUTPUT
sure = lk.generate(lm, PROMPT, lk.DraftEdit.speed(editing_threshold=0.9), **KW)
for name, o in (("S mode", outs["S"]), ("S, editing_threshold 0.9", sure)):
    ps = [p for *_, p in edit_events(o)]
    print(f"{name:<25} NFE {o.stats['nfe']}, TPF {o.stats['tpf']:.2f}, {len(ps)} edits, "
          f"the least sure at p={min(ps, default=float('nan'))}")
print(PROMPT + sure.text)

# %% [markdown]
# **2.** 在从未训练过编辑的普通 `tiny` 模型上运行 S 模式：它的编辑是什么样的？

# %% tags=["solution"]
# Solution
# NBVAL_CHECK_OUTPUT
plain = lk.load("tiny")                        # the same tokenizer as tiny-cap
o = lk.generate(plain, PROMPT, lk.DraftEdit.speed(), **SEARCH)          # 64 tokens, to keep it quick
ev_plain = edit_events(o, plain)
print(f"tiny, S mode, 64 tokens: NFE {o.stats['nfe']}, TPF {o.stats['tpf']:.2f}, {len(ev_plain)} edits; the first ten:")
for step, pos, old, new, p in ev_plain[:10]:
    print(f"  step {step:>3}  pos {pos:>3}  {old!r} → {new!r}  p={p}")
print(PROMPT + o.text)


# %% [markdown]
# **3.** 让多块编辑够得更远（`mbe_blocks=3`，`mbe_threshold=0.7`），在 `PROMPT` 和第一个留出提示词上，数一数落在正在起草的块之前的那些块里的编辑；然后在编辑热力图中找到它们。

# %% tags=["solution"]
# Solution
# NBVAL_CHECK_OUTPUT
def earlier_block_edits(out, row=0, block=32):
    """Edits to a block before the one the latest commit went to: what only MBE may do."""
    tr, P = out.trace, out.trace.prompt_len
    committed, edits = tr.committed()[:, row, P:], tr.edits()[:, row, P:]
    current, n = 0, 0
    for step in range(len(committed)):
        if committed[step].any():
            current = int(committed[step].nonzero().max()) // block
        n += sum(int(pos) // block < current for pos in edits[step].nonzero().flatten())
    return n
print("S mode, edits into an earlier block (PROMPT, held-out prompt 0):")
for name, r in (("MBE: 1 block, p > 0.9", lk.DraftEdit.speed(mbe_blocks=1)),
                ("MBE: 3 blocks, p > 0.7", lk.DraftEdit.speed(mbe_blocks=3, mbe_threshold=0.7))):
    reach = lk.generate(lm, [PROMPT, prompts[0]], r, **KW)              # each row decodes as it would alone
    print(f"  {name:<23} {earlier_block_edits(reach, 0)}, {earlier_block_edits(reach, 1)}")

# %% tags=["solution"]
# NBVAL_IGNORE_OUTPUT
# Solution (continued)
lk.viz.heatmap(reach.trace, lm, kind="edits", row=1)       # held-out prompt 0, 3 blocks at p > 0.7
