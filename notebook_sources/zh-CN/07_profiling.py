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
# # 07 · Profiling: is diffusion decoding really faster?（性能剖析：扩散解码真的更快吗？）
#
# *阅读并运行约 25 分钟，不含练习 · 前置：notebook 03（并行解码） · 下一步：notebook 08（真实模型）。*
#
# **问题：** 扩散语言模型承诺：无论回答多长，步数都是固定的，而且每次前向传播能写下好几个 token。本 notebook 用 `labkit.profile` 检验这个说法：步计时器、峰值内存、一次生成的 torch.profiler 轨迹（trace）、挂在网络各层上的钩子，以及保存下来的基准测试：labkit 自身的开销、批大小扫描，以及 AR 与扩散的长度研究。这里的一切都能在 CPU 上运行；末尾的 GPU 单元格只在有 CUDA 的机器上运行。
#
# 计时结果因机器而异、因每次运行而异，所以回归检查不比较计时单元格；计数（前向次数、token 数）则会比较。

# %%
# Parameters: CI runs this notebook on a CPU with these values.
MODEL, CAP_MODEL = "tiny", "tiny-cap"
PROMPT = "KING HENRY:\nNow, lords, for France!\n"
KNOBS = dict(gen_length=128, block_length=32, steps=128)

import json, pathlib, tempfile
from collections import defaultdict
import torch
import plotly.graph_objects as go
import labkit as lk
from labkit.profile import StepTimer, observe, peak_memory, profile_generate
from labkit.bench.speed import sweep_figure
lk.viz.notebook_mode()
lm, cap = lk.load(MODEL), lk.load(CAP_MODEL)
RESULTS = pathlib.Path("..") / "benchmarks" / "results"

# %% [markdown]
# ## 1 · The step timer（步计时器）
#
# `StepTimer` 是一个 `on_step` 钩子：它在每一步之后记下时间（在 GPU 上用 CUDA 事件），统计每一步落定（commit，即 unmask，去掩码）的 token 数，并记录第一个 token 出现的时刻。按构造，它的 NFE（前向次数）就是轨迹的长度。这里让同一个提示词分别以每步一个 token 的方式解码，以及在蒸馏模型上以 S 模式（极速模式）解码。

# %%
# NBVAL_CHECK_OUTPUT
timers = {}
for name, model, rule in (("tiny, 1 token/step", lm, lk.LowConfidence()),
                          ("tiny-cap, S mode", cap, lk.DraftEdit.speed())):
    timers[name] = t = StepTimer(model.device)
    out = lk.generate(model, PROMPT, rule, on_step=t, **KNOBS)
    s = t.summary()
    print(f"{name:<20} NFE {s['nfe']:>3} (trace {len(out.trace)}) | tokens {s['tokens']} | TPF {s['tpf']:.2f}")

# %%
# NBVAL_IGNORE_OUTPUT
for name, t in timers.items():
    s = t.summary()
    print(f"{name:<20} {s['seconds']:.2f} s | {s['tps']:.0f} tok/s | step median {s['step_ms_median']:.1f} ms, "
          f"p90 {s['step_ms_p90']:.1f} ms | first token after {1000 * s['ttft_s']:.1f} ms")
fig = go.Figure([go.Scatter(y=[1000 * x for x in t.step_seconds()], name=name, mode="lines")
                 for name, t in timers.items()])
fig.update_layout(template="plotly_white", height=300, xaxis_title="step", yaxis_title="ms",
                  title="wall time of each step")
fig

# %% [markdown]
# S 模式只需要一小部分前向传播（见上面它的 NFE）。它的每一步都是在一张与“每步一个 token”时同样大小的画布上做一次前向传播，只有规则不同，所以两者每一步的开销应该差不多：比较一下每步耗时的中位数。中位数因机器和运行而异（检查不比较它们）。第一步往往最慢（kernel 和内存分配器在预热）。
#
# ## 2 · Peak memory（峰值内存）
#
# `peak_memory` 在 GPU 上报告 `torch.cuda.max_memory_allocated`；在 CPU 上报告进程的峰值常驻内存（Linux 的 VmHWM，在被测区域开始时重置）。在 CPU 上，这个值包含进程占用的一切，连 PyTorch 本身也算在内，所以要看差值，而不是绝对数值。先做一次简短的现场运行：先是一个留出提示词，然后是十六个提示词同时解码，32 个 token、8 步（一步的内存取决于批和画布，而与运行多少步无关）：

