"""pytest settings the whole repository shares, found by pytest itself (this file sits at the root),
so that a plain `pytest --nbval notebooks/` runs the notebooks as `make test` and `make nbval` do:

- the nbval plugin of tests/nbval_plugin.py (text compared, never rich media, stderr or widget ids);
  `make test` also names it with `-p tests.nbval_plugin`, the same module, registered once;
- tests/nbval_sanitize.cfg as the default of `--nbval-sanitize-with` (addresses, seconds, rates and
  ports masked), unless another file is given;
- the kernel of the Python running pytest, as `--nbval-current-env` would choose, unless
  `--nbval-kernel-name` names one (the notebooks' stored kernel name, python3, can resolve to
  another Python that has no labkit);
- the environment the Makefile exports, as defaults the notebook kernels inherit.

Kept light: nothing here imports labkit or torch.
"""
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent
SANITIZE = ROOT / "tests" / "nbval_sanitize.cfg"

pytest_plugins = ["tests.nbval_plugin"]
# The Chinese twins hold the English notebooks' code and outputs (tests/test_notebooks_zh.py compares
# them cell by cell), so nbval runs the English ones only.
collect_ignore = ["notebooks/zh-CN"]

for _name, _value in (("PYTHONHASHSEED", "0"), ("TQDM_DISABLE", "1"), ("HF_HUB_OFFLINE", "1"),
                      ("TOKENIZERS_PARALLELISM", "false")):
    os.environ.setdefault(_name, _value)


@pytest.hookimpl(trylast=True)          # after nbval's own pytest_configure has read its flags
def pytest_configure(config):
    opt = config.option
    if not hasattr(opt, "nbval_sanitize_with"):      # nbval not installed: nothing to configure
        return
    if opt.nbval_sanitize_with is None:
        opt.nbval_sanitize_with = str(SANITIZE)
    if not opt.nbval_kernel_name:
        opt.nbval_current_env = True
