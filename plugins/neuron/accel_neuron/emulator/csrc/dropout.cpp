// aten::dropout / dropout_ at AutogradPrivateUse1, as the CPU decomposes them.
//
// The CPU's decomposition (noise.bernoulli_(1-p).div_(1-p) * input) instead of the fused native_dropout
// PyTorch picks for PrivateUse1. Each sub-op is dispatched from the top: autograd records them, and
// bernoulli_ takes the per-op path, which draws from the device's default generator.
//
// Twin: composite_overrides.py's _dropout, the Python per-op path's kernel (the path without a C++
// compiler, or ACCEL_NEURON_EMULATOR_HOT_PATH=python). Both make the same sub-ops in the same order, so
// the same random stream bit for bit; test_emulator_hot_path.py's
// test_compiled_dropout_draws_the_python_kernels_stream_bitwise runs both and compares them.

#include "emulator.h"

namespace accel_neuron_emu {
namespace {

// The one decomposition: `input` times the dropout factor, in place (`in_place`) or into a new tensor.
at::Tensor dropout(const at::Tensor& input, double p, bool train, bool in_place) {
  TORCH_CHECK_VALUE(p >= 0 && p <= 1, "dropout probability has to be between 0 and 1, but got ", p);
  if (!train || p == 0 || input.numel() == 0) return input;
  at::Tensor factor;
  if (p == 1) {
    factor = at::zeros({}, at::TensorOptions().dtype(input.scalar_type()).device(input.device()));
  } else {
    factor = at::empty_like(input);
    factor.bernoulli_(1 - p);
    factor.div_(1 - p);
  }
  return in_place ? input.mul_(factor) : input * factor;
}

}  // namespace

at::Tensor dropout_kernel(const at::Tensor& input, double p, bool train) {
  return dropout(input, p, train, /*in_place=*/false);
}

at::Tensor& dropout_inplace_kernel(at::Tensor& input, double p, bool train) {
  dropout(input, p, train, /*in_place=*/true);
  return input;
}

}  // namespace accel_neuron_emu