# %%
# NBVAL_IGNORE_OUTPUT
from labkit.eval.evaluate import sample_prompts
prompts = sample_prompts(16)
SHORT = dict(gen_length=32, block_length=32, steps=8)      # memory grows with the batch, not with the steps
for b in (1, 16):
    with peak_memory(lm.device) as mem:
        lk.generate(lm, prompts[:b], **SHORT)
    print(f"batch {b:>2}: peak {mem['peak_bytes'] / 2**20:.0f} MiB ({mem['kind']}, region only: {mem['region']})")

# %% [markdown]
# 保存的扫描结果来自 `labkit bench batch`（`benchmarks/results/batch.json`：在每个批大小外面套同一个 `peak_memory`，64 个 token，每步一个，在本项目的 2 核 CPU 上），补上了中间的批大小：

# %%
# NBVAL_CHECK_OUTPUT
sweep = json.loads((RESULTS / "batch.json").read_text())
print(f"{sweep['model']} on {sweep['device']}, {sweep['gen_length']} tokens, one per step")
for r in sweep["rows"]:
    print(f"batch {r['batch']:>2}: peak {r['peak_bytes'] / 2**20:.0f} MiB ({r['memory_kind']}), "
          f"{r['peak_bytes'] / sweep['rows'][0]['peak_bytes']:.2f}x the peak at batch 1")

# %% [markdown]
# 峰值随批增大，但增长远比批慢：16 个提示词同时解码时峰值为 514 MiB，一个提示词时为 385 MiB（1.33×），每多一个提示词约多 9 MiB。常驻内存的大部分是 PyTorch 和权重，批中每一行共用它们；随批增长的是批自身的工作：每次前向传播的画布、激活值和 logits。

# %% [markdown]
# ## 3 · Where the time goes: a profiler trace（时间花在哪里：profiler 轨迹）
#
# `profile_generate` 在 `torch.profiler` 下运行一次生成，并写出一个 Chrome 轨迹文件（用 `chrome://tracing` 或 Perfetto 打开）。解码循环用 `record_function` 区段标出它的各个部分：`labkit.forward`、`labkit.rule`、`labkit.controls` 和 `labkit.record`（记录轨迹）。把一次带关键词控制、64 个 token 的运行中各区段的时间加总，就得到时间的分配：

# %%
# NBVAL_IGNORE_OUTPUT
path = profile_generate(lm, PROMPT, pathlib.Path(tempfile.mkdtemp()) / "generate.json",
                        controls=[lk.Keywords(["crown"])], gen_length=64, block_length=32, steps=32)
spans = defaultdict(float)
for e in json.loads(path.read_text())["traceEvents"]:
    if str(e.get("name", "")).startswith("labkit.") and e.get("ph") == "X":
        spans[e["name"]] += e["dur"] / 1000
total = sum(spans.values())
for name, ms in sorted(spans.items(), key=lambda kv: -kv[1]):
    print(f"{name:<16} {ms:8.1f} ms  {100 * ms / total:5.1f}%")
print("trace written to", path)

# %% [markdown]
# 在 CPU 上，前向传播占了区段内的大部分时间（上面的占比因机器和运行而异，所以检查不比较它们）。其余部分里关键词控制的占比最大，但 profiler 夸大了它：profiler 给每个算子都加上一份固定开销，而一个控制由许多小的张量运算组成。这里没有保存不带 profiler 的运行：要看控制的真实开销，就用第 1 节的步计时器，对同一次运行分别在带和不带 `controls=` 的情况下计时。规则和轨迹记录只占区段时间的一小部分。

