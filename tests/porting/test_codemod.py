"""What `accel port` writes for each kind of site (exact text, formatting kept)."""

from __future__ import annotations

import ast

import pytest

from accel_abstraction.porting import port_source, scan_source

H = "import os\nimport torch\n"
A = "import accel_abstraction as accel\n"
#: ``H`` once ported: the accel import where isort puts it, before ``import torch``.
HA = "import os\nimport accel_abstraction as accel\nimport torch\n"

CASES = [
    ('x = torch.zeros(2, device="cuda")\n', 'x = torch.zeros(2, device=accel.device())\n'),
    ('d = torch.device("cuda:1")\n', "d = accel.device(1)\n"),
    ('d = torch.device("cuda", rank)\n', "d = accel.device(rank)\n"),
    ('d = torch.device(f"cuda:{rank}")\n', "d = accel.device(rank)\n"),
    ('y = x.to("cuda:" + str(rank))\n', "y = x.to(accel.device(rank))\n"),
    ("y = x.to(local_rank)\n", "y = x.to(accel.device(local_rank))\n"),
    ("y = x.cuda(non_blocking=True)\n", "y = x.to(accel.device(), non_blocking=True)\n"),
    ("y = x.cuda(1)\n", "y = x.to(accel.device(1))\n"),
    ("y = (x  # keep\n     .cuda())\n", "y = (x  # keep\n     .to(accel.device()))\n"),
    ("ok = x.is_cuda and y\n", "ok = accel.is_accelerator_device(x.device) and y\n"),
    ("ok = [x.is_cuda]\n", "ok = [accel.is_accelerator_device(x.device)]\n"),
    ("torch.backends.cudnn.deterministic = True  # repro\n",
     "if accel.is_accelerator_available():\n    accel.set_deterministic(True)  # repro\n"),
    ("with torch.autocast(device_type='cuda', dtype=torch.float16):\n    pass\n",
     "with accel.autocast(dtype=torch.float16, enabled=accel.is_accelerator_available()):\n    pass\n"),
    ("s = torch.amp.GradScaler(init_scale=8.0, device='cuda')\n", "s = accel.GradScaler(init_scale=8.0)\n"),
    ('torch.distributed.init_process_group(backend="nccl")\n',
     "torch.distributed.init_process_group(backend=accel.dist_backend())\n"),
    ("loader = DataLoader(ds, pin_memory=True)\n", "loader = DataLoader(ds, pin_memory=accel.capabilities().pinned_memory)\n"),
    ('n = os.environ.get("CUDA_VISIBLE_DEVICES")\n',
     'n = os.environ.get(accel.visible_devices_env() if accel.is_accelerator_available() else "CUDA_VISIBLE_DEVICES")\n'),
    ("with torch.cuda.amp.autocast(enabled=torch.cuda.is_available()):\n    pass\n",
     "with accel.autocast(\n    enabled=accel.is_accelerator_available() and accel.is_accelerator_available()\n):\n    pass\n"),  # wrapped to 88
    ("f = torch.cuda.is_available\n", "f = accel.is_accelerator_available\n"),
    # on the cpu backend the port answers what the CUDA call answered on a machine without CUDA
    ("n = torch.cuda.device_count()\n", "n = accel.device_count() if accel.is_accelerator_available() else 0\n"),
    ("n = 2 * torch.cuda.device_count()\n", "n = 2 * (accel.device_count() if accel.is_accelerator_available() else 0)\n"),
    # a guarded call standing alone becomes an if statement, not a statement-expression
    ("torch.cuda.manual_seed(seed + rank)\n", "if accel.is_accelerator_available():\n    accel.manual_seed(seed + rank)\n"),
    ("if ok: torch.cuda.manual_seed(1)\n", "if ok:\n    if accel.is_accelerator_available():\n        accel.manual_seed(1)\n"),
    ("if ok:\n    # seed\n    torch.cuda.manual_seed(1)\n",
     "if ok:\n    # seed\n    if accel.is_accelerator_available():\n        accel.manual_seed(1)\n"),
    ("torch.cuda.manual_seed(1); x = 2\n", "accel.manual_seed(1) if accel.is_accelerator_available() else None; x = 2\n"),
    ("s = torch.cuda.amp.GradScaler(enabled=a or b)\n", "s = accel.GradScaler(enabled=(a or b) and accel.is_accelerator_available())\n"),
    ("s = torch.cuda.amp.GradScaler()\n", "s = accel.GradScaler()\n"),
    # a string stays a string: later code tests it with `in`, formats it, or stores it in a config
    ('device = "cuda"  # or cpu\n', "device = accel.device_type()  # or cpu\n"),
    ('device = "cuda:1"\n', "device = str(accel.device(1))\n"),
    ("device = f'cuda:{rank}'\n", "device = f'{accel.device_type()}:{rank}'\n"),
    ('name = "cuda:{}".format(i)\n', 'name = (accel.device_type() + ":{}").format(i)\n'),
    ('name = "cuda:%d" % i\n', 'name = (accel.device_type() + ":%d") % i\n'),
    ('name = "cuda" + str(i)\n', "name = accel.device_type() + str(i)\n"),
    ('cfg = {"device": "cuda"}\n', 'cfg = {"device": accel.device_type()}\n'),
    # device-type tests ask "the selected accelerator?": same answer on cpu and cuda, true on
    # any other accelerator, false for meta/mps/xpu
    ('if x.device.type == "cuda":\n    pass\n', "if accel.is_accelerator_device(x.device.type):\n    pass\n"),
    ("if device_type != 'cuda':\n    pass\n", "if not accel.is_accelerator_device(device_type):\n    pass\n"),
    ("use = 'cuda' in device\n", "use = accel.is_accelerator_device(device)\n"),
    ("use = 'cuda' not in str(x.device)\n", "use = not accel.is_accelerator_device(str(x.device))\n"),
    ('ok = device.startswith("cuda")\n', "ok = accel.is_accelerator_device(device)\n"),
    ('ok = x.device.type in ("cuda",)\n', "ok = accel.is_accelerator_device(x.device.type)\n"),
    ('ok = str(dev) == "cuda"\n', "ok = accel.is_accelerator_device(str(dev))\n"),
    ('if args.dist_backend == "nccl":\n    pass\n',
     'if args.dist_backend == (\n    accel.dist_backend() if accel.is_accelerator_available() else "nccl"\n):\n    pass\n'),  # wrapped to 88
    ("d = torch.device(0)\n", "d = accel.device(0)\n"),
    ("d = torch.device(local_rank)\n", "d = accel.device(local_rank)\n"),
    ("torch.backends.cuda.matmul.allow_tf32 = True  # matmul\ntorch.backends.cudnn.allow_tf32 = True  # cudnn\n",
     "accel.set_allow_tf32(True)  # matmul\n"),
    ("with torch.cuda.amp.autocast(use_amp):\n    pass\n",
     "with accel.autocast(enabled=use_amp and accel.is_accelerator_available()):\n    pass\n"),
    ("é = 'ü'; device = f'cuda:{rank}'; ok = 'cuda' in device\n",
     "é = 'ü'; device = f'{accel.device_type()}:{rank}'; ok = accel.is_accelerator_device(device)\n"),
]


