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
# # 11 · Where diffusion wins, measured exactly（扩散模型在哪里胜出：精确的测量）
#
# *阅读并运行约 30 分钟，不含练习 · 前置：notebook 04（草稿—编辑） · 下一步：notebook 12（奖励）。*
#
# **问题：** 在莎士比亚文本上，小型扩散语言模型只在文本重复的地方置信度高，所以并行解码看起来像是取巧。
# 但在只有一个正确答案的任务上，研究给出的结论不同：模型填满画布的*顺序*决定了它能解出多少数独
# （Kim et al., ICML 2025，在 9×9 数独上：掩码模型随机顺序为 6.9%，按最高概率差（margin）的顺序为 89.5%；AR 模型
# 从左到右为 9.7%，训练成按逻辑求解器的顺序写格子时约为 87%）；
# 掩码模型可以被反向提问一个事实（Kitouni et al. 2024；LLaDA 反向补全诗句）；由提示词完全确定的答案可以在一次
# 前向传播中写完。在这里，你会在本项目训练并随附的小模型上逐一测量这几点，**每个任务一对模型**，每对都按该任务
# 的学习方式训练：
#
# | 任务 | 掩码扩散模型 | 它的 AR 孪生模型 | 各位置知道什么 |
# |---|---|---|---|
# | 6×6 数独 | `tiny-sudoku`：画布*就是*网格 | `tiny-sudoku-ar`：先是题目，再是解 | 格子所在的行、列和宫 |
# | 数独的第三个模型 | | `tiny-sudoku-ar-solver`：先是题目，再是（格子，数字）步骤 | 只有题目的格子 |
# | 事实 `A>B`，以及镜像 | `tiny-facts` | `tiny-facts-ar` | 自己的位置 |
# | 加法，高位在前 | `tiny-add` | `tiny-add-ar` | 每一位数字的位值 |
#
# 孪生模型的结构、参数量、数据、批大小和训练步数都相同；它预测的是下一个 token，而不是被掩码的 token。
# 数独还有第三个模型：第二个 AR 孪生模型，它写每个格子时先写格子的名字（`b4` = 第 2 格填 4），按一个总是先填
# 被唯一确定的格子的求解器的顺序来写。
# 下文用到的术语：
#
# - **画布**（canvas）：回答所在的位置，开始时全是掩码；**落定（commit，即 unmask，去掩码）**：把一个掩码换成一个 token；
# - **解码顺序**：规则下一个落定哪个被掩码的位置：随机、**从左到右**（AR 的顺序）、**置信度**最高（低置信度重掩码）、
#   两个最可能 token 之间的 **margin**（概率差）最大；
# - **并行规则**每次前向传播落定多个位置（置信度**阈值**、**factor**）；LLaDA2.1 的 **S** 模式（极速模式）和 **Q** 模式
#   （质量模式）还会**编辑**已经写下的 token；**NFE**（前向次数）= 前向传播的次数，**TPF**（每次前向写下的 token 数）=
#   每次前向传播写下的回答 token 数；
# - **精确匹配**：整个答案完全正确；每个准确率都附 **95% 区间**（Wilson）。
#
# 表格来自 `benchmarks/results/tasks.json`（`labkit bench tasks`：每一道留出题目、每一条规则）和 `task_seeds.json`
# （数独这对模型用三个种子分别训练）；现场单元格用仓库里随附的模型解码，只需几秒。每道题都是**留出**的：它的解网格、
# 和或镜像字符串从未被训练过（事实是有意的例外：问题问的是训练过的事实，只是换了方向）。

# %%
# NBVAL_CHECK_OUTPUT
# Parameters
import json
import sys
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import torch

import labkit as lk
from labkit.bench import task_tables as tables
from labkit.bench import tasks as bench
from labkit.eval.exact import edit_outcomes, wilson
from labkit.eval.intervals import overlap
from labkit.models.load import model_folder
from labkit.tasks import addition, heldout, mirror, reversal, sudoku

sys.path.insert(0, "../benchmarks")      # benchmarks/docgen: docs/models.md's tables, printed here too
from docgen import tasks as doc_tables