# %% [markdown]
# ## 4 · Looking inside: hooks on named layers（深入内部：命名层上的钩子）
#
# `observe(lm, names, what)` 在子模块上注册前向钩子（名字与 `lm.net.named_modules()` 中的一致），并收集 `"timings"`、`"shapes"` 或 `"activations"`。该代码块结束时钩子会被移除，代码块中抛出异常时也一样。

# %%
# NBVAL_CHECK_OUTPUT
names = ["layers.0.attn", "layers.5.mlp"]
with observe(lm, names, "shapes") as obs:
    out = lk.generate(lm, PROMPT, gen_length=32, block_length=32, steps=8)
for n in names:
    print(f"{n:<14} called {len(obs.shapes[n])} times, output shape {obs.shapes[n][0]}")
print("hooks left:", sum(len(m._forward_hooks) for m in lm.net.modules()))

# %% [markdown]
# ## 5 · labkit's own cost（labkit 自身的开销）
#
# `labkit bench overhead` 以三种方式交替计时一次 128 个 token 的贪心生成：用户平常调用的 `generate()`、不记录轨迹的解码循环，以及在完全相同的画布上只做前向传播。本项目 2 核 CPU 上保存的运行结果：

# %%
# NBVAL_CHECK_OUTPUT
o = json.loads((RESULTS / "overhead.json").read_text())
print(f"{o['model']} on {o['device']}, {o['nfe']} forward passes, median of {o['repeats']}")
print(f"labkit_overhead_ratio {o['labkit_overhead_ratio']:.3f} -> {100 * o['overhead_share']:.1f}% of wall time outside "
      f"the model (target <= 5%)")
print(f"trace_overhead_ratio  {o['trace_overhead_ratio']:.3f} (target <= 1.10)")

# %% [markdown]
# 规则、簿记和轨迹加起来约占墙钟时间的 4%（3.7%），而记录完整轨迹的开销不到 1%（比值 1.007）：它只保存每步的小张量（int32 的 id、float16 的置信度），从不保存 logits。
#
# ## 6 · Batch sweep and the length study（批大小扫描与长度研究）
#
# `labkit bench batch` 同时解码 1、4、8 和 16 个提示词（在 GPU 上它会不断翻倍，直到内存耗尽，并报告这一情况而不是崩溃）。`labkit bench length` 解码 32 到 512 个 token 的回答，每个回答都分成四个块，用五种方式：
# - AR 孪生模型，每次前向一个 token，按解码循环的方式运行：每一步都把整个前缀送进网络；
# - AR 孪生模型，使用它自己的精确 KV 缓存（`lk.cache.CausalCache`）：每步只算一个新位置，和所有 AR 服务器的解码方式一样；
# - 蒸馏过的扩散模型，分别用固定 32 步、阈值 0.9，以及阈值 0.9 加双 KV 缓存。
#
# 内置模型是在 256 个 token 的窗口上训练的。对 256 和 512 个 token，研究使用旋转位置编码能延伸得更远的副本（`with_context`）：一次前向传播的开销与真实情况相同，但文本超出了训练分布，所以这几行只能当作速度数据。保存的运行结果：

# %%
# NBVAL_CHECK_OUTPUT
batch = json.loads((RESULTS / "batch.json").read_text())
length = json.loads((RESULTS / "length.json").read_text())
print("batch sizes:", [r["batch"] for r in batch["rows"]], "| stopped:", batch["stopped"])
RUNS = ["ar", "ar_cached", "diffusion_fixed", "diffusion_threshold", "diffusion_threshold_cached"]
print("forward passes per answer:", " | ".join(RUNS))
for r in length["rows"]:
    print(f"length {r['length']:>3}: " + "  ".join(f"{r[k]['nfe']:>4}" for k in RUNS)
          + ("   (past the trained context: speed only)" if r["beyond_context"] else ""))

# %%
# NBVAL_IGNORE_OUTPUT
import matplotlib.pyplot as plt
fig = sweep_figure(batch=batch, length=length)
plt.close(fig)      # shown once, as this cell's result
fig

