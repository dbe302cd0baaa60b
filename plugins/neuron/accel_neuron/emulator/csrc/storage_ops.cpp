// The operations on a neuron storage that limits.py's UntypedStorage patches call on the compiled path:
// resize_ (new memory, old bytes kept, same storage), a slice (a storage sharing the sliced bytes) and
// clone() (new memory with a copy of the bytes). Each works on the NeuronMemory that allocator.cpp keeps.

#include "emulator.h"

#include <algorithm>
#include <cstring>
#include <memory>

namespace accel_neuron_emu {

void resize_storage(const at::Tensor& t, int64_t nbytes) {
  c10::StorageImpl* st = t.storage().unsafeGetStorageImpl();
  int64_t old_n = static_cast<int64_t>(st->nbytes());
  if (nbytes == old_n) return;
  int index = t.device().index() < 0 ? 0 : t.device().index();
  c10::Storage fresh = host_memory(nbytes, index);
  int64_t keep = std::min(nbytes, old_n);
  if (keep > 0) {
    std::memcpy(fresh.mutable_data(), st->data(), static_cast<size_t>(keep));  // a read: copy-on-write data stays shared
  }
  c10::DataPtr dp = adopt_host_memory(fresh, index, st, /*check=*/true);
  st->set_data_ptr_noswap(std::move(dp));  // the old DataPtr goes: counted as freed (copy-on-write: one reference less)
  st->clear_materializer();  // the storage has memory of its own now
  st->set_nbytes(nbytes);
}

at::Tensor storage_slice(const at::Tensor& t, int64_t start, int64_t nbytes) {
  const c10::Storage& sliced = t.storage();
  // The slice may be written: a copy-on-write storage gets memory of its own first, as the CPU's slice does.
  sliced.unsafeGetStorageImpl()->mutable_data();
  NeuronMemory* parent = memory_of(sliced.unsafeGetStorageImpl());
  TORCH_CHECK(parent != nullptr, "storage_slice: the neuron storage was not made by the neuron emulator");
  TORCH_CHECK(start >= 0 && nbytes >= 0 && start + nbytes <= static_cast<int64_t>(sliced.nbytes()),
              "storage_slice: bytes [", start, ", ", start + nbytes, ") are not within the storage's ",
              sliced.nbytes());
  const c10::Device device = sliced.device();
  void* ptr = static_cast<char*>(const_cast<void*>(sliced.data_ptr().get())) + start;
  auto mem = std::make_unique<NeuronMemory>();
  mem->ptr = ptr;
  mem->nbytes = 0;  // the sliced storage's memory, counted there: nothing to count or uncount here
  mem->index = parent->index;
  mem->owner = parent->owning();
  mem->alias = alias_over(ptr, nbytes, mem->owner);
  mem->parent = sliced;
  c10::DataPtr dp(ptr, mem.release(), &delete_memory, device);  // owns the context from here
  auto st = c10::make_intrusive<c10::StorageImpl>(
      c10::StorageImpl::use_byte_size_t(), nbytes, std::move(dp), /*allocator=*/nullptr, /*resizable=*/false);
  auto impl = c10::make_intrusive<c10::TensorImpl>(
      c10::Storage(std::move(st)), c10::DispatchKeySet(c10::DispatchKey::PrivateUse1),
      caffe2::TypeMeta::Make<uint8_t>());
  impl->set_sizes_contiguous({nbytes});
  return at::Tensor(std::move(impl));
}

at::Tensor clone_storage(const c10::Storage& src) {
  const c10::StorageImpl* st = src.unsafeGetStorageImpl();
  // Only memory the emulator made is host memory it can read; anything else takes PyTorch's clone.
  TORCH_CHECK_NOT_IMPLEMENTED(st != nullptr && src.device().type() == kNeuron && memory_of(st) != nullptr,
                              "clone_storage: not a neuron storage the emulator made");
  int64_t nbytes = static_cast<int64_t>(src.nbytes());
  int64_t index = src.device().index() < 0 ? 0 : src.device().index();
  at::Tensor out = new_storage(nbytes, index);  // counted; the device's capacity or the host's failure: OOM
  // A read: a copy-on-write source keeps sharing its memory (data(), not mutable_data()).
  if (nbytes > 0) std::memcpy(out.storage().mutable_data(), src.data(), static_cast<size_t>(nbytes));
  return out;
}

}  // namespace accel_neuron_emu