SEED = 0
LIVE = 50                      # held-out items per live cell below (the tables use every item)
RESULTS = Path("../benchmarks/results")
result = json.loads((RESULTS / "tasks.json").read_text())       # labkit bench tasks
seeds = json.loads((RESULTS / "task_seeds.json").read_text())   # labkit bench task-seeds
models, records = {}, {}
for masked, twin, tasks in bench.PAIRS.values():
    for name in (masked, twin):
        models[name] = lk.load(name)
        records[name] = json.loads((model_folder(name) / "training.json").read_text())
        cfg = records[name]["config"]
        params = sum(p.numel() for p in models[name].net.parameters())
        print(f"{name:<15} {models[name].kind:<7} {params / 1e6:.2f}M parameters · {', '.join(tasks):<16} · "
              f"{cfg['steps']} steps x {cfg['batch_size']} rows · {records[name]['train_seconds'] / 60:.0f} min of "
              "training on one thread")

# %% [markdown]
# ## 1 · Sudoku: the order of decoding（数独：解码的顺序）
#
# 6×6 数独（数字 1–6；每一行、每一列和每个 2×3 宫都恰好包含每个数字一次）按行依次写成 36 个格子，空格写作 `.`。
# `lk.generate(lk.load("tiny-sudoku"), puzzle)` 把题目铺在画布上：提示数固定在各自的格子里，空格被掩码，规则随着一次次
# 前向传播把空格填上。AR 孪生模型读入同样的 36 个字符，然后在其后从左到右写出解的 36 个数字，这是它唯一的顺序。
# 每道留出题目都恰好有一个解；**难**题有 10–12 个提示数。
#
# 前 `LIVE` 道难题：用同一组掩码模型权重按四种顺序解，再用 AR 孪生模型解：

# %%
# NBVAL_CHECK_OUTPUT
sd, sd_ar = models["tiny-sudoku"], models["tiny-sudoku-ar"]
hard = [it for it in heldout("sudoku") if it.group == "hard"][:LIVE]
puzzles = [it.prompt[1:-1] for it in hard]                       # 36 cells, '.' = blank
print("the first:", puzzles[0])
print(sudoku.format_grid(puzzles[0]))
ORDERS = {"random order": "random", "left to right": "left_to_right", "low-confidence": "low_confidence",
          "margin": lk.LowConfidence(score="margin")}
runs = {k: lk.generate(sd, puzzles, rule, seed=SEED) for k, rule in ORDERS.items()}
runs[bench.AR_LABEL] = lk.generate(sd_ar, puzzles, seed=SEED)
solved = {k: np.array([t == it.answer for t, it in zip(out.texts, hard)]) for k, out in runs.items()}
print()
for k, s in solved.items():
    print(f"{k:<24} solved {s.sum():>3} of {len(hard)} hard puzzles")


# %% [markdown]
# 为什么顺序影响这么大？在写下一个空格时，看看当时的网格（提示数以及在它之前写下的每个格子）：数独规则在那里还允许
# 多少个数字（它的**候选数字**）？它是否一步推理就能**确定**（只剩一个候选，或者某个数字在它所在的行、列或宫中没有
# 别的空格能填）？落定一个确定的格子是安全的；其余的都是猜测，而这些规则从不收回猜测。

# %%
# NBVAL_CHECK_OUTPUT
def commits(out, puzzles):
    """Per puzzle, one (candidates, forced, right) triple per blank, in the order the blanks were written."""
    P = out.trace.prompt_len
    steps = out.trace.commit_step()[:, P:P + sudoku.CELLS]                   # (B, 36), -1 for clues
    found = []
    for row, (p, it) in enumerate(zip(puzzles, hard)):
        grid, final = sudoku.decode_cells(p), sudoku.decode_cells(out.texts[row].ljust(sudoku.CELLS, "."))
        truth, mine = sudoku.decode_cells(it.answer), []
        for _, i in sorted((int(steps[row, i]), i) for i in range(sudoku.CELLS) if grid[i] == 0):
            mine.append((len(sudoku.candidates(grid, i)), sudoku.is_single(grid, i), final[i] == truth[i]))
            grid[i] = final[i]
        found.append(mine)
    return found