# %% [markdown]
# 保存的运行结果在这台 CPU 上显示了什么：
# - **批处理**把吞吐量从批大小 1 时的 68 tokens/s 提高到 16 时的 133 tokens/s，而每一步的耗时增至 8×：2 核 CPU 在批大小为 1 时就已经很忙，所以批处理带来的收益不如在 GPU 上。
# - **前向次数：** AR 孪生模型每个 token 需要一次；固定 32 步的扩散无论长度如何都需要 32 次；`tiny-cap` 上的阈值解码在 32、64 和 128 个 token 时分别需要 21、32 和 44 次，增长远比长度慢。超出训练上下文之后，它在 256 个 token 时需要 48 次，在 512 个 token 时需要 148 次：长度翻倍，次数变成三倍，因为这时副本读到的是它从未训练过的位置。
# - **墙钟时间是这个说法不再“免费”的地方。** 扩散的一步要把整张画布送过网络，所以它的开销随回答变长而增长：在这台 CPU 上，固定步数的运行在 32 个 token 时一步 9 ms，128 个时 17 ms，512 个时 53 ms。对比每一步都重读前缀的 AR 解码循环，固定 32 步的扩散从 64 个 token 起胜出（128 个 token：0.55 s 对 1.53 s），阈值 0.9 则在全部五个长度上都胜出。
# - **对上带 KV 缓存的 AR 模型，就是另一场比赛了。** 带缓存的 AR 一步是一次单 token 的前向（这里为 5 到 6 ms，大部分是 labkit 每步的簿记，而不是 5M 参数的网络本身）。在 64 个 token 及以下，它胜过每一个不带缓存的扩散运行（64 个 token 时 0.31 s，而固定 32 步为 0.40 s，阈值 0.9 为 0.39 s）；在 128 个 token 时固定 32 步领先（0.55 s 对 0.63 s），阈值解码落后（0.77 s）。带有自己缓存的扩散在 256 个 token 以内都领先于带缓存的 AR：阈值 0.9 加双缓存在 128 个 token 时用了 0.46 s，比带缓存的 AR 快 1.36×。到 512 个 token 时它落后了（3.02 s 对 2.94 s，用了 151 次前向传播），而固定 32 步是最快的运行（1.69 s 对 2.94 s），但那相当于每次前向 16 个 token，远超保持文本质量所允许的范围（notebook 03）。
# - **KV 缓存**是标准的解决办法：在一个块内，复用那些不变的位置的键和值。`lk.cache.PrefixCache(lm)` 和 `lk.cache.DualCache(lm)` 包装模型，可以与所有规则一起使用。在 8 个较长的留出提示词上（`labkit bench cache`，`benchmarks/results/cache.json`：`tiny`，提示词 66 到 120 个 token，回答 128 个 token，贪心），前缀缓存的解码快了 2.6×，双缓存快了 4.6×。复用的值是块中第一步的值，这是一种近似：用前缀缓存时 8 个回答中只有 2 个、用双缓存时没有一个与不带缓存的回答逐字相同。gen-PPL 分别为 4.46 和 5.26，不带缓存时为 4.66。

# %%
# NBVAL_IGNORE_OUTPUT
if torch.cuda.is_available():
    gpu = lk.load(MODEL, device="cuda")
    t = StepTimer(gpu.device)
    with peak_memory(gpu.device) as mem:
        lk.generate(gpu, PROMPT, on_step=t, **KNOBS)
    print(t.summary(), f"peak {mem['peak_bytes'] / 2**20:.0f} MiB")
else:
    print("no CUDA device here: the GPU cell is skipped (run `make gpu-check` on a GPU machine)")

# %% [markdown]
# ### What one H200 showed（单块 GPU 上的结果）
#
# 保存的 GPU 运行结果（`benchmarks/gpu_check.py`，在一块 H200 上）：一个与 LLaDA-8B 形状相同的随机模型，精度为 bf16。随机权重写出的是无意义的文本，所以只有它的速度和内存有参考价值。下面的批大小扫描和缓存结果来自第一次运行（`--max-batch 16`）；前向传播、它的计算下限与 kernel、开销以及官方解码循环的结果来自 2026-12-04 的运行，那次运行自己的批大小扫描失败了（对比用的长提示词需要语料包，而那台机器上没有）。

