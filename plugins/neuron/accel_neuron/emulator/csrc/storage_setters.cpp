// set_ with a storage on the compiled per-op path: the CPU kernel run on the neuron tensor itself.
//
// `t.set_(storage, ...)` re-points a neuron tensor at a neuron storage, which a CPU view cannot express;
// like the Python kernels of these overloads (kernels.py, set_source_storage and
// set_source_storage_offset: their twins, which the Python per-op path runs), the CPU kernel runs on the
// neuron tensor itself once the storage is known to be on the tensor's device. A Python kernel call
// costs some 9 us where the CPU's set_ costs 3; `copy.deepcopy` of a neuron tensor makes three (the
// storage's clone and copy_, then the tensor's set_), and PyTorch's test files deepcopy their
// inputs and gradients thousands of times a test. Every other call (a storage on another device, whose
// error the Python kernel raises in its words; sizes without strides) is handed to the Python kernel
// (PrivateUse3), so the two paths cannot part.

#include "emulator.h"

#include <ATen/ops/set_ops.h>

#include <string>

namespace accel_neuron_emu {
namespace {

const c10::DispatchKeySet kCpuKeys(c10::DispatchKey::CPU);
const c10::DispatchKeySet kPythonKernelKeys(c10::DispatchKey::PrivateUse3);

// Whether the CPU kernel may run on `self` with `source`: the storage is on the tensor's device.
bool same_device(const at::Tensor& self, const at::Storage& source) {
  return source.device() == self.device();
}

// set_.source_Storage: the whole storage as a 1-D tensor (the Python kernel's geometry).
at::Tensor& set_storage(at::Tensor& self, at::Storage source) {
  if (!same_device(self, source)) {
    slow_calls.fetch_add(1, std::memory_order_relaxed);
    return at::_ops::set__source_Storage::redispatch(kPythonKernelKeys, self, std::move(source));
  }
  fast_calls.fetch_add(1, std::memory_order_relaxed);
  const int64_t n = static_cast<int64_t>(source.nbytes() / self.dtype().itemsize());
  const c10::SymInt size[] = {c10::SymInt(n)};
  const c10::SymInt stride[] = {c10::SymInt(1)};
  return at::_ops::set__source_Storage_storage_offset::redispatch(
      kCpuKeys, self, std::move(source), c10::SymInt(0), size, stride);
}

// set_.source_Storage_storage_offset: the given geometry (sizes without strides: the Python kernel).
at::Tensor& set_storage_offset(
    at::Tensor& self, at::Storage source, c10::SymInt offset, c10::SymIntArrayRef size, c10::SymIntArrayRef stride) {
  if (!same_device(self, source) || (stride.empty() && !size.empty())) {
    slow_calls.fetch_add(1, std::memory_order_relaxed);
    return at::_ops::set__source_Storage_storage_offset::redispatch(
        kPythonKernelKeys, self, std::move(source), std::move(offset), size, stride);
  }
  fast_calls.fetch_add(1, std::memory_order_relaxed);
  return at::_ops::set__source_Storage_storage_offset::redispatch(
      kCpuKeys, self, std::move(source), std::move(offset), size, stride);
}

}  // namespace

bool register_storage_setter(torch::Library& lib, const std::string& name) {
  if (name == "set_.source_Storage") {
    lib.impl(name.c_str(), TORCH_FN(set_storage));
    return true;
  }
  if (name == "set_.source_Storage_storage_offset") {
    lib.impl(name.c_str(), TORCH_FN(set_storage_offset));
    return true;
  }
  return false;
}

}  // namespace accel_neuron_emu
