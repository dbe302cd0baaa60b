"""The "port to" column of the redirect's report, read from the porting tools' tables.

A redirected API named by its qualified name (``torch.cuda.synchronize``) takes the hint of
its row in the shared mapping table (:func:`accel_abstraction.porting.mapping.hint_for`).
The redirect also reports patterns that are not one qualified name (``Tensor.cuda()``,
``device="cuda"`` of a factory, ``torch.autocast("cuda")``); each is reported by a rule of
``accel scan``, and takes that rule's suggestion (:data:`RULE_OF`). Nothing here words a
hint of its own: the scanner, the codemod and the redirect say the same thing.
"""

from __future__ import annotations

from ..porting.mapping import hint_for
from ..porting.rules import RULES_BY_CODE

__all__ = ["RULE_OF", "port_hint"]

#: Report labels that are patterns, not qualified names -> the scan rule reporting the same pattern.
RULE_OF: dict[str, str] = {
    "Tensor.cuda()": "ACC111",
    "Module.cuda()": "ACC111",
    "Tensor.is_cuda": "ACC112",
    "Tensor.to(cuda)": "ACC101",
    "Module.to(cuda)": "ACC101",
    "Module.to_empty(device=cuda)": "ACC101",
    "torch.set_default_device(cuda)": "ACC101",
    'with torch.device("cuda")': "ACC101",
    "torch.load(map_location=cuda)": "ACC101",
    'torch.Generator(device="cuda")': "ACC101",
    "Tensor.pin_memory()": "ACC191",
    "DataLoader(pin_memory=True)": "ACC191",
    'torch.autocast("cuda")': "ACC132",
    'torch.amp.GradScaler("cuda")': "ACC133",
    "torch.distributed.init_process_group(backend='nccl')": "ACC171",
    "torch.distributed.new_group(backend='nccl')": "ACC171",
    "DistributedDataParallel(device_ids=...)": "ACC104",
}


def port_hint(label: str) -> str:
    """What to port the redirected ``label`` to: its mapping-table row, else its scan rule's suggestion."""
    code = RULE_OF.get(label)
    if code is None and "(device=cuda)" in label:
        code = "ACC101"  # torch.zeros(device=cuda), Tensor.new_ones(device=cuda), ...
    if code is not None:
        rule = RULES_BY_CODE.get(code)
        if rule is not None and rule.suggestion:
            return rule.suggestion
    return hint_for(label)
