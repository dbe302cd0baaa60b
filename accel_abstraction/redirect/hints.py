"""The "port to" column of the redirect's report, read from the porting tools' tables.

A redirected API named by its qualified name (``torch.cuda.synchronize``) takes the hint of
its row in the shared mapping table (:func:`accel_abstraction.porting.mapping.hint_for`).
The redirect also reports patterns that are not one qualified name (``Tensor.cuda()``,
``device="cuda"`` of a factory, ``torch.autocast("cuda")``); each is reported by a rule of
``accel scan``, and takes that rule's suggestion (:data:`RULE_OF` holds the rule objects, so
a rule renamed or removed fails at import). Nothing here words a hint of its own: the
scanner, the codemod and the redirect say the same thing.
"""

from __future__ import annotations

from ..porting.mapping import hint_for
from ..porting.rules import Rule
from ..porting.rules import acc101_cuda_device_string as device_string
from ..porting.rules import acc111_cuda_method as cuda_method
from ..porting.rules import acc112_is_cuda as is_cuda
from ..porting.rules import acc132_autocast_cuda as autocast_cuda
from ..porting.rules import acc133_grad_scaler as grad_scaler
from ..porting.rules import acc171_nccl_backend as nccl_backend
from ..porting.rules import acc172_ddp_device_ids as parallel_devices
from ..porting.rules import acc191_pin_memory as pin_memory

__all__ = ["DEVICE_ARGUMENT", "RULE_OF", "port_hint"]

#: Report labels that are patterns, not qualified names -> the scan rule reporting the same
#: pattern (the rule object: a rule renamed or removed fails here, at import).
RULE_OF: dict[str, Rule] = {
    "Tensor.cuda()": cuda_method.RULE,
    "Module.cuda()": cuda_method.RULE,
    "Tensor.is_cuda": is_cuda.RULE,
    "Tensor.to(cuda)": device_string.RULE,
    "Module.to(cuda)": device_string.RULE,
    "Module.to_empty(device=cuda)": device_string.RULE,
    "torch.set_default_device(cuda)": device_string.RULE,
    'with torch.device("cuda")': device_string.RULE,
    "torch.load(map_location=cuda)": device_string.RULE,
    'torch.Generator(device="cuda")': device_string.RULE,
    "Tensor.pin_memory()": pin_memory.RULE,
    "DataLoader(pin_memory=True)": pin_memory.RULE,
    'torch.autocast("cuda")': autocast_cuda.RULE,
    'torch.amp.GradScaler("cuda")': grad_scaler.RULE,
    "torch.distributed.init_process_group(backend='nccl')": nccl_backend.RULE,
    "torch.distributed.new_group(backend='nccl')": nccl_backend.RULE,
    # waits for every rank only because the group was moved off NCCL: the line to port is that one
    "torch.distributed.destroy_process_group()": nccl_backend.RULE,
    "DistributedDataParallel(device_ids=...)": parallel_devices.RULE,
    "FullyShardedDataParallel(device_id=...)": parallel_devices.RULE,
}
#: The rule of every label ``<factory>(device=cuda)`` (``torch.zeros(device=cuda)``, ``Tensor.new_ones(device=cuda)``).
DEVICE_ARGUMENT: Rule = device_string.RULE


def port_hint(label: str) -> str:
    """What to port the redirected ``label`` to: its mapping-table row, else its scan rule's suggestion."""
    rule = RULE_OF.get(label)
    if rule is None and "(device=cuda)" in label:
        rule = DEVICE_ARGUMENT
    if rule is not None and rule.suggestion:
        return rule.suggestion
    return hint_for(label)