for k, out in runs.items():
    c = np.array([t for mine in commits(out, puzzles) for t in mine])      # (commits, 3)
    forced, right = c[:, 1].astype(bool), c[:, 2].astype(bool)
    print(f"{k:<24} {c[:, 0].mean():.2f} candidates per blank when written · {100 * forced.mean():4.1f}% forced · "
          f"guesses right {100 * right[~forced].mean():4.1f}%")

# %% [markdown]
# 完整地看一次运行：margin 顺序解出的第一道难题，每个格子按写下它的那一步着色（深色 = 早，白色 = 提示数），分别按
# margin 顺序和从左到右的顺序；下方是 margin 这次运行最初的几次落定，以及每个格子当时还剩的候选数字、它是否是确定的。
# 这条规则从没被告知数独的规则：打印结果显示它置信度最高的格子有多常是确定的格子。

# %%
# NBVAL_IGNORE_OUTPUT
pick = int(np.flatnonzero(solved["margin"])[0])
fig, axes = plt.subplots(1, 2, figsize=(8.5, 3.6), layout="constrained")
for ax, k in zip(axes, ("margin", "left to right")):
    lk.viz.commit_grid(runs[k].trace, sd, columns=sudoku.N, row=pick, ax=ax,
                       title=f"{k}: {'solved' if solved[k][pick] else 'not solved'}")
plt.close(fig)
fig

# %%
# NBVAL_CHECK_OUTPUT
first = commits(runs["margin"], puzzles)[pick]
steps = runs["margin"].trace.commit_step()[pick, runs["margin"].trace.prompt_len:]
order = sorted((int(s), i) for i, s in enumerate(steps.tolist()) if s >= 0)
print(f"puzzle {pick}: {len(order)} blanks; the first ten written:")
for (step, i), (n, forced, _) in list(zip(order, first))[:10]:
    print(f"  step {step:>2}: row {i // sudoku.N + 1}, column {i % sudoku.N + 1} <- {runs['margin'].texts[pick][i]}"
          f"  ({n} candidate{'s' if n > 1 else ''} left, {'forced' if forced else 'a guess'})")

# %% [markdown]
# 全部留出题目（简单题 17–20 个提示数，中等题 13–16 个，难题 10–12 个）和全部规则的结果，来自 `tasks.json`；
# 最后两行是两个 AR 孪生模型（按求解器顺序的，以及从左到右的）：

# %%
# NBVAL_CHECK_OUTPUT
print(tables.table(result, "sudoku", "sudoku"))

# %%
# NBVAL_CHECK_OUTPUT
acc = lambda label, group=None: tables.accuracy(result, "sudoku", label, "sudoku", group)["accuracy"]
best = tables.best_order(result, "sudoku", "sudoku")
for group in (None, "hard"):
    where = "hard puzzles" if group else "all puzzles"
    m, a, r = acc(best, group), acc(bench.AR_LABEL, group), acc("random order", group)
    print(f"{where}: {best} {100 * m:.1f}% · random order {100 * r:.1f}% (same weights) · AR twin {100 * a:.1f}% "
          f"-> the masked model is {'ahead of' if m > a else 'level with' if m == a else 'behind'} its twin")
print("\ntwo effects, apart (all puzzles · hard ones; percentage points):")
for what, (x, y) in (("objective: one order (left to right), masked weights - AR", ("left to right", bench.AR_LABEL)),
                     ("order, same masked weights: its best - left to right", (best, "left to right")),
                     ("order, AR trained in it: solver's order - left to right", (bench.SOLVER_LABEL, bench.AR_LABEL)),
                     ("what is left: masked, its own order - AR, solver's order", (best, bench.SOLVER_LABEL))):
    print(f"  {what:<58} " + " · ".join(f"{100 * acc(x, g):.1f} - {100 * acc(y, g):.1f} = {100 * (acc(x, g) - acc(y, g)):+.1f}"
                                         for g in (None, "hard")))

# %% [markdown]
# 读这四行：第一行是训练目标在领先中占的部分（两者顺序相同），第二行是在同一组掩码权重上顺序占的部分。第三行是已发表
# 的对照：一个被教会求解器顺序的 AR 模型。在孪生模型这样的规模和训练预算下，它在这里比从左到右只多出一点点，所以本实验
# 没有复现这个对照在 9×9 上的大幅回升（它与另外两个模型训练步数相同，而且它的步骤位置没有行、列、宫的嵌入：它要从格子
# 的名字学出每个格子的位置）。第四行是掩码模型自己选择的顺序仍然领先它的部分。