@pytest.mark.parametrize(("before", "after"), CASES, ids=[c[0].split("\n")[0][:40] for c in CASES])
def test_rewrite(before: str, after: str) -> None:
    result = port_source(H + before)
    assert result.error is None
    assert result.output == HA + after


def test_import_goes_where_isort_puts_it() -> None:
    source = '"""Doc."""\nfrom __future__ import annotations\n\nimport os\n\nimport torch\n\nx = y.cuda()\n'
    assert port_source(source).output == (
        '"""Doc."""\nfrom __future__ import annotations\n\nimport os\n\n' + A + "import torch\n\nx = y.to(accel.device())\n"
    )
    # after the straight imports of its section, before its from-imports
    source = "import os\n\nimport absl\nfrom torch import nn\n\nx = y.cuda()\n"
    assert port_source(source).output.startswith("import os\n\nimport absl\n" + A + "from torch import nn\n\n")
    # no third-party section yet: a new one after the standard library, before first-party code
    source = "import os\n\nfrom . import models\n\nx = y.cuda()\n"
    assert port_source(source).output.startswith("import os\n\n" + A + "\nfrom . import models\n\nx")
    # the first line of its section: a comment above that line stays above the section
    source = "import os\n\n# third party\nimport torch\n\nx = y.cuda()\n"
    assert port_source(source).output.startswith("import os\n\n# third party\n" + A + "import torch\n")


def test_import_order_follows_the_projects_isort_settings(tmp_path) -> None:  # type: ignore[no-untyped-def]
    source = "import os\n\nfrom numpy import ones\nimport torch\n\nx = y.cuda()\n"
    (tmp_path / "pyproject.toml").write_text("[tool.ruff.lint.isort]\nforce-sort-within-sections = true\n")
    (tmp_path / "train.py").write_text(source)
    ported = port_source(source, str(tmp_path / "train.py")).output
    assert ported.startswith("import os\n\n" + A + "from numpy import ones\nimport torch\n")
    (tmp_path / "pyproject.toml").write_text('[tool.isort]\nknown_first_party = ["accel_abstraction"]\n')
    (tmp_path / "mypkg").mkdir()
    source = "import os\n\nimport torch\n\nimport mypkg\n\nx = y.cuda()\n"
    (tmp_path / "train.py").write_text(source)
    _style_cache_clear()
    ported = port_source(source, str(tmp_path / "train.py")).output
    assert ported.startswith("import os\n\nimport torch\n\n" + A + "import mypkg\n")  # first party, found in the root


