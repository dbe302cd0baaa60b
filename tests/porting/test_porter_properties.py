"""Properties of `accel port` over generated modules: parses, idempotent, clean code untouched."""

from __future__ import annotations

import ast
import keyword

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from accel_abstraction.porting import port_source, scan_source

IDENT = st.from_regex(r"[a-z][a-z0-9_]{0,5}", fullmatch=True).filter(
    lambda s: not keyword.iskeyword(s) and s not in {"torch", "os", "accel", "str", "print"}
)
SMALL = st.integers(min_value=0, max_value=7)

COUPLED = [
    '{a} = torch.zeros({n}, device="cuda")',
    "{a} = {b}.cuda()",
    "{a} = {b}.cuda({n}, non_blocking=True)",
    '{a} = torch.device("cuda:{n}")',
    '{a} = torch.device("cuda", {n})',
    "if {a}.is_cuda:\n    {b} = {n}",
    "{a} = [{b}.is_cuda, {n}]",
    "torch.cuda.manual_seed_all({n})",
    'with torch.autocast("cuda", dtype=torch.bfloat16):\n    {a} = {n}',
    "with torch.cuda.amp.autocast(enabled=torch.cuda.is_available()):\n    {a} = {n}",
    "torch.backends.cudnn.benchmark = {flag}",
    '{a} = {b}.to(f"cuda:{{{c}}}")',
    "{a} = {b}.to({n})",
    "{a} = loader({b}, pin_memory=True)",
    '{a} = os.environ["CUDA_VISIBLE_DEVICES"]',
    "{a} = torch.cuda.device_count() + {n}",
    'torch.distributed.init_process_group(backend="nccl")',
    'if {a}.device.type == "cuda":\n    torch.cuda.synchronize()',
    '{a} = f"cuda:{{{b}}}"',
    "{a} = torch.amp.GradScaler(\n    'cuda',\n    init_scale={n}.0,\n)",
]
CLEAN = [
    "{a} = {n} + {m}",
    "def {a}({b}):\n    return {b} * {n}",
    "# torch.cuda.synchronize() {n}",
    '{a} = "cuda is fast"',
    'print("cuda", {n})',
    "{a} = {b}.to(torch.float16)",
    'class K{n}:\n    """Runs on cuda."""\n\n    {a} = {m}',
    "use_cuda = {flag}",
    'if {a}.device.type == "cpu":\n    {b} = {n}',
    '{a} = torch.device("cpu")',
    "{a} = ({b},\n      {n})  # trailing comment",
]
HEADERS = ["", '"""Module docstring."""\n', "from __future__ import annotations\n", "#!/usr/bin/env python\n# -*- coding: utf-8 -*-\n"]


@st.composite
def statements(draw: st.DrawFn, templates: list[str]) -> str:
    template = draw(st.sampled_from(templates))
    a, b, c = draw(IDENT), draw(IDENT), draw(IDENT)
    return template.format(a=a, b=b, c=c, n=draw(SMALL), m=draw(SMALL), flag=draw(st.sampled_from(["True", "False"])))


@st.composite
def modules(draw: st.DrawFn, coupled: bool) -> str:
    pool = COUPLED + CLEAN if coupled else CLEAN
    body = draw(st.lists(statements(pool), min_size=1, max_size=8))
    blank = draw(st.sampled_from(["\n", "\n\n"]))
    return draw(st.sampled_from(HEADERS)) + "import os\nimport torch\n" + blank + "\n".join(body) + "\n"


FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(modules(coupled=True))
def test_output_parses_and_second_run_changes_nothing(source: str) -> None:
    first = port_source(source)
    assert first.error is None
    ast.parse(first.output)
    assert port_source(first.output).output == first.output
    assert not [f for f in scan_source(first.output).findings if f.portable]
    if first.changed:
        assert first.output.count("import accel_abstraction as accel") == 1


@FAST
@given(modules(coupled=False))
def test_module_without_coupling_is_returned_unchanged(source: str) -> None:
    assert port_source(source).output == source


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("cuda()=.:\"' \n\tx0_[]{}#")), max_size=80))
def test_arbitrary_text_never_raises_and_broken_text_is_left_alone(text: str) -> None:
    result = port_source("import torch\n" + text)
    if result.error is not None:
        assert result.output == result.source
    if result.changed:
        ast.parse(result.output)