# %% [markdown]
# ## 2 · Draft and edit, where every edit can be checked（草稿—编辑：每一次编辑都能核对）
#
# `tiny-sudoku` 还被训练来**修复**已经写下的格子：训练时一些已写的格子被换成了错误的数字，模型也要学会在那里给出正确的
# 数字（就像 notebook 04 里为莎士比亚文本训练的 `tiny-cap`）。因此 LLaDA2.1 的草稿—编辑解码可以在它上面运行：
# **S 模式（极速模式）**一次落定置信度高于 0.5 的所有空格，并改写预测发生了变化的任何已写格子（编辑阈值 0）；
# **Q 模式（质量模式）**使用 0.7 和 0.5。在数独上，每一次编辑都可以核对：它是把错的格子改对了，还是把对的改错了？

# %%
# NBVAL_CHECK_OUTPUT
s_mode = lk.generate(sd, puzzles, "speed", seed=SEED)
P = s_mode.trace.prompt_len
truth = torch.tensor([sd.encode(it.answer) for it in hard])             # (B, 36) token ids of the solutions
outcomes = edit_outcomes(s_mode.trace, truth)
right = np.array([t == it.answer for t, it in zip(s_mode.texts, hard)])
blanks = sum(p.count(".") for p in puzzles)
print(f"S mode on the {len(hard)} hard puzzles: solved {right.sum()}, {blanks / s_mode.trace.row_nfe().sum().item():.2f} "
      f"cells per forward pass; edits fixed {sum(o['fixed'] for o in outcomes)} cells, broke "
      f"{sum(o['broke'] for o in outcomes)}, moved {sum(o['other'] for o in outcomes)} from one wrong digit to another")


# %% [markdown]
# 在网格上看一次修正了格子的编辑：编辑前一步的草稿（被编辑的格子已标出），以及这次编辑写下了什么。同一行、列或宫中
# 重复出现的数字是一个**冲突**：打印结果会说明草稿里的那个数字是否构成冲突。

# %%
# NBVAL_CHECK_OUTPUT
def conflicts(cells, i):
    return [j for j in sudoku.PEERS[i] if cells[j] == cells[i] and cells[i]]

fixed_rows = [b for b, o in enumerate(outcomes) if o["fixed"]]
row = next((b for b in fixed_rows if right[b]), fixed_rows[0])          # a solved one if there is one
edited = s_mode.trace.edited()[:, row, P:P + sudoku.CELLS]                       # (S, 36)
tokens = s_mode.trace.tokens()[:, row, P:P + sudoku.CELLS]
answer = sudoku.decode_cells(hard[row].answer)
for step in range(len(s_mode.trace)):
    before = (s_mode.trace.init[row, P:P + sudoku.CELLS] if step == 0 else tokens[step - 1]).tolist()
    fixes = [i for i in np.flatnonzero(edited[step].numpy()) if int(sd.decode([tokens[step, i]])) == answer[i]]
    if fixes:
        break
draft = "".join("." if t == sd.mask_id else sd.decode([t]) for t in before)   # masks as '.'
cells = sudoku.decode_cells(draft)
print(f"puzzle {row}, step {step}: the draft before the edit (the edited cell in brackets)")
for r in range(sudoku.N):
    print("  " + " ".join(f"[{draft[r * 6 + c]}]" if r * 6 + c in fixes else f" {draft[r * 6 + c]} "
                          for c in range(sudoku.N)))
for i in fixes:
    clash = conflicts(cells, i)
    print(f"row {i // 6 + 1}, column {i % 6 + 1}: {draft[i]} -> {answer[i]} (right); the drafted {draft[i]} "
          + (f"clashed with the same digit at {', '.join(f'r{j // 6 + 1}c{j % 6 + 1}' for j in clash)}"
             if clash else "clashed with no written digit: the model saw it would block the solution"))
print("final:", "solved" if s_mode.texts[row] == hard[row].answer else "not solved")

# %% [markdown]
# 全部留出题目上，每一条每次前向落定多个格子或会编辑的规则，以及编辑的效果（修好的格子 / 改坏的格子；`tasks.json`）。
# 把它们的解题比例和 TPF 与表格顶部那些每次前向只落定一个格子的顺序比较：