# %%
# NBVAL_CHECK_OUTPUT
g = json.loads((RESULTS / "gpu_check.json").read_text())
gen = g["generate"]
print(f"{g['gpu']}: random {g['shape']}, {g['params'] / 1e9:.2f}B parameters, {g['dtype']}")
print(f"forward over {g['forward']['length']} tokens: {g['forward']['median_ms']} ms | 128-token answer: "
      f"{gen['seconds']:.2f} s, {gen['tps']:.0f} tok/s, peak {gen['peak_bytes'] / 2**30:.1f} GiB")
print(f"labkit overhead ratio {g['overhead']['labkit_overhead_ratio']}, trace {g['overhead']['trace_overhead_ratio']}")
for r in g["batch"]["rows"]:                  # the batch sweep and the caches: the first run
    print(f"batch {r['batch']:>3}: {r['ms_per_step']:6.1f} ms/step {r['tokens_per_s']:6.1f} tok/s")
if "kv_cache" in g:
    print("caches:", ", ".join(f"{k} {v['seconds']:.2f} s ({v['speedup']}x)"
                               for k, v in g["kv_cache"].items() if isinstance(v, dict)))
for r in g.get("forward_floor", []):
    print(f"forward over {r['length']} tokens: {r['median_ms']} ms, compute floor {r['floor_ms']} ms: {r['ratio']}x")
k = g["profile"]["forward_512_kernels"]
print(f"its {k['kernels']} kernels busy {k['busy_ms']} ms:", ", ".join(f"{n} {v} ms" for n, v in k["by_kind_ms"].items()))
print(f"labkit overhead with lk.Accel.GPU: {g['overhead_gpu_path']['labkit_overhead_ratio']}x the bare forwards")


# %% [markdown]
# 在 GPU 上，批大小到 8 为止，批处理的收益几乎与批大小成正比：批大小为 8 时一步耗时 34 ms，批大小为 1 时为 23 ms，每秒 token 数是后者的 5.5×。批大小为 1 时，无论画布多长，一步的开销几乎相同，所以靠缩短画布起作用的缓存在那里只带来 1.2 到 1.3× 的提升（463 个 token 的提示词，128 个 token），而在这台 CPU 上 `tiny` 则有 2.6 到 4.6×（`cache.json`，见上文）。一次覆盖 275 个 token 的前向传播用了 18.0 ms（第一次运行为 16.5 ms），而按 H200 的峰值算力，它的计算量只需约 4.2 ms：GPU 在每一步的大部分时间里都在等主机逐个启动 kernel。
#
# ### What the GPU path changes, and the official loops beside it（GPU 路径改变了什么，以及与之并列的官方解码循环）
#
# 有三个选项针对这种等待，每一个都与默认设置逐 token 核对过（`tests/test_accel.py`）：`lk.Accel.GPU`（解码循环不再在每一步之后等待设备）、`labkit.accel.compiled(lm, "reduce-overhead")`（把前向传播捕获为一张图：在 GPU 上就是 CUDA graphs），以及 KV 缓存的原地缓冲区（`DualCache(lm, compile=...)`）。`gpu_check.py` 把它们与官方的 LLaDA `generate()` 和 Fast-dLLM 的解码循环放在一起运行，使用相同的权重和提示词（两个官方文件需要你自己获取，并在它的命令行上给出）。它在这台 CPU 上以小形状、float32 运行的结果保存在 `gpu_check_cpu.json` 中：这是检验各个解码循环是否一致，而不是 GPU 上的速度。

# %%
# NBVAL_CHECK_OUTPUT
def show_comparison(c):
    print(f"prompt {c['prompt_tokens']} tokens, gen {c['gen_length']}, block {c['block_length']}, "
          f"one token per step")
    for official, p in c["pairs"].items():
        print(f"{official:>25} vs {p['labkit']:<22} same tokens: {p['identical']!s:<5} "
              f"official / labkit time {p['speedup']:.2f}")
    print("compiled runs decode the same tokens:", c["compiled_identical"])
    print("speed-up over no cache:", {k: v for k, v in c["speedup_vs_labkit_no_cache"].items()
                                       if k in ("labkit_prefix", "labkit_dual", "labkit_dual_compiled")})