def _style_cache_clear() -> None:
    from accel_abstraction.porting.import_order import _style_in

    _style_in.cache_clear()


def test_existing_accel_import_is_reused() -> None:
    source = HA + "x = y.cuda()\n"
    assert port_source(source).output == HA + "x = y.to(accel.device())\n"


def test_cuda_imports_are_dropped_only_when_unused_and_not_commented() -> None:
    source = (
        "import torch\nfrom torch.cuda.amp import GradScaler, custom_fwd\n"
        "# needed by the kernels below\nfrom torch.cuda import synchronize\n"
        "s = GradScaler()\nsynchronize()\n"
    )
    assert port_source(source).output == (
        A + "import torch\nfrom torch.cuda.amp import custom_fwd\n"
        "# needed by the kernels below\nfrom torch.cuda import synchronize\n"
        "s = accel.GradScaler()\naccel.synchronize()\n"
    )


def test_positional_autocast_arguments_are_left_for_a_person() -> None:
    result = port_source(H + "with torch.cuda.amp.autocast(True, torch.float16):\n    pass\n")
    assert result.output == result.source
    assert [(f.code, f.suggestion) for f in result.manual] == [
        ("ACC131", "manual: positional arguments differ from accel.autocast(dtype, enabled)")
    ]


def test_sites_in_defaults_and_decorators_are_rewritten() -> None:
    source = H + 'def f(x, device="cuda"):\n    return x\n\n\n@torch.cuda.amp.autocast(enabled=True)\ndef g():\n    pass\n'
    assert port_source(source).output == HA + (
        "def f(x, device=accel.device_type()):\n    return x\n\n\n@accel.autocast(enabled=True and accel.is_accelerator_available())\ndef g():\n    pass\n"
    )