# %%
# NBVAL_CHECK_OUTPUT
print(doc_tables.markdown_pair(result, "sudoku"))

# %% [markdown]
# ## 3 · Addition: where the order does not matter, and what still fails（加法：顺序无关紧要的地方，以及仍然出错的地方）
#
# `12345+67890` 要求写出 6 位数的和 `080235`，先写最高位。最高位取决于它右边的每一个进位，最后一位只取决于两个加数的
# 最后一位，所以人们可能以为从左到右书写的模型会在长进位链上吃亏。`tiny-add` 和它的孪生模型都知道每一位数字的位值
# （两个加数以及和的个位共用同一个嵌入）。让掩码模型自己选择时，它会采用哪种顺序？顺序在这里有没有影响？错误出在哪里？

# %%
# NBVAL_CHECK_OUTPUT
ad, ad_ar = models["tiny-add"], models["tiny-add-ar"]
items = heldout("addition")[:2 * LIVE]
sums = [it.prompt[1:-1] for it in items]                         # "12345+67890"
n = addition.WIDTH + 1
add_runs = {k: lk.generate(ad, sums, rule, seed=SEED)
            for k, rule in (("low-confidence", "low_confidence"), ("left to right", "left_to_right"),
                            ("right to left", "right_to_left"))}
add_runs[bench.AR_LABEL] = lk.generate(ad_ar, sums, seed=SEED)
out = add_runs["low-confidence"]
order = out.trace.commit_step()[:, out.trace.prompt_len:].float().mean(0)
print("sum digit (1 = most significant)   " + " ".join(f"{i + 1:>5}" for i in range(n)))
print("mean step written, low-confidence  " + " ".join(f"{s:>5.2f}" for s in order.tolist()))
for k, o in add_runs.items():
    digits = np.array([[p == a for p, a in zip(t.ljust(n), it.answer)] for t, it in zip(o.texts, items)])
    print(f"{k:<24} digits right " + " ".join(f"{d:.2f}" for d in digits.mean(0))
          + f" · whole sum right {100 * digits.all(1).mean():.1f}%")

# %% [markdown]
# 逐步看一道加法（▢ = 仍被掩码），然后是全部留出的加法题，按最长进位链的长度分组（`tasks.json`）：

# %%
# NBVAL_CHECK_OUTPUT
print(sums[0], "=", items[0].answer)
lk.viz.token_grid_steps(add_runs["low-confidence"].trace, ad, row=0)

# %%
# NBVAL_CHECK_OUTPUT
print(doc_tables.markdown_pair(result, "add"))
one = [*bench.ONE_PER_STEP, bench.AR_LABEL]
worst = min(one, key=lambda k: tables.accuracy(result, "add", k, "addition")["accuracy"])
w = tables.accuracy(result, "add", worst, "addition")
print(f"\nevery one-token-per-step order and the AR twin: the lowest is {worst}, {100 * w['accuracy']:.1f}% "
      f"[{100 * w['ci95'][0]:.1f}, {100 * w['ci95'][1]:.1f}]")
for label in bench.EDIT_LABELS[:2]:
    pooled = {}
    for name, chains in (("chains 0-2", range(3)), ("chains 3-5", range(3, 6))):
        rows = [tables.accuracy(result, "add", label, "addition", f"carry {c}") for c in chains]
        right, n = sum(r["correct"] for r in rows), sum(r["n"] for r in rows)
        pooled[name] = (right / n, wilson(right, n))
    (a, ca), (b, cb) = pooled.values()
    print(f"{label}: chains 0-2 {100 * a:.1f}% [{100 * ca[0]:.1f}, {100 * ca[1]:.1f}] · chains 3-5 {100 * b:.1f}% "
          f"[{100 * cb[0]:.1f}, {100 * cb[1]:.1f}] -> {'within noise' if overlap(ca, cb) else 'apart'}")