cpu = json.loads((RESULTS / "gpu_check_cpu.json").read_text())
print(f"{cpu['shape']} shape on {cpu['device']}, {cpu['params']:,} parameters, {cpu['dtype']}")
show_comparison(cpu["comparisons"]["timed"])

# %% [markdown]
# 每个官方解码循环写出的 token 都与它在 labkit 中的对应实现相同。在这么小的模型上，两边的一步大多是 Python 开销，所以时间比值对 GPU 说明不了多少。同一检查在 H200 上的结果紧接在这些 CPU 数据之后。
#
# 上面打印的缓存加速（前缀缓存 3.9×，双缓存 7.2×）来自这项检查自己的设置，而不是 `cache.json` 的设置：一个 344,384 参数的随机模型、463 个 token 的提示词和 256 个回答 token，两边都开启 `lk.Accel.GPU`。它们的基线是开启 `Accel.GPU` 的无缓存运行，在这台 CPU 上用了 2.40 s，而默认解码循环用了 1.51 s（见 `gpu_check_cpu.json` 中的 `seconds`）。与默认解码循环相比，带缓存的运行分别快 2.4× 和 4.6×，接近 `labkit bench cache` 为 `tiny` 测得的 2.6× 和 4.6×（66 到 120 个 token 的提示词，128 个回答 token）。

# %% [markdown]
# ### The same check on one H200（在单块 GPU 上做同一检查）
#
# 在 LLaDA-8B 的形状、bf16 精度下（2026-12-04 的运行，预热后计时一次），这些时间反映的是 GPU 的真实表现。批大小为 1、每步一个 token 时，每个不带缓存的解码循环，无论是 labkit 的还是官方的，都在等主机逐个启动 kernel，所以 `lk.Accel.GPU` 和编译后的前向在那里收效甚微；双缓存更短的画布只有在它的前向是一张 CUDA graph 时（`labkit_dual_compiled`）才能转化为速度。这次会话的设备时间在比较 token 的 float32 阶段中耗尽了，所以这张表没有 token 是否一致的核对（上面的 CPU 表有）；时间是从运行打印的输出中保存下来的（`gpu_check_comparisons.log`）。

# %%
# NBVAL_CHECK_OUTPUT
t = g["comparisons"]["timed"]
print(f"H200, bf16: prompt {t['prompt_tokens']} tokens, gen {t['gen_length']}, block {t['block_length']}, one token per step")
for name, s in t["seconds"].items():
    print(f"{name:>25} {s:6.2f} s  {t['seconds']['labkit_gpu'] / s:5.2f}x labkit_gpu")
print("tokens compared on this GPU:", any(p["identical"] is not None for p in t["pairs"].values()))
for name, f in g["families"].items():
    print(f"{name:>10}: {f['params'] / 1e9:5.2f}B, load {f['load_s']} s, forward {f['forward']['median_ms']} ms, "
          f"128-token Q-mode answer {f['generate']['seconds']:.1f} s, peak {f['peak_bytes'] / 2**30:.1f} GiB")

# %% [markdown]
# ## 7 · Speed against accuracy through lm-evaluation-harness（借助 lm-evaluation-harness 比较速度与准确率）
#
# 已发表的速度—准确率表格（Fast-dLLM 的，以及 LLaDA2.1 的 S 模式与 Q 模式（质量模式））都是用 lm-evaluation-harness 测出来的。labkit 也是一个 lm-eval 模型（`labkit.eval.harness.LabkitLM`；命令行上用 `labkit lm-eval
# --model labkit ...`，见 README 的 “lm-evaluation-harness” 一节），所以同样的规则可以在任何 lm-eval 任务上打分。保存的运行（`labkit bench lm-eval`）在随附的行补全任务上给每条规则打分，TPF（每次前向写下的 token 数）取自模型自己的解码日志：

