// Copy-on-write neuron storages: Tensor._lazy_clone on the emulated device, as c10 does it on the CPU and CUDA.
//
// c10's own lazy clone (c10::impl::cow::lazy_clone_storage) wraps a storage's DataPtr context in a
// c10::impl::cow::COWDeleterContext only when that context is the data pointer itself; a neuron storage's
// context is its NeuronMemory (allocator.cpp), so c10 refuses it. Here the same is done for the emulator's
// context: the NeuronMemory moves into a COWDeleterContext shared by the original storage and the clone, whose
// DataPtrs both take c10's cow_deleter (so torch._C._is_cow_tensor answers True, and the memory, with its
// statistics, is freed once, with the last reference). Each storage gets the materializer below (c10's
// StorageImpl::set_materializer), run by c10 on its first mutable access (mutable_data, mutable_data_ptr):
// the last reference takes the memory back; any other gets a counted copy. The emulator's kernels write
// through CPU views of neuron memory, which c10 does not see: admit() (emulator.h) and the Python kernel ask
// for the mutable data of every written argument first; reads never do. COWDeleterContext does not show the
// context it holds, so this file keeps which NeuronMemory each of its contexts holds (cow_memory_of).
// The Python per-op path's storages (no DataPtr context: their memory is held in Python) are made
// copy-on-write the same way, with a materializer that leaves their bookkeeping to python_cow.py.

#include "emulator.h"

#include <c10/core/impl/COW.h>
#include <c10/core/impl/COWDeleter.h>
#include <c10/util/ParallelGuard.h>

#include <cstring>
#include <mutex>
#include <unordered_map>