# %% [markdown]
# 读表格下面的三行。让掩码模型自己选择时，它先写和的最高位（见上面每一位数字的平均写入步）：正是 AR 模型的顺序。
# 每一种每步一个 token 的顺序和 AR 孪生模型都答对了每一道留出的加法题，所以在这个规模下进位链并没有让从左到右变难。
# 顺序在数独上重要，因为很多格子要等别的格子写下后才被唯一确定；这里每一位都可以在一次前向传播中从两个加数算出来（阈值
# 规则一次写下全部六位，表中 TPF 6.00，而且都对）。唯一答错的是 S 模式和 Q 模式；长进位链是不是原因，最后一行给出答案。

# %% [markdown]
# ## 4 · Facts asked backwards（反向提问的事实）
#
# 每个事实是一对虚构的名字 `A>B`（“A 的伴侣是 B”）。有些事实按两个方向都训练过（`A>B` 和 `B<A`）；问题针对的是
# **只按一个方向**训练过的事实，提问方式有三种：
#
# - **正向**（`abcd>` → 伴侣）：与训练时相同；
# - **反向，以填空方式**，沿用训练时的格式：`____>efgh`，填出左边的名字。只有双向读取的模型才能这样问；从左到右的
#   模型没有可填的空；
# - **反向，颠倒顺序**：`efgh<` → 名字，这是从左到右的模型唯一能被问到的形式。

# %%
# NBVAL_CHECK_OUTPUT
fa, fa_ar = models["tiny-facts"], models["tiny-facts-ar"]
one_way, _ = reversal.facts(0)
a, b = one_way[0]
for label, question in (("forward", f"{a}>"), ("backward, infill", f"{'_' * reversal.NAME}>{b}"),
                        ("backward, reversed", f"{b}<")):
    for lm in (fa, fa_ar):
        if lm.kind == "causal" and "_" in question:
            print(f"{lm.name:<14} {label:<19} {question!r:<12} cannot be asked: no gap to fill left to right")
            continue
        got = lk.generate(lm, question, seed=SEED).texts[0]
        want = b if label == "forward" else (f"{a}>{b}" if "_" in question else a)
        print(f"{lm.name:<14} {label:<19} {question!r:<12} -> {got!r:<12} {'right' if got == want else 'wrong'}")

# %%
# NBVAL_CHECK_OUTPUT
print(doc_tables.markdown_pair(result, "facts"))
f = {lab: {g: tables.accuracy(result, "facts", lab, "reversal", g)["accuracy"] for g in tables.REVERSAL_MODES
           if g in tables.run_of(result, "facts", lab)["tasks"]["reversal"]["groups"]}
     for lab in ("low-confidence", bench.AR_LABEL)}
m = f["low-confidence"]
print(f"\nmasked: backward by infill {100 * m['backward_infill']:.1f}% against {100 * m['forward']:.1f}% forward; "
      f"reversed order {100 * m['backward_reversed']:.1f}%")
a = f[bench.AR_LABEL]
print(f"AR twin: forward {100 * a['forward']:.1f}%, reversed order {100 * a['backward_reversed']:.1f}%")
print("reversed order: the masked model is " + ("ahead of" if m["backward_reversed"] > a["backward_reversed"] else
      "level with" if m["backward_reversed"] == a["backward_reversed"] else "behind") + " its twin")

# %% [markdown]
# 把最后两行放在一起读。AR 孪生模型只以 `A>B` 的形式见过单向事实，无法回答颠倒顺序的提问（**反转诅咒**）。掩码模型
# 在完全相同的数据行上训练，但它的训练目标是从两侧预测每个位置，所以它在两个方向上都学会了每个事实：它能以训练时的
# 格式通过填空作答，而双向事实教会了它颠倒格式 `B<` 在问什么，所以也能这样问它；打印结果给出每种方式答对的比例。
# Kitouni et al.（2024）在从零训练的掩码目标上报告了这一现象。
#
# ## 5 · Mirror: parallel decoding's best case, and the frontier（镜像：并行解码的最佳情形，以及前沿）
#
# `qwertyuiop` 要求把字母倒过来写（`tiny-facts` 在学事实的同时也学了镜像）。每个答案字母都由提示词确定，所以学会了
# 这个任务的模型对所有字母的置信度都很高，置信度阈值规则只需很少几次前向传播就能写完整个答案：