# %%
# NBVAL_CHECK_OUTPUT
from labkit.bench.lm_eval import table
lm_eval_run = json.loads((RESULTS / "lm_eval.json").read_text())
print(f"task {lm_eval_run['task']}, through lm_eval.simple_evaluate")
print(table(lm_eval_run))

# %% [markdown]
# 像读 notebook 03 的 gen-PPL 表格那样读它：在每条规则下，`tiny` 每次前向传播落定约一个 token 或更少（TPF 0.53 到 1.12；它的 S 模式把前向传播花在了编辑上），而 `tiny-cap` 每次前向最多落定 2.67 个（S 模式），在每条规则下的词级 F1 都在 0.033 到 0.039 之间。要用同样的方式给一个真实模型打分，在缓存了其权重和数据集的机器上运行：`labkit lm-eval --model
# labkit --model_args model=GSAI-ML/LLaDA-8B-Instruct,device=cuda,sampler=threshold,threshold=0.9
# --tasks gsm8k`。

# %% [markdown]
# ## 8 · AR against diffusion in the research landscape (reported, not measured here)（研究版图中的 AR 与扩散：引用报告数据，并非本实验室测量）
#
# 本 notebook 测量的是 2 核 CPU 上的一个 5M 参数模型。下面是研发扩散语言模型的各家实验室为自己的模型、在自己的硬件和基准上*报告*的结果（是他们的数据，labkit 没有核对）：
#
# - **LLaDA**（Nie et al.，中国人民大学与蚂蚁集团，2025）：一个从零训练的 8B 掩码扩散语言模型，据报告在通用基准上与 LLaMA3 8B 相当，在按*反向*补全诗句上领先 GPT-4o（即反转诅咒；notebook 11 在小模型上测量了它）。它的后继者 LLaDA2.x（蚂蚁集团）加入了块解码，LLaDA2.1 又加入了 token 编辑（notebook 04）。
# - **Mercury**（Inception Labs，2025）：面向代码的商用扩散语言模型；技术报告给出的数据是：在一块 H100 上，Mercury Coder Mini 约 1,100 tokens/s，Small 约 740 tokens/s，在代码基准上的质量接近为速度优化过的小型 AR 模型。
# - **Gemini Diffusion**（Google DeepMind，实验性，2025）：Google 页面上给出的采样速度为 1,479 tokens/s（不含 0.84 s 的开销），基准分数接近 Gemini 2.0 Flash-Lite（在部分代码和数学任务上领先，在科学和多语言任务上落后）。
#
# 共同的线索正是本 notebook 在小尺度上展示的那一点：扩散的速度来自每次前向传播落定多个 token，这在模型置信度高的地方（代码、数学、结构化的回答）划算，在置信度不高的地方则要以质量为代价。同样的问题可以拿去问任何模型，只要有一块 GPU：`labkit bench` 和 `labkit lm-eval`（第 7 节）。

# %% [markdown]
# ## Exercises（练习）
#
# 每道题的参考答案都紧跟在它下面：请先在一个新单元格里自己试一试。参考答案也会打印计时；那是这台机器上的结果，回归检查只比较计数。
#
# **1.** 在 `cap` 上用 `StepTimer` 为 `lk.Threshold(threshold=0.7)` 计时，并与 S 模式比较：编辑消耗的是墙钟时间，还是只是前向次数？

# %% tags=["solution"]
# NBVAL_CHECK_OUTPUT
# Solution
timers["tiny-cap, threshold 0.7"] = t = StepTimer(cap.device)
lk.generate(cap, PROMPT, lk.Threshold(threshold=0.7), on_step=t, **KNOBS)
for name in ("tiny-cap, threshold 0.7", "tiny-cap, S mode"):
    s = timers[name].summary()
    print(f"{name:<24} NFE {s['nfe']:>3} | TPF {s['tpf']:.2f} | {s['seconds']:.2f} s | {s['tps']:.0f} tok/s | "
          f"step median {s['step_ms_median']:.1f} ms")