namespace accel_neuron_emu {
namespace {

namespace cow = c10::impl::cow;

std::mutex cow_mutex;
std::unordered_map<const void*, NeuronMemory*> held_by;  // COWDeleterContext -> the NeuronMemory it holds (cow_mutex)

void remember(cow::COWDeleterContext* ctx, NeuronMemory* mem) {
  std::lock_guard<std::mutex> lock(cow_mutex);
  held_by[ctx] = mem;
  mem->cow_context = ctx;
}

// A DataPtr over `data` on `device` holding one reference of `ctx`.
c10::DataPtr reference(void* data, cow::COWDeleterContext* ctx, c10::Device device) {
  return c10::DataPtr(data, ctx, &cow::cow_deleter, device);
}

// c10's materializer of a copy-on-write neuron storage (see the top of this file). As c10's own: refused
// inside at::parallel_for's loop function; everything that can fail (the room on the device, the host memory)
// happens before this reference gives up its count, so a failure leaves the storage copy-on-write as it was.
// The last reference takes the NeuronMemory back (same data pointer, nothing allocated); any other copies the
// bytes (while the context's lock keeps them) into memory counted on the device.
void materialize(c10::StorageImpl* st) {
  TORCH_CHECK(!c10::ParallelGuard::is_enabled(),
              "Materializing a storage in the loop function of at::parallel_for is forbidden");
  c10::DataPtr& dp = st->_mutable_data_ptr_no_checks();
  auto* ctx = dp.cast_context<cow::COWDeleterContext>(&cow::cow_deleter);
  NeuronMemory* shared = ctx == nullptr ? nullptr : cow_memory_of(ctx);
  TORCH_INTERNAL_ASSERT(shared != nullptr, "materialize: not a copy-on-write neuron storage");
  const int index = shared->index;
  const int64_t nbytes = static_cast<int64_t>(st->nbytes());
  check_room(nbytes, index);
  c10::Storage host = host_memory(nbytes, index);
  auto result = ctx->decrement_refcount();  // nothing below can fail
  c10::DataPtr own;
  if (auto* last = std::get_if<cow::COWDeleterContext::LastReference>(&result)) {
    forget_cow_context(ctx, shared);  // the context is gone
    shared->cow_context = nullptr;
    own = c10::DataPtr(dp.mutable_get(), last->release(), &delete_memory, dp.device());
  } else {
    if (nbytes > 0) std::memcpy(host.mutable_data(), dp.get(), static_cast<size_t>(nbytes));
    own = adopt_host_memory(host, index, st, /*check=*/false);
  }
  dp.release_context();  // this reference's count was given up above
  st->set_data_ptr_noswap(std::move(own));
}

// `st`'s DataPtr moved into a new copy-on-write context (one reference: st's), with materializer `fn`.
cow::COWDeleterContext* make_shared(c10::StorageImpl* st, c10::MaterializeFn fn) {
  c10::DataPtr& dp = st->_mutable_data_ptr_no_checks();
  void* data = dp.mutable_get();
  const c10::Device device = dp.device();
  auto* ctx = new cow::COWDeleterContext(std::move(dp.move_context()));  // holds the old context now
  st->set_data_ptr_noswap(reference(data, ctx, device));  // the emptied DataPtr goes: nothing to delete
  st->set_materializer(fn);
  return ctx;
}

// The shared context of neuron storage `st`, making `st` copy-on-write first when it is not yet.
cow::COWDeleterContext* shared_context(c10::StorageImpl* st) {
  const c10::DataPtr& dp = st->_mutable_data_ptr_no_checks();
  if (auto* ctx = dp.cast_context<cow::COWDeleterContext>(&cow::cow_deleter)) {
    TORCH_CHECK(cow_memory_of(ctx) != nullptr, "lazy_clone: a copy-on-write neuron storage the emulator did not make");
    return ctx;
  }
  TORCH_CHECK(dp.get_deleter() == &delete_memory, "lazy_clone: a neuron storage the emulator did not make");
  auto* mem = static_cast<NeuronMemory*>(dp.get_context());
  cow::COWDeleterContext* ctx = make_shared(st, &materialize);
  remember(ctx, mem);
  return ctx;
}

// A tensor shaped as `t` over a new storage taking one more reference of `ctx` (t's), with materializer `fn`.
at::Tensor clone_over(const at::Tensor& t, cow::COWDeleterContext* ctx, c10::MaterializeFn fn) {
  c10::StorageImpl* st = t.storage().unsafeGetStorageImpl();
  ctx->increment_refcount();
  c10::DataPtr& dp = st->_mutable_data_ptr_no_checks();
  auto clone = c10::make_intrusive<c10::StorageImpl>(
      c10::StorageImpl::use_byte_size_t(), st->nbytes(), reference(dp.mutable_get(), ctx, dp.device()),
      /*allocator=*/nullptr, /*resizable=*/false);
  clone->set_materializer(fn);
  auto impl = c10::make_intrusive<c10::TensorImpl>(
      c10::Storage(std::move(clone)), c10::DispatchKeySet(c10::DispatchKey::PrivateUse1), t.dtype());
  copy_geometry(impl.get(), t);
  return at::Tensor(std::move(impl));
}

// ---- the Python per-op path's storages -------------------------------------------------------------
//
// Their memory is held in Python (python_storage.py: the storage object's CPU alias), behind a DataPtr with no
// context; python_cow.py keeps the rest. The materializer asks it, through two of its ops, for the room before
// this reference gives up its count and, when it was not the last, for memory of its own holding the bytes:
// the new data pointer, which the storage's DataPtr then points at (the memory stays Python's).

// A uint8 neuron tensor over all of storage `st`: how the Python ops are handed it.
at::Tensor holder_of(c10::StorageImpl* st) {
  auto impl = c10::make_intrusive<c10::TensorImpl>(
      c10::Storage(c10::intrusive_ptr<c10::StorageImpl>::reclaim_copy(st)),
      c10::DispatchKeySet(c10::DispatchKey::PrivateUse1), caffe2::TypeMeta::Make<uint8_t>());
  impl->set_sizes_contiguous({static_cast<int64_t>(st->nbytes())});
  return at::Tensor(std::move(impl));
}

int64_t call_python(const char* name, const at::Tensor& holder) {
  auto op = c10::Dispatcher::singleton().findSchemaOrThrow(name, "").typed<int64_t(const at::Tensor&)>();
  return op.call(holder);
}

void materialize_in_python(c10::StorageImpl* st) {
  TORCH_CHECK(!c10::ParallelGuard::is_enabled(),
              "Materializing a storage in the loop function of at::parallel_for is forbidden");
  c10::DataPtr& dp = st->_mutable_data_ptr_no_checks();
  auto* ctx = dp.cast_context<cow::COWDeleterContext>(&cow::cow_deleter);
  TORCH_INTERNAL_ASSERT(ctx != nullptr, "materialize: not a copy-on-write neuron storage");
  at::Tensor holder = holder_of(st);
  call_python("accel_neuron_emu::python_check_room", holder);
  auto result = ctx->decrement_refcount();
  c10::DataPtr own;
  if (auto* last = std::get_if<cow::COWDeleterContext::LastReference>(&result)) {
    own = c10::DataPtr(dp.mutable_get(), last->release(), last->get_deleter(), dp.device());
  } else {
    void* data = reinterpret_cast<void*>(call_python("accel_neuron_emu::python_own_memory", holder));
    own = c10::DataPtr(data, dp.device());  // held by the storage's Python object (python_storage.py)
  }
  dp.release_context();  // this reference's count was given up above
  st->set_data_ptr_noswap(std::move(own));
}

}  // namespace

NeuronMemory* cow_memory_of(const void* cow_context) {
  std::lock_guard<std::mutex> lock(cow_mutex);
  auto it = held_by.find(cow_context);
  return it == held_by.end() ? nullptr : it->second;
}

NeuronMemory* shared_memory_of(const c10::DataPtr& dp) {
  return dp.get_deleter() == &cow::cow_deleter ? cow_memory_of(dp.get_context()) : nullptr;
}

void forget_cow_context(const void* cow_context, const NeuronMemory* mem) {
  std::lock_guard<std::mutex> lock(cow_mutex);
  auto it = held_by.find(cow_context);
  if (it != held_by.end() && it->second == mem) held_by.erase(it);
}

at::Tensor lazy_clone(const at::Tensor& t) {
  TORCH_CHECK(t.device().type() == kNeuron, "lazy_clone expects a neuron tensor, got one on ", t.device());
  c10::StorageImpl* st = t.storage().unsafeGetStorageImpl();
  if (memory_of(st) == nullptr && st->nbytes() == 0) {
    return to_neuron(cpu_view(t), t.device().index());  // an empty placeholder: no memory to share
  }
  return clone_over(t, shared_context(st), &materialize);
}

at::Tensor python_lazy_clone(const at::Tensor& t) {
  TORCH_CHECK(t.device().type() == kNeuron, "python_lazy_clone expects a neuron tensor, got one on ", t.device());
  c10::StorageImpl* st = t.storage().unsafeGetStorageImpl();
  auto* ctx = st->_mutable_data_ptr_no_checks().cast_context<cow::COWDeleterContext>(&cow::cow_deleter);
  return clone_over(t, ctx != nullptr ? ctx : make_shared(st, &materialize_in_python), &materialize_in_python);
}

}  // namespace accel_neuron_emu