# %%
# NBVAL_CHECK_OUTPUT
items = heldout("mirror")[:LIVE]
words = [it.prompt[1:-1] for it in items]
for name, rule in (("low-confidence", "low_confidence"), ("threshold 0.5", lk.Threshold(threshold=0.5))):
    out = lk.generate(fa, words, rule, seed=SEED)
    right = np.mean([t == it.answer for t, it in zip(out.texts, items)])
    nfe = out.trace.row_nfe().float().mean().item()
    print(f"{name:<15} exact {100 * right:.1f}% · {nfe:.2f} forward passes per answer · TPF {mirror.LENGTH / nfe:.2f}")

# %% [markdown]
# 现在把各任务上的规则与它们的速度对照（左），旁边是同样的规则在莎士比亚模型上的结果（右：gen-PPL 表示为每步一个
# token 解码时的倍数，`benchmarks/results/samplers.json`）。答案确定的地方，速度是免费的；模型不确定的地方，每次前向
# 多写一个 token 都可能损失质量。答案越好预测，模型就越有把握。

# %%
# NBVAL_IGNORE_OUTPUT
fig = tables.frontier_figure(result)
plt.close(fig)
fig

# %%
# NBVAL_CHECK_OUTPUT
print(tables.table(result, "facts", "mirror", groups=False))

# %% [markdown]
# ## 6 · How sure are these numbers?（这些数字有多可靠？）
#
# 上面的区间只覆盖留出样本带来的不确定性，而不覆盖训练过程本身：换一个种子就会训练出另一个模型。数独这对模型又用
# 另外两个种子按完整配方各训练了一次，每个种子都在全部留出题目上评估：

# %%
# NBVAL_CHECK_OUTPUT
print(f"seeds {seeds['seeds']}, every held-out puzzle; training minutes: " +
      ", ".join(f"{k} {v}" for k, v in seeds["train_minutes"].items()))
print(doc_tables.markdown_seeds(seeds))


# %%
# NBVAL_CHECK_OUTPUT
def seed_acc(label, seed):
    return next(r["tasks"]["sudoku"]["accuracy"] for r in seeds["runs"] if r["label"] == label and r["seed"] == seed)
confident, others = ("low-confidence", "margin"), ("random order", "left to right", bench.AR_LABEL)
for seed in seeds["seeds"]:
    worst, best = min(seed_acc(c, seed) for c in confident), max(seed_acc(o, seed) for o in others)
    print(f"seed {seed}: the weaker confident order {worst:.1%}, the best of random, left to right and the AR twin "
          f"{best:.1%}: confident ahead by {100 * (worst - best):.1f} points")

# %% [markdown]
# ## 7 · The targets, and the training curves（目标与训练曲线）
#
# 任务模型是按训练前设定的目标训练的。每一行都由 `tasks.json`、`task_seeds.json` 和模型文件计算得出；没达到的目标会
# 注明差了多少。下方是每个模型的训练损失（掩码损失和 AR 损失衡量的东西不同，所以要比较每条曲线的形状，而不是高低）。

# %%
# NBVAL_CHECK_OUTPUT
from docgen.targets import task_targets
for row in task_targets(result, seeds, tables.sizes_mb()):
    print(f"{'met ' if row['met'] else 'MISS'}  {row['target']:<92} {row['measured']}"
          + (f"  ({row['note']})" if row["note"] else ""))

# %%
# NBVAL_IGNORE_OUTPUT
from labkit.ui.training_views import loss_figure
fig = loss_figure({name: rec["loss_history"] for name, rec in records.items()}, smooth=5, every=50,
                  title="training loss (running mean every 50 steps)")
plt.close(fig)
fig

# %% [markdown]
# ## 8 · What these models still do not do（这些模型还做不到什么）
#
# 这些小模型各自只在一个 CPU 线程上训练了顶部打印的那几分钟，只认识恰好一种格式。上面的单元格展示了它们强在哪里；
# 这个单元格用同样的文件列出它们不强的地方，或者扩散在那里没有带来任何好处的地方：

# %%
# NBVAL_CHECK_OUTPUT
worst = min(("random order", "left to right"),
            key=lambda k: tables.accuracy(result, "sudoku", k, "sudoku", "hard")["accuracy"])
print(f"- Sudoku in a fixed or random order: {worst} solves "
      f"{100 * tables.accuracy(result, 'sudoku', worst, 'sudoku', 'hard')['accuracy']:.1f}% of hard puzzles: "
      "the model is only as good as the order it is decoded in.")