# %% [markdown]
# 阈值 0.7 从不编辑，用了 34 次前向传播；S 模式用更低的阈值起草，再进行编辑，连同编辑所用的前向在内共用了 21 次。两者的每一步都是在同一张画布上做一次前向传播，在 CPU 上它占了一步的大部分时间（第 3 节），再加上规则自身的工作。所以墙钟时间跟着前向次数走：编辑主要通过它额外增加的前向传播来消耗墙钟时间，而在这里，S 模式即使算上编辑，所需的前向次数也比阈值 0.7 少。请在你的机器上比较上面的秒数（检查不比较它们）。

# %% [markdown]
# **2.** 用 `observe(lm, ["layers.0.attn"], "activations")`，逐步跟踪某一个被掩码位置上的注意力输出。

# %% tags=["solution"]
# NBVAL_CHECK_OUTPUT
# Solution
with observe(lm, ["layers.0.attn"], "activations") as obs:
    out = lk.generate(lm, PROMPT, gen_length=32, block_length=32, steps=8)
acts = torch.stack(obs.activations["layers.0.attn"])[:, 0]        # (steps, canvas, width), batch row 0
P = out.trace.prompt_len
written = out.trace.commit_step()[0, P:]                            # (32,) the step that wrote each position
pos = int((written == 4).nonzero()[0])                              # the first position written at step 4
change = (acts[1:, P + pos] - acts[:-1, P + pos]).norm(dim=-1)     # (7,) how far its output moved per step
print(f"position {pos}, written at step {int(written[pos])}; size of the output {acts[0, P + pos].norm():.2f}")
print("change from each step to the next:", [round(c, 2) for c in change.tolist()])
fig = go.Figure(go.Scatter(x=list(range(1, len(change) + 1)), y=change.tolist(), mode="lines+markers"))
fig.update_layout(template="plotly_white", height=280, xaxis_title="step (change from the step before)", yaxis_title="change (L2 norm)",
                  title=f"layers.0.attn output at position {pos}, step to step")
fig

# %% [markdown]
# 位置 19 在第 4 步被写下。在此之前它的输入是掩码 token，但它的注意力输出每一步都在变化（0.13 到 0.66）：注意力混入了其他位置的信息，而那些位置正在被写下。最大的变化（1.27）出现在第 4 步到第 5 步之间，这时它自己的输入从掩码变成了它的 token。此后它几乎不动（0.04、0.03），尽管其他位置仍在被写下。

# %% [markdown]
# **3.** `labkit bench length` 用 `tiny-cap` 解码。在 `tiny` 这个很少有高置信度的模型上，阈值解码表现如何？（这是研究设置的一次小型现场运行：同样的提示词、4 个块、阈值 0.9，只取一个长度；`labkit bench length --model tiny` 会跑遍所有长度。）

# %% tags=["solution"]
# NBVAL_CHECK_OUTPUT
# Solution
from labkit.bench.speed import LENGTH_BLOCKS, PROMPT as LENGTH_PROMPT
L = 64
for name, model in (("tiny", lm), ("tiny-cap", cap)):
    t = StepTimer(model.device)
    lk.generate(model, LENGTH_PROMPT, lk.Threshold(threshold=0.9), on_step=t, gen_length=L,
                block_length=L // LENGTH_BLOCKS, steps=L)
    s = t.summary()
    print(f"{name:<9} threshold 0.9, {L} tokens: NFE {s['nfe']:>2} (TPF {s['tpf']:.2f}), {s['seconds']:.2f} s")
row = next(r for r in length["rows"] if r["length"] == L)
print(f"length.json at {L} tokens: tiny-cap threshold 0.9 NFE {row['diffusion_threshold']['nfe']}, "
      f"the AR twin {row['ar']['nfe']}")

# %% [markdown]
# `tiny` 在阈值 0.9 下每次前向传播落定一个 token：64 个 token 用了 64 次前向传播，和 AR 孪生模型以及每步一个 token 的解码循环一样多，所以它在前向次数上得不到扩散的任何节省，而每一次前向仍要处理整张画布。`tiny-cap` 需要 32 次，与保存的研究（`length.json`）中的次数相同。`labkit bench length --model tiny` 会在每个长度上做同样的比较。
