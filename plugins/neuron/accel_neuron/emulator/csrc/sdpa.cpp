// scaled_dot_product_attention on neuron: PyTorch's own composite, with the CPU's choice of kernel.
//
// ATen's scaled_dot_product_attention (CompositeImplicitAutograd) asks _fused_sdp_choice_stub which
// backend to run when the stub has an entry for the tensors' device, and runs the math path otherwise
// (PrivateUse1 has none). On the CPU the chooser picks the CPU flash kernel where it can. This file gives
// PrivateUse1 an entry that answers what the CPU chooser answers, so the composite runs on neuron
// tensors the ops it runs on CPU tensors (_scaled_dot_product_flash_attention_for_cpu or
// _scaled_dot_product_attention_math, a bool mask converted the same way): results bitwise the CPU's,
// forward and backward (autograd differentiates those ops by their derivatives.yaml formulas), in C++
// (the Python kernel it replaces cost ~48 us a call against the CPU's ~8 us).
//
// The CPU chooser (ATen's sdp_utils_cpp) reads metadata only: sizes, strides, dtypes, requires_grad,
// nesting, grad mode and the global SDP switches. Fake and functional tensors (torch.compile's
// tracing) carry the same metadata, so a traced graph takes the kernel eager takes. One check reads
// the query's device: off the CPU, a mask whose last stride is not 1 rules flash out. The chooser
// is shown, for such a mask, a meta stand-in of the same sizes with a unit last stride.
//
// Twin: composite_overrides.py's _sdpa, the Python per-op path's kernel (the path without a C++
// compiler), which asks the CPU chooser through aten._fused_sdp_choice and calls the same ops.

#include "emulator.h"

#include <ATen/native/transformers/attention.h>
#include <ATen/ops/_fused_sdp_choice_native.h>

namespace accel_neuron_emu {
namespace {

int64_t cpu_sdp_choice(
    const at::Tensor& query,
    const at::Tensor& key,
    const at::Tensor& value,
    const std::optional<at::Tensor>& attn_mask,
    double dropout_p,
    bool is_causal,
    std::optional<double> scale,
    bool enable_gqa) {
  std::optional<at::Tensor> mask = attn_mask;
  if (mask.has_value() && mask->defined() && mask->dim() > 0 && mask->sym_stride(-1) != 1) {
    at::Tensor stand_in = at::empty_symint(mask->sym_sizes(), mask->options().device(at::kMeta));
    if (mask->requires_grad()) stand_in.requires_grad_(true);
    mask = stand_in;
  }
  // The CPU's entry in the stub, called by name: calling the stub itself would link against a
  // DispatchStubImpl signature that differs between torch's build and an extension's (CPU arch macros).
  return at::native::_fused_sdp_choice_cpp(query, key, value, mask, dropout_p, is_causal, scale, enable_gqa);
}

}  // namespace

void enable_sdp_choice(bool on) {
  at::native::_fused_sdp_choice_stub.set_privateuse1_dispatch_ptr(on ? &cpu_sdp_choice : nullptr);
}

}  // namespace accel_neuron_emu