def test_lines_the_port_made_too_long_are_noted_where_no_bracket_can_wrap_them(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from accel_abstraction.porting.import_order import _style_in

    long_original = "# " + "x" * 70 + "\n"
    line = "if some_flag_with_a_name_long_enough and torch.cuda.is_available():\n    n = 1\n"
    source = "import torch\n\n" + long_original + line
    (tmp_path / "pyproject.toml").write_text("[tool.ruff]\nline-length = 72\n")
    (tmp_path / "train.py").write_text(source)
    _style_in.cache_clear()
    result = port_source(source, str(tmp_path / "train.py"))
    assert result.line_limit == 72
    assert result.long_lines == [5]  # the if line (its brackets are empty); the long comment was there before
    plain = port_source(source)  # no settings: 88 or the file's longest line, whichever is more
    assert plain.line_limit == 88 and plain.long_lines == []
    assert port_source("import torch\nx = y.cuda()\n").long_lines == []


DDP_LINE = "m = DDP(model, device_ids=[local_rank], output_device=local_rank)\n"


@pytest.mark.parametrize(
    ("config", "name"),
    [
        ("[tool.ruff]\nline-length = 60\n", "pyproject.toml"),
        ("[tool.black]\nline-length = 60\n", "pyproject.toml"),
        ("line-length = 60\n", "ruff.toml"),
        ("[isort]\nline_length = 60\n", "setup.cfg"),
        ("[flake8]\nmax-line-length = 60\n", "setup.cfg"),
    ],
)
def test_a_rewritten_line_over_the_projects_limit_is_wrapped_in_its_brackets(tmp_path, config: str, name: str) -> None:  # type: ignore[no-untyped-def]
    from accel_abstraction.porting.import_order import _style_in

    (tmp_path / name).write_text(config)
    (tmp_path / "train.py").write_text("import torch\n\n" + DDP_LINE)
    _style_in.cache_clear()
    result = port_source("import torch\n\n" + DDP_LINE, str(tmp_path / "train.py"))
    assert result.output.endswith(
        "m = DDP(\n    model,\n    device_ids=accel.ddp_device_ids(local_rank),\n    output_device=accel.ddp_output_device(local_rank),\n)\n"
    )
    assert result.line_limit == 60 and result.long_lines == []
    assert max(map(len, result.output.splitlines())) <= 60


def test_wrapping_to_88_keeps_arguments_on_one_line_where_they_fit_and_parenthesizes_a_value() -> None:
    source = "import torch\n\n\ndef f():\n    for i in y:\n        n_devices_for_training_here = torch.cuda.device_count()  # note\n        x = torch.cuda.get_rng_state(some_long_argument_name_here, another_argument)\n"
    out = port_source(source).output
    assert "        n_devices_for_training_here = (\n            accel.device_count() if accel.is_accelerator_available() else 0\n        )  # note\n" in out
    assert max(map(len, out.splitlines())) <= 88, out
    assert port_source(out).output == out


def test_a_file_already_over_88_without_settings_is_not_wrapped() -> None:
    source = "import torch\n# " + "x" * 100 + "\n" + DDP_LINE
    out = port_source(source).output
    assert out.endswith("m = DDP(model, device_ids=accel.ddp_device_ids(local_rank), output_device=accel.ddp_output_device(local_rank))\n")


def test_wrapping_never_changes_the_syntax_tree() -> None:
    from accel_abstraction.porting.wrap import wrap_long_lines

    for line in ('x = f("a, b", [1, 2], {"k": (3, 4)}, *rest, **kw)  # c', "y = f(a for a in b if a and some_long_condition)", "return g(1)(2)"):
        before = "def h():\n    " + line + "\n"
        after = wrap_long_lines("", before, 20)
        assert ast.dump(ast.parse(after)) == ast.dump(ast.parse(before)), after


@pytest.mark.parametrize(
    ("imports", "use", "ported_use"),
    [
        ("from torch.cuda import device_count as cuda_device_count\n", "n = cuda_device_count()\n",
         "n = accel.device_count() if accel.is_accelerator_available() else 0\n"),
        ("from torch.backends import cudnn as cd\n", "cd.benchmark = True\n", "accel.set_benchmark(True)\n"),
        ("from torch.cuda.amp import autocast as ac\n", "with ac():\n    pass\n",
         "with accel.autocast(enabled=accel.is_accelerator_available()):\n    pass\n"),
        ("import torch.cuda as tc\n", "tc.synchronize()\n", "accel.synchronize()\n"),
    ],
    ids=["device_count as", "cudnn as", "autocast as", "torch.cuda as"],
)
def test_alias_import_is_ported_with_its_calls_and_removed(imports: str, use: str, ported_use: str) -> None:
    result = port_source("import torch\n" + imports + "\n" + use)
    assert result.error is None
    assert result.output == "import accel_abstraction as accel\nimport torch\n\n" + ported_use  # isort order, one section
    assert result.manual == []


def test_alias_import_kept_where_a_use_needs_a_person() -> None:
    source = "import torch\nfrom torch.cuda import device_count as cuda_device_count\n\nfn = cuda_device_count\n"
    result = port_source(source)
    assert "from torch.cuda import device_count as cuda_device_count\n" in result.output
    assert [(f.line, f.code) for f in result.manual] == [(4, "ACC122"), (2, "ACC122")]  # the use, and the import it keeps
    assert "import stays" in (result.manual[1].suggestion or "")


@pytest.mark.parametrize(
    ("line", "code"),
    [
        ("from torch.cuda import device_count as cuda_device_count", "ACC122"),
        ("from torch.backends import cudnn as cb", "ACC189"),
        ("from torch.cuda.amp import autocast as ac", "ACC131"),
        ("from torch.cuda import ipc_collect as collect", "ACC129"),
    ],
)
def test_alias_import_is_reported_at_the_import_and_dropped_when_unused(line: str, code: str) -> None:
    source = "import torch\n" + line + "\n\nx = 1\n"
    found = scan_source(source).findings
    assert [(f.line, f.code) for f in found] == [(2, code)]
    assert found[0].fix is not None
    result = port_source(source)
    assert result.output == "import torch\n\nx = 1\n"
    assert result.manual == [] and [f.line for f in result.applied] == [2]


def test_alias_import_is_reported_at_the_import_when_used_too() -> None:
    source = "import torch\nfrom torch.cuda import device_count as cuda_device_count\n\nn = cuda_device_count()\n"
    assert [(f.line, f.code) for f in scan_source(source).findings] == [(2, "ACC122"), (4, "ACC122")]
    assert sorted(f.line for f in port_source(source).applied) == [2, 4]


def test_plain_and_unrenamed_cuda_imports_are_not_reported_at_the_import() -> None:
    for line in ("from torch.cuda.amp import GradScaler, autocast", "import torch.cuda as tc", "from torch import cuda"):
        assert scan_source("import torch\n" + line + "\n").findings == [], line
