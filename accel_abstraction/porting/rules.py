"""The rule table: every kind of CUDA coupling `accel scan` knows, with a stable code.

A :class:`Rule` is plain data (code, category, message, suggested rewrite).  Built-in
rules are detected by :mod:`accel_abstraction.porting.scanner`, which knows how to find
each code; plugin rules bring their own way of matching:

- ``names``: fully qualified names (after import-alias resolution) that are coupling,
  e.g. ``("cupy", "mylib.gpu.sync")``.  A use of the name, or of anything under it
  (``cupy.asarray``), is reported once, at the outermost expression that resolves.
- ``matcher``: a callable ``matcher(node, ctx) -> str | None`` called with every
  :class:`ast.Call` and :class:`ast.Attribute` node; return a message (or ``""`` to use
  the rule's own) to report the node, ``None`` to pass.  ``ctx.qualname(expr)`` resolves
  an expression such as ``tc.synchronize`` to ``"torch.cuda.synchronize"``.

Plugin rules are reported, never rewritten (``portable=False``): ``accel port`` lists
them under "could not port".  A plugin adds rules through the ``accel_scan_rules`` hook::

    from accel_abstraction.porting.rules import Rule

    @hookimpl
    def accel_scan_rules(register):
        register(Rule("XYZ001", "manual", "uses mylib's CUDA kernels", names=("mylib.cuda",)))

The ``precheck`` strings (case-sensitive) of a rule let the scanner skip a file without
parsing it when none of them occurs in its text, and skip statements whose lines
contain none of them (nor a name the rule's ``names`` cover); a plugin rule without
``precheck`` turns both off.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol


class MatchContext(Protocol):
    """What a plugin matcher may ask about the file being scanned."""

    path: str

    def qualname(self, node: ast.AST) -> str | None:
        """The fully qualified dotted name ``node`` refers to, or ``None``."""
        ...


Matcher = Callable[[ast.AST, MatchContext], "str | None"]

#: Rule categories, one per rule.
CATEGORIES: tuple[str, ...] = (
    "device-string",
    "tensor",
    "cuda-api",
    "amp",
    "rng",
    "memory",
    "sync-streams",
    "distributed",
    "numerics",
    "data",
    "env",
    "manual",
)

_CODE_RE = re.compile(r"^[A-Z]{2,6}[0-9]{3}$")


@dataclass(frozen=True)
class Rule:
    """One kind of coupling.

    Attributes:
        code: stable identifier, e.g. ``"ACC101"`` (letters then three digits).
        category: one of :data:`CATEGORIES`, or a plugin's own word.
        message: what was found, one line.
        suggestion: the portable rewrite, shown in parentheses after the message.
        portable: whether ``accel port`` rewrites it (built-in rules only).
        names: qualified names this rule reports (plugin rules).
        matcher: callable reporting nodes (plugin rules), see the module docstring.
        precheck: substrings one of which a file must contain for this rule to fire.
        examples: ``(source, ported)`` pairs the rule must report; ``ported`` is the line
            ``accel port`` makes of the last line of ``source`` (``None``: reported, not
            rewritten).  The first one is shown in the docs table.
        counterexamples: sources the rule must not report (look-alikes).
    """

    code: str
    category: str
    message: str
    suggestion: str | None = None
    portable: bool = False
    names: tuple[str, ...] = ()
    matcher: Matcher | None = field(default=None, compare=False)
    precheck: tuple[str, ...] = ()
    examples: tuple[tuple[str, str | None], ...] = field(default=(), compare=False)
    counterexamples: tuple[str, ...] = field(default=(), compare=False)

    def __post_init__(self) -> None:
        if not _CODE_RE.match(self.code):
            raise ValueError(f"rule code {self.code!r} must be 2-6 capital letters then 3 digits, e.g. ACC101")


def _r(
    code: str,
    category: str,
    message: str,
    suggestion: str | None = None,
    portable: bool = True,
    examples: tuple[tuple[str, str | None], ...] = (),
    counterexamples: tuple[str, ...] = (),
) -> Rule:
    return Rule(code, category, message, suggestion, portable, examples=examples, counterexamples=counterexamples)


#: Substrings (case-sensitive) one of which a file must contain for a built-in rule to fire,
#: besides bare integer devices (``.to(0)``, ``device=local_rank``), which the scanner
#: tests with one regular expression.
BUILTIN_PRECHECK: tuple[str, ...] = (
    "cuda", "CUDA", "cudnn", "CUDNN", "nccl", "NCCL", "pin_memory", "GradScaler", "apex", "cupy", "nvtx",  # accel: ignore
    "nvml", "_scaled_mm", "fused=True", '"fused"', "'fused'", "use_fused", "peak_flops", "flops_promised", "e12",
    "nvidia-smi", "gencode", "generate-code", "arch=sm_",  # accel: ignore
    '.cu"', ".cu'", ".cuh",
    # CUDA libraries' variables, compiled CUDA extension modules, NVIDIA tools, torch's NVIDIA environment report
    "CUBLAS", "CUFFT", "CURAND", "CUSPARSE", "NVIDIA_", "NVTE_", "amp_C", "nvcc", "cuobjdump", "nvdisasm", "nvprof",  # accel: ignore
    "collect_env", "triton",
)

# Each built-in rule carries examples (``import os`` and ``import torch`` are implied);
# tests/porting/test_rules.py checks every one, and the docs table shows the first.
BUILTIN_RULES: tuple[Rule, ...] = (
    # device strings
    _r("ACC101", "device-string", 'hard-coded "cuda" device string', "accel.device() / accel.device_type()",
       examples=(('x = torch.zeros(2, device="cuda")', "x = torch.zeros(2, device=accel.device())"),
                 ('device = "cuda"', "device = accel.device_type()"),
                 ('cfg = {"device": "cuda:1"}', 'cfg = {"device": str(accel.device(1))}'),
                 ('x = torch.zeros(2, device=f"cuda")', "x = torch.zeros(2, device=accel.device())"),
                 ('d = getattr(model, "device", "cuda")', 'd = getattr(model, "device", accel.device_type())'),
                 ('def get_device():\n    return "cuda"', "    return accel.device_type()"),
                 ('torch.set_default_device("cuda")', "torch.set_default_device(accel.device())"),
                 ('g = torch.Generator("cuda")', "g = torch.Generator(accel.device())"),
                 ('dl = DataLoader(ds, pin_memory_device="cuda")', "dl = DataLoader(ds, pin_memory_device=accel.device_type())")),
       counterexamples=('names = ["cuda", "cpu"]', 'print("moving to cuda")', 'def get_name():\n    return "cuda"',
                        'd = getattr(model, "kind", "cuda")')),
    _r("ACC102", "device-string", 'torch.device("cuda", index)', "accel.device(index)",
       examples=(('d = torch.device("cuda", rank)', "d = accel.device(rank)"),),
       counterexamples=('d = torch.device("cpu", 0)',)),
    _r("ACC103", "device-string", "CUDA device string built at run time", 'f"{accel.device_type()}:{i}"',
       examples=(("device = f'cuda:{rank}'", "device = f'{accel.device_type()}:{rank}'"),
                 ('y = x.to("cuda:" + str(rank))', "y = x.to(accel.device(rank))"),
                 ('name = "cuda:%d" % i', 'name = (accel.device_type() + ":%d") % i')),
       counterexamples=('print(f"cuda:{rank} ready")', 'log = f"using cuda {rank}"')),
    _r("ACC104", "device-string", "bare integer device means a CUDA device", "accel.device(index)",
       examples=(("y = x.to(local_rank)", "y = x.to(accel.device(local_rank))"),
                 ("d = torch.device(0)", "d = accel.device(0)"),
                 ("torch.distributed.barrier(device_ids=[local_rank])", None),
                 ('p.add_argument("--device", type=int, default=0)', None)),
       counterexamples=("m = DDP(model, device_ids=[local_rank])", "y = x.to(torch.float16)",
                        'p.add_argument("--epochs", type=int, default=0)')),
    _r("ACC113", "device-string", "device-type test: false on any other accelerator, so its branch is skipped",
       '!= "cpu" (an accelerator)',
       examples=(('if x.device.type == "cuda":\n    pass', 'if x.device.type != "cpu":'),
                 ("device_type = 'cuda' if 'cuda' in device else 'cpu'",
                  "device_type = accel.device_type() if 'cpu' not in device else 'cpu'"),
                 ('ok = device.startswith("cuda")', 'ok = not device.startswith("cpu")')),
       counterexamples=('if accel.device_type() == "cuda":\n    pass', 'if x.device.type == "cpu":\n    pass',
                        'ok = kind == "cuda"')),
    # tensors and modules
    _r("ACC111", "tensor", ".cuda() moves to a CUDA device", ".to(accel.device())",
       examples=(("y = x.cuda(args.gpu, non_blocking=True)", "y = x.to(accel.device(args.gpu), non_blocking=True)"),),
       counterexamples=("use_cuda = args.cuda",)),
    _r("ACC112", "tensor", ".is_cuda tests for a CUDA device", '.device.type != "cpu" (on an accelerator)',
       examples=(("ok = x.is_cuda and y", 'ok = x.device.type != "cpu" and y'),)),
    # torch.cuda device API
    _r("ACC121", "cuda-api", "torch.cuda.is_available()", "accel.is_accelerator_available() (False on the cpu backend)",
       examples=(("ok = torch.cuda.is_available()", "ok = accel.is_accelerator_available()"),)),
    _r("ACC122", "cuda-api", "torch.cuda.device_count()", "accel.device_count()",
       examples=(("n = torch.cuda.device_count()", "n = accel.device_count() if accel.is_accelerator_available() else 0"),)),
    _r("ACC123", "cuda-api", "torch.cuda current/set device or device name", "accel.current_device() / accel.set_device(i) / accel.device_name()",
       examples=(("torch.cuda.set_device(rank)", "accel.set_device(rank)"),)),
    _r("ACC124", "cuda-api", "torch.cuda.is_bf16_supported()", "accel.is_bf16_supported()",
       examples=(("ok = torch.cuda.is_bf16_supported()", "ok = accel.is_bf16_supported() if accel.is_accelerator_available() else False"),)),
    _r(
        "ACC125",
        "cuda-api",
        "CUDA device properties or compute capability",
        "accel.capabilities() says what the device supports",
        portable=False,
        examples=(("p = torch.cuda.get_device_properties(0)", None),),
    ),
    _r("ACC129", "cuda-api", "torch.cuda API without a portable equivalent", None, portable=False,
       examples=(("torch.cuda.ipc_collect()", None),)),
    # AMP
    _r("ACC131", "amp", "torch.cuda.amp.autocast", "accel.autocast(dtype=..., enabled=...)",
       examples=(("with torch.cuda.amp.autocast(use_amp):\n    pass", "with accel.autocast(enabled=use_amp and accel.is_accelerator_available()):"),)),
    _r("ACC132", "amp", 'autocast with device_type "cuda"', "accel.autocast(dtype=..., enabled=...)",
       examples=(('with torch.autocast("cuda", dtype=torch.bfloat16):\n    pass',
                  "with accel.autocast(dtype=torch.bfloat16, enabled=accel.is_accelerator_available()):"),
                 ('ac = torch.autocast if amp else contextlib.nullcontext\nwith ac("cuda"):\n    pass',
                  'with ac(accel.device_type() if accel.is_accelerator_available() else "cuda"):'),
                 ('ctx = functools.partial(torch.autocast, "cuda")',
                  "ctx = functools.partial(torch.autocast, accel.device_type(), enabled=accel.is_accelerator_available())")),
       counterexamples=("with torch.autocast(device_type=device_type):\n    pass", 'ac = torch.autocast\nwith ac("cpu"):\n    pass')),
    _r("ACC133", "amp", "CUDA GradScaler", "accel.GradScaler(...)",
       examples=(("s = torch.cuda.amp.GradScaler(enabled=fp16)", "s = accel.GradScaler(enabled=fp16 and accel.is_accelerator_available())"),),
       counterexamples=('s = torch.amp.GradScaler("cpu")',)),
    _r("ACC139", "amp", "torch.cuda.amp API without a portable equivalent", "torch.amp with device_type=accel.device_type()", portable=False,
       examples=(("f = torch.cuda.amp.custom_fwd(g)", None),)),
    # RNG
    _r("ACC141", "rng", "torch.cuda RNG call", "accel.manual_seed / manual_seed_all / get_rng_state / set_rng_state",
       examples=(("torch.cuda.manual_seed_all(0)", "accel.manual_seed_all(0) if accel.is_accelerator_available() else None"),)),
    # memory
    _r("ACC151", "memory", "torch.cuda memory statistics", "accel.memory_allocated() and friends",
       examples=(("m = torch.cuda.max_memory_allocated()", "m = accel.max_memory_allocated() if accel.is_accelerator_available() else 0"),)),
    # execution
    _r("ACC161", "sync-streams", "torch.cuda.synchronize()", "accel.synchronize()",
       examples=(("torch.cuda.synchronize()", "accel.synchronize()"),)),
    _r("ACC162", "sync-streams", "CUDA streams and events", "accel.Stream / accel.Event / accel.current_stream() / accel.stream(s)",
       examples=(("e = torch.cuda.Event(enable_timing=True)", "e = accel.Event(enable_timing=True)"),)),
    # distributed
    _r("ACC171", "distributed", '"nccl" process-group backend', "accel.dist_backend()",
       examples=(('torch.distributed.init_process_group("nccl")', "torch.distributed.init_process_group(accel.dist_backend())"),
                 ('p.add_argument("--dist-backend", default="nccl")', 'p.add_argument("--dist-backend", default=accel.dist_backend())'),
                 ('ok = args.dist_backend == "nccl"', 'ok = args.dist_backend == (accel.dist_backend() if accel.is_accelerator_available() else "nccl")'),
                 ('if dist.get_backend() == "nccl":\n    pass', 'if dist.get_backend() == (accel.dist_backend() if accel.is_accelerator_available() else "nccl"):'),
                 ('torch.distributed.init_process_group(backend="NCCL")', "torch.distributed.init_process_group(backend=accel.dist_backend())"),
                 ("b = torch.distributed.Backend.NCCL", "b = accel.dist_backend()")),
       counterexamples=('print("nccl backend needs GPUs")', 'ok = "nccl" in value', 'ok = name == "nccl"',
                        'from deepspeed.accelerator import get_accelerator\nok = get_accelerator().communication_backend_name() == "nccl"')),
    # numerics
    _r("ACC181", "numerics", "torch.backends.cudnn.deterministic", "accel.set_deterministic(b)",
       examples=(("torch.backends.cudnn.deterministic = True", "accel.set_deterministic(True) if accel.is_accelerator_available() else None"),)),
    _r("ACC182", "numerics", "torch.backends.cudnn.benchmark", "accel.set_benchmark(b)",
       examples=(("torch.backends.cudnn.benchmark = True", "accel.set_benchmark(True)"),)),
    _r("ACC183", "numerics", "TF32 flag", "accel.set_allow_tf32(b)",
       examples=(("torch.backends.cuda.matmul.allow_tf32 = True", "accel.set_allow_tf32(True)"),
                 ("torch.backends.cuda.matmul.allow_tf32 = True\ntorch.backends.cudnn.allow_tf32 = True",
                  "accel.set_allow_tf32(True)"))),
    _r("ACC189", "numerics", "cuDNN/CUDA backend flag without a portable equivalent", None, portable=False,
       examples=(("torch.backends.cudnn.enabled = False", None),)),
    # data
    _r("ACC191", "data", "pin_memory=True assumes CUDA", "pin_memory=accel.capabilities().pinned_memory",
       examples=(("dl = DataLoader(ds, pin_memory=True)", "dl = DataLoader(ds, pin_memory=accel.capabilities().pinned_memory)"),
                 ("y = x.pin_memory()", None)),
       counterexamples=("if use_cuda:\n    y = x.pin_memory()", "dl = DataLoader(ds, pin_memory=args.pin_mem)")),
    # environment
    _r("ACC192", "env", "CUDA_VISIBLE_DEVICES", "accel.visible_devices_env()",
       examples=(('v = os.environ["CUDA_VISIBLE_DEVICES"]',
                  'v = os.environ[accel.visible_devices_env() if accel.is_accelerator_available() else "CUDA_VISIBLE_DEVICES"]'),)),
    _r("ACC199", "env", "CUDA environment variable", None, portable=False,
       examples=(('v = os.environ.get("NCCL_DEBUG")', None),
                 ('os.environ["CUBLAS_WORKSPACE_CONFIG"] = ":4096:8"', None),
                 ('v = os.environ.get("TORCH_NCCL_BLOCKING_WAIT")', None)),
       counterexamples=('v = os.environ.get("OMP_NUM_THREADS")',)),
    # inherently CUDA
    _r("ACC201", "manual", "custom CUDA extension", "build per backend; no automatic port", portable=False,
       examples=(('m = torch.utils.cpp_extension.load(name="k", sources=["k.cu"])', None),
                 ('flags = ["-gencode=arch=compute_80,code=sm_80"]', None),
                 ("import amp_C", None),
                 ("from fused_layer_norm_cuda import forward", None),
                 ("from torch.utils.cpp_extension import CUDA_HOME", None)),
       counterexamples=("import my_cudalike_utils", "from torch.utils.cpp_extension import BuildExtension")),
    _r("ACC202", "manual", "NVTX ranges or CUDA profiling", "torch.profiler.record_function", portable=False,
       examples=(("torch.cuda.nvtx.range_push('step')", None),
                 ("acts = [torch.profiler.ProfilerActivity.CUDA]", None))),
    _r("ACC203", "manual", "CuPy", "torch operations on accel.device()", portable=False,
       examples=(("import cupy", None),)),
    _r("ACC204", "manual", "NVIDIA apex", "torch.amp / torch.optim equivalents", portable=False,
       examples=(("from apex import amp\nmodel, opt = amp.initialize(model, opt)", None),)),
    _r("ACC205", "manual", "CUDA graphs", "guard with accel.capabilities().graphs", portable=False,
       examples=(("g = torch.cuda.CUDAGraph()", None),)),
    _r("ACC206", "manual", "CUDA toolkit or NVIDIA driver query", "ask accel.backend() / accel.capabilities()", portable=False,
       examples=(("v = torch.version.cuda", None), ('out = subprocess.run(["nvidia-smi"])', None),
                 ('nvcc = os.path.join(home, "bin", "nvcc")', None),  # accel: ignore
                 ("from torch.utils.collect_env import get_nvidia_driver_version", None)),
       counterexamples=("from torch.utils.collect_env import get_pretty_env_info", 'print("install nvcc first")',
                        'row = ("nvcc version", version)')),
    _r("ACC207", "manual", "CUDA-only kernel or capability", "guard with accel.capabilities()", portable=False,
       examples=(("opt = torch.optim.AdamW(params, fused=True)", None),
                 ("use_fused = device_type == 'cuda'", None),
                 ("y = torch._scaled_mm(a, b, scale_a=s, scale_b=s)", None)),
       counterexamples=("opt = torch.optim.AdamW(params, fused=False)",)),
    _r("ACC208", "manual", "hard-coded GPU peak FLOPs (MFU)", "take peak FLOPs from the selected device", portable=False,
       examples=(("flops_promised = 312e12", None),),
       counterexamples=("flops_per_token = 6 * n_params",)),
)

RULES_BY_CODE: dict[str, Rule] = {rule.code: rule for rule in BUILTIN_RULES}
