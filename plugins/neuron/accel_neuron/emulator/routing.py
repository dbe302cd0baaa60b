"""Which path serves each aten op on the emulated device: the one routing table.

Read by the Python kernel (``fallback.py``), the explicit kernels (``kernels.py``), the
registration (``registration.py``) and, through :func:`compiled_path_tables`, by the C++
core's compiled per-op path (``csrc/plans.cpp``, handed the names at install by
``native.enable_fast_path``). An op not named here takes the common case: the compiled
kernel when it can (``make_plan`` in the C++ core: dense neuron tensors on one device, no
generator, not random), else the Python kernel.

Routes:

* ``PYTHON_ONLY``: every call handled by the Python kernel (arguments or results that are CPU
  tensors by design, ops that re-point or resize a written argument);
* ``COPY_OPS``: CPU and neuron tensors may meet (no device check);
* ``DEVICE_AGNOSTIC_VIEWS``: the CPU kernel runs on the neuron tensor itself (no CPU view);
* ``STORAGE_SETTERS``: ``set_`` with a storage on the tensor's device runs the CPU kernel on the
  neuron tensor itself (the compiled path's own kernel; any other call: the Python kernel);
* ``KEEP_DECOMPOSITION`` (and every in-place view, :func:`keeps_decomposition`): the
  CompositeExplicitAutograd kernel keeps decomposing on neuron.
"""

from __future__ import annotations

#: Ops that legitimately mix CPU and neuron tensors: the copies, and ops PyTorch declares with
#: ``device_check: NoCheck`` that only read metadata (forward-mode AD's ``copy_`` of a neuron dual
#: tensor into a CPU tensor compares the two with ``is_same_size`` and ``_has_same_storage_numel``,
#: as it does on CUDA; ``is_set_to`` answers False for tensors on two devices).
COPY_OPS = frozenset(
    {
        "aten::copy_",
        "aten::_to_copy",
        "aten::copy",
        "aten::_copy_from",
        "aten::_copy_from_and_resize",
        "aten::lift_fresh_copy",
        "aten::set_",
        "aten::is_same_size",
        "aten::_has_same_storage_numel",
        "aten::is_set_to",
    }
)
#: Tensor arguments that are CPU tensors by design on every device (PyTorch moves them there).
CPU_ARGS = {
    "aten::_pack_padded_sequence": frozenset({"lengths"}),
    "aten::_pad_packed_sequence": frozenset({"batch_sizes"}),
    "aten::_pack_padded_sequence_backward": frozenset({"batch_sizes"}),
}
#: Results that are CPU tensors by design (return positions).
CPU_RETURNS = {"aten::_pack_padded_sequence": frozenset({1})}
#: Ops that change the storage or geometry of a written argument.
RESHAPING_OPS = frozenset({"aten::set_", "aten::resize_", "aten::_resize_output_", "aten::resize_as_"})
#: Op names whose every call the Python kernel handles.
PYTHON_ONLY = frozenset(RESHAPING_OPS | set(CPU_ARGS) | set(CPU_RETURNS))

#: View overloads whose CPU kernel only builds a TensorImpl over the input's storage, whatever its
#: device: on neuron tensors they run that kernel directly (no CPU view, no re-wrapping).
DEVICE_AGNOSTIC_VIEWS = (
    "as_strided",
    "as_strided_",
    "view",
    "view.dtype",
    "_reshape_alias",
    "unfold",
    "view_as_real",
    "view_as_complex",
)

#: ``set_`` overloads with a storage argument: a Python kernel each (``kernels.py``); on the compiled
#: path a C++ kernel (``csrc/storage_setters.cpp``) runs the CPU kernel on the neuron tensor when the
#: storage is on its device, and hands every other call to the Python one.
STORAGE_SETTERS = ("set_.source_Storage", "set_.source_Storage_storage_offset")

#: Overloads whose Python kernel the compiled path puts under its own C++ kernel (on PrivateUse3).
COMPILED_OWN_KERNELS = frozenset(DEVICE_AGNOSTIC_VIEWS + STORAGE_SETTERS)

#: Ops with a CompositeExplicitAutograd kernel that must keep decomposing on neuron: their
#: decomposition calls other neuron kernels that do the right thing (``_test_parallel_materialize``
#: asks for the neuron tensor's own mutable data inside ``at::parallel_for``, where c10 forbids
#: materializing a copy-on-write storage: run on a CPU view it would ask the view's instead).
KEEP_DECOMPOSITION = frozenset(
    {"aten::resize_as_", "aten::resize_as_sparse_", "aten::_test_parallel_materialize"}
)


def keeps_decomposition(name: str, inplace_view: bool) -> bool:
    """Whether op `name` (``aten::t_``) keeps its CompositeExplicitAutograd kernel on neuron.

    :data:`KEEP_DECOMPOSITION`, and every in-place view (`inplace_view`: the op's tag; ``t_``,
    ``transpose_``, ``unsqueeze_``, ``squeeze_``, ``detach_``): their composite kernels only
    restride ``self`` through ``as_strided_``, a device-agnostic view here, where the generic kernel
    would run them on a CPU view and copy the geometry back (the Python kernel, some 50 us a call).
    """
    return name.split(".")[0] in KEEP_DECOMPOSITION or inplace_view


def compiled_path_tables() -> tuple[list[str], list[str], list[str]]:
    """The routes the C++ core needs: (Python-only op names, copy op names, device-agnostic views)."""
    return sorted(PYTHON_ONLY), sorted(COPY_OPS), list(DEVICE_AGNOSTIC_VIEWS)