s = tables.accuracy(result, "sudoku", "S mode", "sudoku")
print(f"- S mode's edits also break cells: {s['edits']['broke']} right cells made wrong over {s['n']} puzzles "
      f"(and {s['edits']['fixed']} fixed).")
r = tables.accuracy(result, "facts", "low-confidence", "reversal", "backward_reversed")["accuracy"]
i = tables.accuracy(result, "facts", "low-confidence", "reversal", "backward_infill")["accuracy"]
print(f"- Facts in reversed order (`efgh<`): {100 * r:.1f}% for the masked model, against {100 * i:.1f}% by infill in "
      "the trained layout: a form it met only on other facts is answered less often.")
m = tables.accuracy(result, "add", tables.best_order(result, "add", "addition"), "addition")["accuracy"]
a = tables.accuracy(result, "add", bench.AR_LABEL, "addition")["accuracy"]
print(f"- Addition: the masked model's best order {100 * m:.1f}% against the AR twin's {100 * a:.1f}%: "
      + ("no win for diffusion here" if a >= m else "the masked model is ahead"))
try:
    lk.generate(sd, "." * 81)                                     # a 9x9 puzzle: not this model's layout
except ValueError as e:
    print(f"- Only its own layout: a 9x9 puzzle is refused: {e}")

# %% [markdown]
# ## Exercises（练习）
#
# 每道题的参考答案就在它下方；先自己试一试，再看答案。
#
# **1.** 在**简单**题（17–20 个提示数）上，顺序的影响也这么大吗？把前 `LIVE` 道简单题分别按随机顺序和 margin 顺序解码，
# 并与第 1 节中的难题比较。

# %% tags=["solution"]
# NBVAL_CHECK_OUTPUT
# Solution
easy = [it for it in heldout("sudoku") if it.group == "easy"][:LIVE]
for k in ("random order", "margin"):
    out = lk.generate(sd, [it.prompt[1:-1] for it in easy], ORDERS[k], seed=SEED)
    print(f"{k:<13} solved {sum(t == it.answer for t, it in zip(out.texts, easy))} of {len(easy)} easy puzzles "
          f"(hard: {solved[k].sum()} of {len(hard)})")

# %% [markdown]
# **2.** 阈值规则一次写下所有高于阈值的格子。在难题上用阈值 0.9，解出的题平均要用多少次前向传播？没解出的呢？

# %% tags=["solution"]
# NBVAL_CHECK_OUTPUT
# Solution
out = lk.generate(sd, puzzles, lk.Threshold(threshold=0.9), seed=SEED)
ok = np.array([t == it.answer for t, it in zip(out.texts, hard)])
nfe = out.trace.row_nfe().numpy()
print(f"solved {ok.sum()} of {len(hard)}; forward passes: solved {nfe[ok].mean():.2f}"
      + (f", unsolved {nfe[~ok].mean():.2f}" if (~ok).any() else ", none unsolved"))

# %% [markdown]
# **3.** 让 `tiny-facts` 用两种方式回答*第二个*单向事实的伴侣：正向，以及以填空方式反向。然后让 AR 孪生模型按颠倒
# 顺序反向回答。

# %% tags=["solution"]
# NBVAL_CHECK_OUTPUT
# Solution
a, b = one_way[1]
print(f"fact {a}>{b}")
print("tiny-facts, forward:          ", lk.generate(fa, f"{a}>").texts[0])
print("tiny-facts, backward infill:  ", lk.generate(fa, f"____>{b}").texts[0])
print("tiny-facts-ar, reversed order:", lk.generate(fa_ar, f"{b}<").texts[0])

# %% [markdown]
# **4.** 在命令行中：`labkit generate --model tiny-sudoku --sampler low_confidence PUZZLE` 打印网格；
# `labkit eval --model tiny-add --sampler right_to_left` 在全部留出的加法题上为一种顺序打分。在 notebook 05 的面板里，
# 从模型菜单中选择 `tiny-sudoku`，并在 `random` 和 `low_confidence` 之间切换规则，观察落定顺序。用 `make model-tasks`
# 重新训练每个任务模型（docs/models.md 给出了所用的时间）。
