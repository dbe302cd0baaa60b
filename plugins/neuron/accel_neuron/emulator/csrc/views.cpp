// CPU views of neuron tensors: what CPU kernels get in place of neuron arguments.
//
// Every op hands its CPU kernel a CPU view of each neuron argument: a TensorImpl to allocate, fill
// and free (with its version counter) per argument and call. A foreach op of the optimizer takes
// lists of 30-90 parameters and states, the same tensors every step. So a view the kernel did not
// keep is given back to its neuron storage (NeuronMemory::spare_view, one per storage) and lent
// again to the next op on that storage, its geometry reset when it differs. Taking and giving
// back are atomic exchanges: one call (one thread) holds a lent view at a time. Only a view as clean
// as a fresh one goes back (the kernel kept no reference, no Python object or autograd data, still
// over the storage's CPU alias); it is lent only outside inference mode, with the key set, dtype and
// storage of a fresh view, so a kernel cannot tell it from one. Lending and giving back are inline in
// emulator.h (lend_view, give_back: on every op's path); the rest is here.

#include "emulator.h"

#include <c10/core/CPUAllocator.h>

namespace accel_neuron_emu {

// The dispatch keys of a fresh CPU view made outside inference mode.
c10::DispatchKeySet plain_view_keys() {
  static const c10::DispatchKeySet keys = [] {
    c10::InferenceMode normal(false);
    return c10::make_intrusive<c10::TensorImpl>(
               c10::DispatchKeySet(c10::DispatchKey::CPU), caffe2::TypeMeta::Make<float>(), c10::Device(c10::kCPU))
        ->key_set();
  }();
  return keys;
}

at::Tensor cpu_view(const at::Tensor& t) {
  TORCH_CHECK(t.device().type() == kNeuron, "cpu_view expects a neuron tensor, got one on ", t.device());
  NeuronMemory* mem = memory_of(t.storage().unsafeGetStorageImpl());
  if (mem == nullptr) {
    TORCH_CHECK(
        t.storage().nbytes() == 0,
        "found a neuron storage with no CPU memory behind it; it was not created by the neuron emulator "
        "(a C++ extension or an unsupported constructor made it)");
    c10::Storage empty(c10::make_intrusive<c10::StorageImpl>(
        c10::StorageImpl::use_byte_size_t(), 0, c10::GetCPUAllocator(), /*resizable=*/true));
    auto impl = c10::make_intrusive<c10::TensorImpl>(
        std::move(empty), c10::DispatchKeySet(c10::DispatchKey::CPU), t.dtype());
    impl->set_sizes_and_strides(t.sym_sizes(), t.sym_strides(), t.sym_storage_offset());
    return at::Tensor(std::move(impl));
  }
  // This view leaves the C++ kernels (Python's kernels and islands compute on it): a result over its memory
  // must find this storage from its data pointer.
  map_memory(t.storage().unsafeGetStorageImpl(), mem);
  return cpu_view_of(t, mem);
}

}  // namespace accel_neuron_emu
