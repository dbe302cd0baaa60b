// The emulated neuron device's compiled per-op path and its storage bookkeeping.
//
// Storages. A neuron storage is a PrivateUse1 c10::StorageImpl whose DataPtr points at CPU memory
// and whose DataPtr context (NeuronMemory) holds everything the emulator keeps per allocation:
// the CPU storage that owns the memory (kept alive), a non-resizable CPU storage over it (what CPU
// kernels get, so no kernel can reallocate memory under a neuron storage), the device index and
// the size counted in the memory statistics. A fresh CPU storage (a kernel's result: nothing else
// holds it, its memory came from the CPU allocator) is taken over: made non-resizable, it is both;
// any other gets a separate non-resizable alias. The context is freed with the DataPtr, which is when
// the allocation is counted as freed; swapping or replacing a storage's DataPtr (resize) moves the
// bookkeeping with the memory. A map from data pointer to (weak) neuron storage finds the neuron
// storage of a CPU result over memory that already belongs to one (views, in-place results).
//
// Per-op path. A boxed PrivateUse1 kernel (the fallback, and per-op for ops whose composite kernel
// would otherwise win) runs the common case here: dense neuron tensors on one device (0-dim CPU
// tensors and CPU index tensors allowed; copies mix devices), a device argument on neuron or the CPU,
// no generator argument (the device's default one is passed), not random without a generator
// argument, not an op that re-points or resizes an argument. It swaps neuron tensors for CPU views, calls the op (full
// dispatch, as the Python path does), returns written arguments as passed and wraps other CPU
// results as neuron tensors over the same memory. Every other call is redispatched to the
// PrivateUse3 key, where the Python kernel (fallback.py) is registered: it raises the device
// errors, handles generators, out= resizing, accelerator-only dtypes, and the rest. The ops a
// training step calls most, and the device-agnostic views, get typed (unboxed) kernels that do the
// same without boxing their arguments (see "unboxed kernels" below).
//
// Entry points: torch ops accel_neuron_emu::{to_neuron, cpu_view, resize_storage} (storage.py's
// native mode), and C functions for ctypes (registration, memory statistics).

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/ivalue.h>
#include <ATen/core/stack.h>
#include <c10/core/AutogradState.h>
#include <c10/core/CPUAllocator.h>
#include <c10/core/InferenceMode.h>
#include <c10/core/StorageImpl.h>
#include <c10/core/TensorImpl.h>
#include <c10/util/SmallVector.h>
#include <c10/util/intrusive_ptr.h>
#include <torch/library.h>

#include <ATen/ops/_log_softmax_ops.h>
#include <ATen/ops/_log_softmax_backward_data_ops.h>
#include <ATen/ops/_softmax_ops.h>
#include <ATen/ops/_softmax_backward_data_ops.h>
#include <ATen/ops/add_ops.h>
#include <ATen/ops/addcmul_ops.h>
#include <ATen/ops/addmm_ops.h>
#include <ATen/ops/bitwise_not_ops.h>
#include <ATen/ops/bmm_ops.h>
#include <ATen/ops/clone_ops.h>
#include <ATen/ops/div_ops.h>
#include <ATen/ops/embedding_dense_backward_ops.h>
#include <ATen/ops/exp_ops.h>
#include <ATen/ops/gather_ops.h>
#include <ATen/ops/gelu_ops.h>
#include <ATen/ops/gelu_backward_ops.h>
#include <ATen/ops/index_select_ops.h>
#include <ATen/ops/masked_fill_ops.h>
#include <ATen/ops/mean_ops.h>
#include <ATen/ops/mm_ops.h>
#include <ATen/ops/mse_loss_ops.h>
#include <ATen/ops/mse_loss_backward_ops.h>
#include <ATen/ops/mul_ops.h>
#include <ATen/ops/native_layer_norm_ops.h>
#include <ATen/ops/native_layer_norm_backward_ops.h>
#include <ATen/ops/neg_ops.h>
#include <ATen/ops/nll_loss_backward_ops.h>
#include <ATen/ops/nll_loss_forward_ops.h>
#include <ATen/ops/pow_ops.h>
#include <ATen/ops/relu_ops.h>
#include <ATen/ops/rsqrt_ops.h>
#include <ATen/ops/sigmoid_ops.h>
#include <ATen/ops/sigmoid_backward_ops.h>
#include <ATen/ops/silu_ops.h>
#include <ATen/ops/silu_backward_ops.h>
#include <ATen/ops/sort_ops.h>
#include <ATen/ops/sqrt_ops.h>
#include <ATen/ops/sub_ops.h>
#include <ATen/ops/sum_ops.h>
#include <ATen/ops/tanh_ops.h>
#include <ATen/ops/tanh_backward_ops.h>
#include <ATen/ops/threshold_backward_ops.h>
#include <ATen/ops/where_ops.h>
#include <ATen/ops/_reshape_alias_ops.h>
#include <ATen/ops/as_strided_ops.h>
#include <ATen/ops/unfold_ops.h>
#include <ATen/ops/view_as_complex_ops.h>
#include <ATen/ops/view_as_real_ops.h>
#include <ATen/ops/view_ops.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <tuple>
#include <type_traits>
#include <cstring>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

at::Generator accel_neuron_emulator_default_cpu_generator(int index);  // runtime.cpp
extern "C" int accel_neuron_emulator_current_device();                // device_guard.cpp
extern "C" int accel_neuron_emulator_device_count();

namespace {

constexpr c10::DeviceType kNeuron = c10::DeviceType::PrivateUse1;
constexpr int kMaxDevices = 64;

// ---- memory statistics ---------------------------------------------------------------------

// Same keys and order as memory.py's _KEYS.
enum Stat { kAllocated, kPeak, kAllocCount, kFreeCount, kAllocatedTotal, kFreedTotal, kCurrentCount, kPeakCount, kNumOoms };
constexpr int kStats = 9;

// One lock for the memory statistics and the pointer map below: a storage's birth and death touch both.
std::mutex stats_mutex;
std::array<std::array<int64_t, kStats>, kMaxDevices> stats{};
std::atomic<bool> device_used{false};

// Every device's memory (bytes) and the out-of-memory messages (memory.py's templates, set at install).
std::atomic<int64_t> capacity{int64_t(24) << 30};
std::string device_oom_message;
std::string host_oom_message;

// `nbytes` as CUDA's out-of-memory messages write sizes (memory.py's format_size).
std::string format_size(int64_t nbytes) {
  char buf[64];
  if (nbytes < 1024) {
    std::snprintf(buf, sizeof(buf), "%lld bytes", static_cast<long long>(nbytes));
  } else if (nbytes < (int64_t(1) << 20)) {
    std::snprintf(buf, sizeof(buf), "%.2f KiB", static_cast<double>(nbytes) / 1024.0);
  } else if (nbytes < (int64_t(1) << 30)) {
    std::snprintf(buf, sizeof(buf), "%.2f MiB", static_cast<double>(nbytes) / 1048576.0);
  } else {
    std::snprintf(buf, sizeof(buf), "%.2f GiB", static_cast<double>(nbytes) / 1073741824.0);
  }
  return buf;
}

void fill(std::string& text, const std::string& field, const std::string& value) {
  for (size_t at = text.find(field); at != std::string::npos; at = text.find(field, at + value.size())) {
    text.replace(at, field.size(), value);
  }
}

// The out-of-memory message for `nbytes` more on device `index` holding `held` (`reason`: the host's).
std::string oom_message(int64_t nbytes, int index, int64_t held, const std::string* reason) {
  {
    std::lock_guard<std::mutex> lock(stats_mutex);  // every raise builds its message here: count it (num_ooms)
    stats[index][kNumOoms] += 1;
  }
  std::string text = reason == nullptr ? device_oom_message : host_oom_message;
  int64_t total = capacity.load(std::memory_order_relaxed);
  fill(text, "{size}", format_size(nbytes));
  fill(text, "{index}", std::to_string(index));
  fill(text, "{total}", format_size(total));
  fill(text, "{free}", format_size(std::max<int64_t>(total - held, 0)));
  fill(text, "{allocated}", format_size(held));
  if (reason != nullptr) fill(text, "{reason}", *reason);
  return text;
}

int64_t allocated_on(int index) {
  std::lock_guard<std::mutex> lock(stats_mutex);
  return stats[index][kAllocated];
}

// A host allocation failure (the CPU allocator's error) under an op on device `index` as a
// c10::OutOfMemoryError (torch.OutOfMemoryError); any other error is rethrown as it is.
[[noreturn]] void rethrow_as_oom(const c10::Error& e, int index) {
  std::string msg = e.what_without_backtrace();
  size_t at = msg.find("DefaultCPUAllocator: ");
  const std::string asked = "you tried to allocate ";  // c10's alloc_cpu wording (memory.py's _HOST_FAILURE)
  size_t num = at == std::string::npos ? std::string::npos : msg.find(asked, at);
  if (num == std::string::npos) throw;
  int64_t nbytes = std::strtoll(msg.c_str() + num + asked.size(), nullptr, 10);
  int64_t held = allocated_on(index < 0 ? 0 : index);
  std::string reason = msg.substr(at);
  size_t code = reason.find(" Error code");
  if (code != std::string::npos) reason.resize(code);
  while (!reason.empty() && (reason.back() == '.' || reason.back() == ' ')) reason.pop_back();
  bool over = held + nbytes > capacity.load(std::memory_order_relaxed);
  TORCH_CHECK_WITH(OutOfMemoryError, false, oom_message(nbytes, index < 0 ? 0 : index, held, over ? nullptr : &reason));
}

// Caller holds stats_mutex.
void count_allocation_locked(int index, int64_t nbytes) {
  auto& s = stats[index];
  s[kAllocated] += nbytes;
  s[kAllocCount] += 1;
  s[kAllocatedTotal] += nbytes;
  s[kCurrentCount] += 1;
  if (s[kAllocated] > s[kPeak]) s[kPeak] = s[kAllocated];
  if (s[kCurrentCount] > s[kPeakCount]) s[kPeakCount] = s[kCurrentCount];
}

// Caller holds stats_mutex.
void count_free_locked(int index, int64_t nbytes) {
  auto& s = stats[index];
  s[kAllocated] -= nbytes;
  s[kFreeCount] += 1;
  s[kFreedTotal] += nbytes;
  s[kCurrentCount] -= 1;
}

// ---- storages ------------------------------------------------------------------------------

// DataPtr context of a CPU alias: keeps the owning CPU storage alive.
struct AliasContext {
  c10::Storage owner;
};

void delete_alias(void* ctx) {
  delete static_cast<AliasContext*>(ctx);
}

struct NeuronMemory;
struct MapEntry {
  c10::weak_intrusive_ptr<c10::StorageImpl> storage;
  const NeuronMemory* memory;
};
std::unordered_map<const void*, MapEntry> by_ptr;  // data pointer -> the neuron storage over it (stats_mutex)

// DataPtr context of a neuron storage.
struct NeuronMemory {
  c10::Storage owner;  // the CPU storage that owns the memory
  c10::Storage alias;  // non-resizable CPU storage over the same memory, handed to CPU kernels (may be owner)
  const void* ptr;
  int64_t nbytes;
  int index;
  // A CPU tensor over `alias` that the last op gave back (owned: one reference), or null; see lend_view.
  std::atomic<c10::TensorImpl*> spare_view{nullptr};

  ~NeuronMemory() {
    if (c10::TensorImpl* spare = spare_view.exchange(nullptr)) {
      c10::raw::intrusive_ptr::decref(spare);
    }
    if (nbytes != 0) {
      std::lock_guard<std::mutex> lock(stats_mutex);
      auto it = by_ptr.find(ptr);
      if (it != by_ptr.end() && it->second.memory == this) {
        by_ptr.erase(it);
      }
      count_free_locked(index, nbytes);
    }
  }
};

void delete_memory(void* ctx) {
  delete static_cast<NeuronMemory*>(ctx);
}

inline NeuronMemory* memory_of(const c10::StorageImpl* st) {
  const c10::DataPtr& dp = st->data_ptr();
  return dp.get_deleter() == &delete_memory ? static_cast<NeuronMemory*>(dp.get_context()) : nullptr;
}

// The CPU storage that really owns the memory of `cpu` (an alias hands out its owner).
c10::Storage owner_of(const c10::Storage& cpu) {
  const c10::DataPtr& dp = cpu.data_ptr();
  if (dp.get_deleter() == &delete_alias) {
    return static_cast<AliasContext*>(dp.get_context())->owner;
  }
  return cpu;
}

c10::DeleterFnPtr cpu_deleter = nullptr;  // the CPU allocator's: memory a storage allocated itself

// Whether CPU storage `cpu` is fresh: nothing but its one tensor holds it, and its memory is its own
// (the CPU allocator's), so no neuron storage is over that memory yet.
inline bool is_fresh(const c10::Storage& cpu) {
  return cpu.use_count() == 1 && cpu_deleter != nullptr && cpu.data_ptr().get_deleter() == cpu_deleter;
}

// A DataPtr for neuron memory over `cpu`'s bytes on device `index`, counted as allocated. `take_over`
// (a fresh `cpu`): `cpu` becomes non-resizable and is handed to CPU kernels itself, without an alias.
//
// Past the device's capacity it throws c10::OutOfMemoryError before anything is counted or kept: the
// context is owned by a unique_ptr until the DataPtr takes it, and is counted (its nbytes set) only
// in the same locked step that checks the capacity, so a refused or failed allocation leaves the
// statistics and the pointer map as they were.
c10::DataPtr neuron_data_ptr(const c10::Storage& cpu, int index, c10::StorageImpl* for_storage, bool take_over) {
  auto mem = std::make_unique<NeuronMemory>();
  void* ptr = const_cast<void*>(cpu.data_ptr().get());
  int64_t nbytes = static_cast<int64_t>(cpu.nbytes());
  mem->ptr = ptr;
  mem->nbytes = 0;  // not counted yet: the destructor uncounts only what was counted
  mem->index = index;
  if (take_over) {
    mem->owner = cpu;
    mem->alias = cpu;
  } else {
    mem->owner = owner_of(cpu);
    mem->alias = c10::Storage(c10::make_intrusive<c10::StorageImpl>(
        c10::StorageImpl::use_byte_size_t(), nbytes,
        c10::DataPtr(ptr, new AliasContext{mem->owner}, &delete_alias, c10::Device(c10::DeviceType::CPU)),
        /*allocator=*/nullptr, /*resizable=*/false));
  }
  if (nbytes != 0) {
    MapEntry entry{c10::weak_intrusive_ptr<c10::StorageImpl>(
                       c10::intrusive_ptr<c10::StorageImpl>::unsafe_reclaim_from_nonowning(for_storage)),
                   mem.get()};
    std::unique_lock<std::mutex> lock(stats_mutex);
    int64_t held = stats[index][kAllocated];
    if (held + nbytes > capacity.load(std::memory_order_relaxed)) {
      lock.unlock();
      TORCH_CHECK_WITH(OutOfMemoryError, false, oom_message(nbytes, index, held, nullptr));
    }
    auto it = by_ptr.find(ptr);
    if (it != by_ptr.end()) {
      it->second = std::move(entry);
    } else {
      by_ptr.emplace(ptr, std::move(entry));
    }
    count_allocation_locked(index, nbytes);
    mem->nbytes = nbytes;
  }
  if (take_over) cpu.unsafeGetStorageImpl()->set_resizable(false);
  c10::DataPtr dp(ptr, mem.release(), &delete_memory, c10::Device(kNeuron, static_cast<c10::DeviceIndex>(index)));
  device_used.store(true, std::memory_order_relaxed);
  // autograd_threads.py: backward of neuron tensors runs in the thread that made them
  thread_local bool caller_thread_backward = false;
  if (!caller_thread_backward) {
    caller_thread_backward = true;
    c10::AutogradState::get_tls_state().set_multithreading_enabled(false);
  }
  return dp;
}

c10::intrusive_ptr<c10::StorageImpl> new_storage_over(const c10::Storage& cpu, int index, bool take_over) {
  // The StorageImpl first (with an empty DataPtr), so the map can point at it.
  auto st = c10::make_intrusive<c10::StorageImpl>(
      c10::StorageImpl::use_byte_size_t(), 0,
      c10::DataPtr(nullptr, c10::Device(kNeuron, static_cast<c10::DeviceIndex>(index))),
      /*allocator=*/nullptr, /*resizable=*/false);
  st->set_data_ptr_noswap(neuron_data_ptr(cpu, index, st.get(), take_over));
  st->set_nbytes(cpu.nbytes());
  return st;
}

// The neuron storage over the memory of CPU storage `cpu`: the existing one (its device wins), or
// a new one on device `*index`.
c10::intrusive_ptr<c10::StorageImpl> neuron_storage_for(const c10::Storage& cpu, int* index) {
  const void* ptr = cpu.data_ptr().get();
  size_t nbytes = cpu.nbytes();
  if (is_fresh(cpu)) {
    return new_storage_over(cpu, *index, /*take_over=*/true);
  }
  if (nbytes != 0 && ptr != nullptr) {
    c10::intrusive_ptr<c10::StorageImpl> found;
    {
      std::lock_guard<std::mutex> lock(stats_mutex);
      auto it = by_ptr.find(ptr);
      if (it != by_ptr.end()) {
        found = it->second.storage.lock();
      }
    }
    if (found && found->nbytes() >= nbytes) {
      *index = found->device().index();
      return found;
    }
  }
  return new_storage_over(cpu, *index, /*take_over=*/false);
}

// Geometry and lazy bits of `from` onto `impl` (int sizes when they are plain ints: cheaper).
inline void copy_geometry(c10::TensorImpl* impl, const at::Tensor& from) {
  if (from.unsafeGetTensorImpl()->has_symbolic_sizes_strides()) {
    impl->set_sizes_and_strides(from.sym_sizes(), from.sym_strides(), from.sym_storage_offset());
  } else {
    impl->set_sizes_and_strides(from.sizes(), from.strides(), from.storage_offset());
  }
  if (from.is_conj()) impl->_set_conj(true);
  if (from.is_neg()) impl->_set_neg(true);
}

// A neuron tensor over the memory of CPU tensor `c` (zero-copy, same geometry and dtype).
at::Tensor to_neuron(const at::Tensor& c, int64_t index) {
  TORCH_CHECK_NOT_IMPLEMENTED(  // NotImplementedError: fallback.py turns it into the emulator's limit error
      c.layout() == c10::kStrided, "the neuron emulator holds dense (torch.strided) tensors only; got a ",
      c.layout(), " tensor (keep sparse tensors on the CPU, or call .to_dense() before moving them to neuron)");
  TORCH_CHECK_NOT_IMPLEMENTED(  // fallback.py names the op and TorchNeuron's table (quantized: N)
      !c.is_quantized(), "the neuron device holds no quantized tensors");
  int i = static_cast<int>(index);
  auto st = neuron_storage_for(c.storage(), &i);
  auto impl = c10::make_intrusive<c10::TensorImpl>(
      c10::Storage(std::move(st)), c10::DispatchKeySet(c10::DispatchKey::PrivateUse1), c.dtype());
  copy_geometry(impl.get(), c);
  return at::Tensor(std::move(impl));
}

// A CPU tensor over the memory of neuron tensor `t` (zero-copy, fresh: the caller may re-point it).
at::Tensor cpu_view_of(const at::Tensor& t, const NeuronMemory* mem) {
  auto impl = c10::make_intrusive<c10::TensorImpl>(
      c10::Storage(mem->alias), c10::DispatchKeySet(c10::DispatchKey::CPU), t.dtype());
  copy_geometry(impl.get(), t);
  return at::Tensor(std::move(impl));
}

at::Tensor cpu_view(const at::Tensor& t) {
  TORCH_CHECK(t.device().type() == kNeuron, "cpu_view expects a neuron tensor, got one on ", t.device());
  const NeuronMemory* mem = memory_of(t.storage().unsafeGetStorageImpl());
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
  return cpu_view_of(t, mem);
}

// UntypedStorage.resize_ on the storage of neuron tensor `t`: new memory (old bytes kept), same storage.
void resize_storage(const at::Tensor& t, int64_t nbytes) {
  c10::StorageImpl* st = t.storage().unsafeGetStorageImpl();
  int64_t old_n = static_cast<int64_t>(st->nbytes());
  if (nbytes == old_n) return;
  int index = t.device().index() < 0 ? 0 : t.device().index();
  c10::Storage fresh;
  try {
    fresh = c10::Storage(c10::make_intrusive<c10::StorageImpl>(
        c10::StorageImpl::use_byte_size_t(), nbytes, c10::GetCPUAllocator(), /*resizable=*/true));
  } catch (const c10::Error& e) {
    rethrow_as_oom(e, index);
  }
  int64_t keep = std::min(nbytes, old_n);
  if (keep > 0) {
    std::memcpy(fresh.mutable_data(), st->data(), static_cast<size_t>(keep));
  }
  c10::DataPtr dp = neuron_data_ptr(fresh, index, st, /*take_over=*/true);
  st->set_data_ptr_noswap(std::move(dp));  // the old DataPtr goes: counted as freed
  st->set_nbytes(nbytes);
}

// ---- the per-op path -----------------------------------------------------------------------

enum class ArgKind : uint8_t { kOther, kTensor, kTensorList, kIndexList, kDevice, kGenerator };

struct Plan {
  bool fast = false;
  bool view = false;  // a device-agnostic view op: its CPU kernel runs on the neuron tensor itself
  bool copy = false;  // a copy: CPU tensors and other neuron devices may meet (fallback.py's _COPY_OPS)
  size_t nargs = 0;
  std::vector<ArgKind> kinds;
  std::vector<bool> written;  // per argument: written by the op (in-place self): must be on the device
  std::vector<int> ret_src;  // per return: the argument it returns (written alias), or -1
};

std::mutex plans_mutex;
std::unordered_map<c10::OperatorHandle, std::unique_ptr<Plan>> plans;  // never shrinks: Plan pointers stay valid
std::unordered_set<std::string> slow_names;  // op names the Python kernel must handle (fallback.py's tables)
std::unordered_set<std::string> copy_names;  // copies (fallback.py's _COPY_OPS)
std::unordered_set<std::string> view_names;  // "name" or "name.overload" of device-agnostic views
std::atomic<int64_t> fast_calls{0};
std::atomic<int64_t> slow_calls{0};

bool holds_tensors(const c10::TypePtr& type) {
  if (type->kind() == c10::TypeKind::TensorType) return true;
  for (const auto& t : type->containedTypes()) {
    if (holds_tensors(t)) return true;
  }
  return false;
}

std::unique_ptr<Plan> make_plan(const c10::OperatorHandle& op) {
  auto plan = std::make_unique<Plan>();
  const c10::FunctionSchema& schema = op.schema();
  const std::string name = schema.name();
  const std::string overload = schema.overload_name();
  plan->nargs = schema.arguments().size();
  std::string full = overload.empty() ? name : name + "." + overload;
  if (name.rfind("aten::", 0) == 0 && view_names.count(full.substr(6)) != 0) {
    plan->view = true;
    return plan;
  }
  plan->copy = copy_names.count(name) != 0;
  bool fast = slow_names.count(name) == 0 && name.find("sparse") == std::string::npos &&
      name.find("mkldnn") == std::string::npos && !op.hasTag(at::Tag::inplace_view);
  bool has_generator = false;
  std::unordered_map<c10::Symbol, int> written;  // alias set -> argument position
  for (size_t i = 0; i < schema.arguments().size(); ++i) {
    const auto& arg = schema.arguments()[i];
    const c10::TypePtr& type = arg.real_type();
    ArgKind kind = ArgKind::kOther;
    auto k = type->kind();
    if (k == c10::TypeKind::TensorType ||
        (k == c10::TypeKind::OptionalType && type->containedType(0)->kind() == c10::TypeKind::TensorType)) {
      kind = ArgKind::kTensor;
    } else if (k == c10::TypeKind::ListType) {
      auto elem = type->containedType(0);
      if (elem->kind() == c10::TypeKind::TensorType) {
        kind = ArgKind::kTensorList;
      } else if (elem->kind() == c10::TypeKind::OptionalType &&
                 elem->containedType(0)->kind() == c10::TypeKind::TensorType) {
        kind = ArgKind::kIndexList;
      }
    } else if (holds_tensors(type)) {
      fast = false;  // a tensor inside some other structure
    }
    c10::TypePtr inner = k == c10::TypeKind::OptionalType ? type->containedType(0) : type;
    if (inner->kind() == c10::TypeKind::DeviceObjType) {
      kind = ArgKind::kDevice;
    } else if (inner->kind() == c10::TypeKind::GeneratorType) {
      kind = ArgKind::kGenerator;
      has_generator = true;
    } else if (kind == ArgKind::kOther) {
      std::string type_str = type->str();
      if (type_str.find("Generator") != std::string::npos || type_str.find("Device") != std::string::npos) {
        fast = false;  // inside some other structure
      }
    }
    const c10::AliasInfo* alias = arg.alias_info();
    if (alias != nullptr && alias->isWrite()) {
      if (arg.kwarg_only()) fast = false;  // out=: outputs may need resizing (Python's _run_out)
      for (const auto& s : alias->beforeSets()) written[s] = static_cast<int>(i);
    }
    plan->kinds.push_back(kind);
    plan->written.push_back(alias != nullptr && alias->isWrite() && !plan->copy);
  }
  // random without a generator argument (dropout): Python swaps the device's state in
  if (op.hasTag(at::Tag::nondeterministic_seeded) && !has_generator) fast = false;
  for (const auto& ret : schema.returns()) {
    const c10::AliasInfo* alias = ret.alias_info();
    int src = -1;
    if (alias != nullptr && alias->isWrite()) {
      for (const auto& s : alias->beforeSets()) {
        auto it = written.find(s);
        if (it != written.end()) src = it->second;
      }
      if (src < 0) fast = false;
    }
    auto k = ret.real_type()->kind();
    bool plain = k == c10::TypeKind::TensorType ||
        (k == c10::TypeKind::ListType && ret.real_type()->containedType(0)->kind() == c10::TypeKind::TensorType) ||
        (k == c10::TypeKind::OptionalType &&
         ret.real_type()->containedType(0)->kind() == c10::TypeKind::TensorType);
    if (!plain && holds_tensors(ret.real_type())) fast = false;
    plan->ret_src.push_back(src);
  }
  plan->fast = fast;
  return plan;
}

const Plan& plan_for(const c10::OperatorHandle& op) {
  thread_local std::unordered_map<c10::OperatorHandle, const Plan*> seen;  // no lock on the way back
  auto hit = seen.find(op);
  if (hit != seen.end()) return *hit->second;
  std::lock_guard<std::mutex> lock(plans_mutex);
  auto it = plans.find(op);
  if (it == plans.end()) {
    it = plans.emplace(op, make_plan(op)).first;
  }
  seen.emplace(op, it->second.get());
  return *it->second;
}

void slow(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  slow_calls.fetch_add(1, std::memory_order_relaxed);
  op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::PrivateUse3), stack);
}

// Checks one tensor argument. Returns false when the call must take the Python path.
// `cpu_ok`: a CPU tensor of any size belongs here (index lists, copies); `mixed_ok`: so do other
// neuron devices (copies).
inline bool note(const at::Tensor& t, bool cpu_ok, bool mixed_ok, int* index) {
  if (!t.defined()) return true;
  c10::DeviceType type = t.device().type();
  if (type == kNeuron) {
    if (t.layout() != c10::kStrided || t.is_conj() || t.is_neg()) return false;
    if (memory_of(t.storage().unsafeGetStorageImpl()) == nullptr) return false;
    int j = t.device().index();
    if (*index < 0) {
      *index = j;
    } else if (*index != j && !mixed_ok) {
      return false;
    }
    return true;
  }
  return type == c10::DeviceType::CPU && (cpu_ok || t.dim() == 0) && t.layout() == c10::kStrided;
}

// A written argument (out=, in-place self) must be on the device: no 0-dim CPU exemption, as on CUDA.
inline bool on_neuron(const at::Tensor& t) {
  return !t.defined() || t.device().type() == kNeuron;
}

// ---- lent CPU views ---------------------------------------------------------------------------
//
// Every op hands its CPU kernel a CPU view of each neuron argument: a TensorImpl to allocate, fill
// and free (with its version counter) per argument and call. A foreach op of the optimizer takes
// lists of 30-90 parameters and states, the same tensors every step. So a view the kernel did not
// keep is given back to its neuron storage (NeuronMemory::spare_view, one per storage) and lent
// again to the next op on that storage, its geometry reset when it differs. Taking and giving
// back are atomic exchanges: one call (one thread) holds a lent view at a time. Only a view as clean
// as a fresh one goes back (the kernel kept no reference, no Python object or autograd data, still
// over the storage's CPU alias); it is lent only outside inference mode, with the key set, dtype and
// storage of a fresh view, so a kernel cannot tell it from one.

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

// `view` (the storage's spare, owned by the caller) made the CPU view of `t`, or false.
inline bool reuse_as_view_of(c10::TensorImpl* view, const at::Tensor& t, const NeuronMemory* mem) {
  if (view->key_set() != plain_view_keys() || view->dtype() != t.dtype() ||
      view->storage().unsafeGetStorageImpl() != mem->alias.unsafeGetStorageImpl()) {
    return false;
  }
  if (view->sizes() != t.sizes() || view->strides() != t.strides() || view->storage_offset() != t.storage_offset()) {
    view->set_sizes_and_strides(t.sizes(), t.strides(), t.storage_offset());
  }
  return true;
}

// A CPU view of neuron tensor `t` (its storage's spare view when it fits, else a fresh one).
at::Tensor lend_view(const at::Tensor& t) {
  NeuronMemory* mem = memory_of(t.storage().unsafeGetStorageImpl());
  if (!c10::InferenceMode::is_enabled() && !t.unsafeGetTensorImpl()->has_symbolic_sizes_strides()) {
    if (c10::TensorImpl* spare = mem->spare_view.exchange(nullptr, std::memory_order_acquire)) {
      auto impl = c10::intrusive_ptr<c10::TensorImpl>::reclaim(spare);
      if (reuse_as_view_of(impl.get(), t, mem)) return at::Tensor(std::move(impl));
    }
  }
  return cpu_view_of(t, mem);
}

// After the op: `view`, lent for neuron storage `st`, becomes its spare if nothing else holds it.
void give_back(c10::StorageImpl* st, at::Tensor&& view) {
  c10::TensorImpl* impl = view.unsafeGetTensorImpl();
  NeuronMemory* mem = memory_of(st);  // again: the storage may have been given other memory meanwhile
  if (mem == nullptr || impl->storage().unsafeGetStorageImpl() != mem->alias.unsafeGetStorageImpl() ||
      view.use_count() != 1 || view.weak_use_count() != 1 || impl->pyobj_slot()->load_pyobj() != nullptr ||
      impl->autograd_meta() != nullptr) {
    return;
  }
  c10::TensorImpl* expected = nullptr;
  c10::TensorImpl* raw = view.unsafeReleaseTensorImpl();
  if (!mem->spare_view.compare_exchange_strong(expected, raw, std::memory_order_acq_rel)) {
    c10::raw::intrusive_ptr::decref(raw);  // another op gave one back first
  }
}

// The CPU views lent for one call, given back when it returns.
struct LentViews {
  c10::SmallVector<std::pair<c10::StorageImpl*, at::Tensor>, 8> lent;

  at::Tensor lend(const at::Tensor& t) {
    at::Tensor view = lend_view(t);
    lent.emplace_back(t.storage().unsafeGetStorageImpl(), view);
    return view;
  }
  // After a call that returned: the kernel's references are gone, so the views go back.
  void give_back_all() {
    for (auto& [st, view] : lent) give_back(st, std::move(view));
    lent.clear();
  }
};

inline at::Tensor view_if_neuron(const at::Tensor& t, LentViews& lent) {
  if (t.defined() && t.device().type() == kNeuron) return lent.lend(t);
  return t;
}

inline c10::IValue wrap(c10::IValue&& out, int index) {
  if (out.isTensor()) {
    const at::Tensor& t = out.toTensor();
    if (t.defined() && t.device().type() == c10::DeviceType::CPU) return to_neuron(t, index);
    return std::move(out);
  }
  if (out.isTensorList()) {
    c10::List<at::Tensor> in = out.toTensorList();
    c10::List<at::Tensor> res;
    res.reserve(in.size());
    for (const at::Tensor& t : in) {
      res.push_back(t.defined() && t.device().type() == c10::DeviceType::CPU ? to_neuron(t, index) : t);
    }
    return res;
  }
  return std::move(out);
}

void view_kernel(const c10::OperatorHandle& op, const Plan& plan, torch::jit::Stack* stack) {
  const c10::IValue& self = (*stack)[stack->size() - plan.nargs];
  if (!self.isTensor() || self.toTensor().device().type() != kNeuron) {
    slow(op, stack);  // the Python kernel raises the device error
    return;
  }
  fast_calls.fetch_add(1, std::memory_order_relaxed);
  op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::CPU), stack);
}

void fast_kernel(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const Plan& plan = plan_for(op);
  if (plan.view) {
    view_kernel(op, plan, stack);
    return;
  }
  if (!plan.fast) {
    slow(op, stack);
    return;
  }
  const size_t n = plan.nargs;
  const size_t base = stack->size() - n;
  const bool copy = plan.copy;
  int index = -1;       // device of the neuron tensor arguments
  int asked = -1;       // device named by a device argument
  bool to_cpu = false;  // a device argument names the CPU: results stay CPU tensors
  bool needs_generator = false;
  for (size_t i = 0; i < n; ++i) {
    const c10::IValue& a = (*stack)[base + i];
    switch (plan.kinds[i]) {
      case ArgKind::kTensor:
        if (a.isTensor() && !note(a.toTensor(), copy, copy, &index)) return slow(op, stack);
        if (plan.written[i] && a.isTensor() && !on_neuron(a.toTensor())) return slow(op, stack);  // its error
        break;
      case ArgKind::kTensorList:
        if (a.isTensorList()) {
          for (const at::Tensor& t : a.toTensorList()) {
            if (!note(t, copy, copy, &index)) return slow(op, stack);
            if (plan.written[i] && !on_neuron(t)) return slow(op, stack);
          }
        }
        break;
      case ArgKind::kIndexList:
        if (a.isList()) {
          for (const c10::IValue& e : a.toListRef()) {
            if (e.isTensor() && !note(e.toTensor(), true, copy, &index)) return slow(op, stack);
          }
        }
        break;
      case ArgKind::kDevice:
        if (a.isDevice()) {
          c10::Device d = a.toDevice();
          if (d.type() == c10::DeviceType::CPU) {
            to_cpu = true;
          } else if (d.type() == kNeuron) {
            asked = d.has_index() ? d.index() : accel_neuron_emulator_current_device();
            if (asked >= accel_neuron_emulator_device_count()) return slow(op, stack);  // Python's error
          } else {
            return slow(op, stack);
          }
        } else if (!a.isNone()) {
          return slow(op, stack);
        }
        break;
      case ArgKind::kGenerator:
        if (!a.isNone()) return slow(op, stack);  // a neuron generator: Python unwraps it
        needs_generator = true;
        break;
      case ArgKind::kOther:
        break;
    }
  }
  // The result's device: a device argument decides, else the neuron arguments'.
  const int out_index = asked >= 0 ? asked : index;
  if (out_index < 0) return slow(op, stack);  // nothing on neuron: Python picks the current device
  at::Generator generator;
  if (needs_generator) {
    generator = accel_neuron_emulator_default_cpu_generator(out_index);
    if (!generator.defined()) return slow(op, stack);
  }

  c10::SmallVector<c10::IValue, 8> orig(stack->begin() + static_cast<std::ptrdiff_t>(base), stack->end());
  LentViews lent;
  for (size_t i = 0; i < n; ++i) {
    c10::IValue& a = (*stack)[base + i];
    switch (plan.kinds[i]) {
      case ArgKind::kTensor:
        if (a.isTensor()) a = view_if_neuron(a.toTensor(), lent);
        break;
      case ArgKind::kTensorList:
        if (a.isTensorList()) {
          c10::List<at::Tensor> in = a.toTensorList();
          c10::List<at::Tensor> views;
          views.reserve(in.size());
          for (const at::Tensor& t : in) views.push_back(view_if_neuron(t, lent));
          a = views;
        }
        break;
      case ArgKind::kIndexList:
        if (a.isList()) {
          auto in = a.toListRef();
          c10::List<std::optional<at::Tensor>> views;
          views.reserve(in.size());
          for (const c10::IValue& e : in) {
            views.push_back(e.isTensor() ? std::optional<at::Tensor>(view_if_neuron(e.toTensor(), lent)) : std::nullopt);
          }
          a = views;
        }
        break;
      case ArgKind::kDevice:
        if (a.isDevice() && a.toDevice().type() == kNeuron) a = c10::Device(c10::DeviceType::CPU);
        break;
      case ArgKind::kGenerator:
        if (a.isNone()) a = generator;
        break;
      case ArgKind::kOther:
        break;
    }
  }
  try {
    op.callBoxed(stack);
  } catch (const c10::NotImplementedError&) {
    // A dtype the CPU kernel rejects: the Python kernel computes it as CUDA does, if covered.
    stack->resize(base);
    stack->insert(stack->end(), orig.begin(), orig.end());
    slow(op, stack);
    return;
  } catch (const c10::OutOfMemoryError&) {
    throw;
  } catch (const c10::Error& e) {
    rethrow_as_oom(e, out_index);
  }
  fast_calls.fetch_add(1, std::memory_order_relaxed);
  lent.give_back_all();
  const size_t nret = plan.ret_src.size();
  const size_t rbase = stack->size() - nret;
  try {
    for (size_t r = 0; r < nret; ++r) {
      c10::IValue& out = (*stack)[rbase + r];
      int src = plan.ret_src[r];
      if (src >= 0) {
        out = orig[static_cast<size_t>(src)];
      } else if (!to_cpu) {
        out = wrap(std::move(out), out_index);
      }
    }
  } catch (const c10::NotImplementedError&) {
    // A result with no neuron twin (quantized): the Python kernel raises the error naming op and source.
    stack->resize(base);
    stack->insert(stack->end(), orig.begin(), orig.end());
    slow(op, stack);
  }
}

// ---- unboxed device-agnostic views ---------------------------------------------------------
//
// The views whose CPU kernel only re-points a tensor at its own storage (kernels.py's
// DEVICE_AGNOSTIC_VIEWS) run that kernel on the neuron tensor itself, unboxed: the boxed
// kernel above would box and unbox their size lists on every call (about 1 us a view; a
// transformer step makes hundreds). Their only tensor is `self`, so reaching PrivateUse1 means
// `self` is a neuron tensor.

template <class Op, class Sig = typename Op::schema>
struct CpuView;

template <class Op, class R, class... Args>
struct CpuView<Op, R(Args...)> {
  static R call(Args... args) {
    fast_calls.fetch_add(1, std::memory_order_relaxed);
    return Op::redispatch(c10::DispatchKeySet(c10::DispatchKey::CPU), std::forward<Args>(args)...);
  }
};

using ViewRegistrar = void (*)(torch::Library&, const char*);
template <class Op>
void register_view(torch::Library& lib, const char* name) {
  lib.impl(name, TORCH_FN(CpuView<Op>::call));
}

// name (kernels.py's spelling) -> registration of its unboxed kernel
const std::unordered_map<std::string, ViewRegistrar>& unboxed_views() {
  static const std::unordered_map<std::string, ViewRegistrar> table = {
      {"as_strided", &register_view<at::_ops::as_strided>},
      {"as_strided_", &register_view<at::_ops::as_strided_>},
      {"view", &register_view<at::_ops::view>},
      {"view.dtype", &register_view<at::_ops::view_dtype>},
      {"_reshape_alias", &register_view<at::_ops::_reshape_alias>},
      {"unfold", &register_view<at::_ops::unfold>},
      {"view_as_real", &register_view<at::_ops::view_as_real>},
      {"view_as_complex", &register_view<at::_ops::view_as_complex>},
  };
  return table;
}

// ---- unboxed kernels for frequent ops --------------------------------------------------------
//
// The boxed kernel above boxes every call into an IValue stack and calls the CPU kernel boxed,
// which unboxes it again: about 0.5 us of the ~1.3 us an op costs. The ops a training step calls
// most (UNBOXED_OPS) get a typed kernel doing what fast_kernel does for their arguments (only
// tensors and plain values: no lists, devices or generators): the same checks (note()), CPU views
// for neuron tensors, the op called from the top, written arguments returned as passed, other CPU
// results wrapped as neuron tensors, and the Python kernel (PrivateUse3) for every other case. An op
// gets one only where the boxed kernel serves it now and its plan (make_plan) is the fast, plain kind.

inline bool check_arg(const at::Tensor& t, int* index) {
  return note(t, false, false, index);
}
inline bool check_arg(const std::optional<at::Tensor>& t, int* index) {
  return !t.has_value() || note(*t, false, false, index);
}
template <class T>
inline bool check_arg(const T& /*value*/, int* /*index*/) {
  using D = std::decay_t<T>;
  static_assert(
      !std::is_same_v<D, std::optional<at::Generator>> && !std::is_same_v<D, at::Generator> &&
          !std::is_same_v<D, c10::Device> && !std::is_same_v<D, std::optional<c10::Device>> &&
          !std::is_same_v<D, at::TensorList> && !std::is_same_v<D, at::ITensorListRef>,
      "unboxed kernels take tensors and plain values only");
  return true;
}

inline at::Tensor cpu_arg(const at::Tensor& t, LentViews& lent) {
  return view_if_neuron(t, lent);
}
inline std::optional<at::Tensor> cpu_arg(const std::optional<at::Tensor>& t, LentViews& lent) {
  return t.has_value() ? std::optional<at::Tensor>(view_if_neuron(*t, lent)) : std::nullopt;
}
template <class T>
inline std::decay_t<T> cpu_arg(const T& value, LentViews& /*lent*/) {
  return value;
}

inline at::Tensor wrap_result(at::Tensor&& t, int index) {
  if (t.defined() && t.device().type() == c10::DeviceType::CPU) return to_neuron(t, index);
  return std::move(t);
}
template <class... T>
inline std::tuple<T...> wrap_result(std::tuple<T...>&& t, int index) {
  return std::apply([index](auto&&... x) { return std::tuple<T...>(wrap_result(std::move(x), index)...); }, std::move(t));
}

template <class Op, class Sig = typename Op::schema>
struct Unboxed;

template <class Op, class R, class First, class... Rest>
struct Unboxed<Op, R(First, Rest...)> {
  static constexpr bool kInPlace = std::is_same_v<R, at::Tensor&>;  // returns its first argument
  static_assert(!kInPlace || std::is_same_v<First, at::Tensor&>, "an in-place op returns its first argument");

  static R slow_path(First first, Rest... rest) {
    slow_calls.fetch_add(1, std::memory_order_relaxed);
    return Op::redispatch(c10::DispatchKeySet(c10::DispatchKey::PrivateUse3), std::forward<First>(first),
                          std::forward<Rest>(rest)...);
  }

  static R call(First first, Rest... rest) {
    int index = -1;
    if (!(check_arg(first, &index) && (check_arg(rest, &index) && ...)) || index < 0) {
      return slow_path(std::forward<First>(first), std::forward<Rest>(rest)...);
    }
    if constexpr (kInPlace) {
      if (!on_neuron(first)) return slow_path(std::forward<First>(first), std::forward<Rest>(rest)...);
    }
    LentViews lent;
    auto cpu = std::make_tuple(cpu_arg(first, lent), cpu_arg(rest, lent)...);
    try {
      if constexpr (kInPlace) {
        std::apply([](auto&... a) { Op::call(a...); }, cpu);
        fast_calls.fetch_add(1, std::memory_order_relaxed);
        cpu = decltype(cpu)();  // drop our references to the views first
        lent.give_back_all();
        return first;
      } else {
        R out = std::apply([](auto&... a) { return Op::call(a...); }, cpu);
        fast_calls.fetch_add(1, std::memory_order_relaxed);
        cpu = decltype(cpu)();  // drop our references to the views first
        lent.give_back_all();
        return wrap_result(std::move(out), index);
      }
    } catch (const c10::NotImplementedError&) {
      // A dtype the CPU kernel rejects: the Python kernel computes it as CUDA does, if covered.
      return slow_path(std::forward<First>(first), std::forward<Rest>(rest)...);
    } catch (const c10::OutOfMemoryError&) {
      throw;
    } catch (const c10::Error& e) {
      rethrow_as_oom(e, index);
    }
  }
};

template <class Op>
struct UnboxedOp {
  static constexpr const char* name = Op::name;
  static constexpr const char* overload = Op::overload_name;
  static constexpr bool in_place = Unboxed<Op>::kInPlace;
  static void register_in(torch::Library& lib, const char* qualname) {
    lib.impl(qualname, TORCH_FN(Unboxed<Op>::call));
  }
};

struct UnboxedEntry {
  const char* name;      // "aten::mul"
  const char* overload;  // "Tensor"
  bool in_place;
  void (*register_in)(torch::Library&, const char*);
};

template <class... Ops>
std::vector<UnboxedEntry> unboxed_entries() {
  return {UnboxedEntry{UnboxedOp<Ops>::name, UnboxedOp<Ops>::overload, UnboxedOp<Ops>::in_place,
                       &UnboxedOp<Ops>::register_in}...};
}

// The ops a training step (examples/train.py, the MLP and transformer benchmarks) calls most.
const std::vector<UnboxedEntry>& unboxed_ops() {
  namespace o = at::_ops;
  static const std::vector<UnboxedEntry> table = unboxed_entries<
      o::mm, o::addmm, o::bmm, o::mul_Tensor, o::mul_Scalar, o::mul__Tensor, o::mul__Scalar, o::add_Tensor,
      o::add__Tensor, o::add_Scalar, o::div_Tensor, o::div__Tensor, o::div__Scalar, o::div_Scalar, o::sub_Tensor,
      o::clone, o::native_layer_norm, o::native_layer_norm_backward, o::sum_dim_IntList, o::sum, o::gelu,
      o::gelu_backward, o::relu, o::threshold_backward, o::_softmax, o::_softmax_backward_data,
      o::masked_fill_Scalar, o::bitwise_not, o::_log_softmax, o::_log_softmax_backward_data, o::nll_loss_forward,
      o::nll_loss_backward, o::embedding_dense_backward, o::index_select, o::mse_loss, o::mse_loss_backward,
      o::addcmul, o::where_self, o::neg, o::sqrt, o::mean_dim, o::tanh, o::tanh_backward, o::sigmoid,
      o::sigmoid_backward, o::silu, o::silu_backward, o::exp, o::rsqrt, o::pow_Tensor_Scalar, o::gather>();
  return table;
}

// Whether the boxed kernel serves `op` now and its plan is the plain fast kind an unboxed kernel handles.
bool unboxed_fits(const c10::OperatorHandle& op, const UnboxedEntry& e, bool listed) {
  using K = c10::DispatchKey;
  if (!listed && (op.hasKernelForDispatchKey(K::PrivateUse1) || op.hasKernelForDispatchKey(K::CompositeExplicitAutograd) ||
                  op.hasKernelForDispatchKey(K::CompositeExplicitAutogradNonFunctional) ||
                  op.hasKernelForDispatchKey(K::CompositeImplicitAutograd))) {
    return false;
  }
  const Plan& plan = plan_for(op);
  if (!plan.fast || plan.view || plan.copy) return false;
  for (ArgKind k : plan.kinds) {
    if (k != ArgKind::kTensor && k != ArgKind::kOther) return false;
  }
  for (size_t r = 0; r < plan.ret_src.size(); ++r) {
    int want = e.in_place && r == 0 ? 0 : -1;
    if (plan.ret_src[r] != want) return false;
  }
  return !e.in_place || plan.ret_src.size() == 1;
}

// ---- dropout ------------------------------------------------------------------------------
//
// aten::dropout / dropout_ at AutogradPrivateUse1, as composite_overrides.py's Python kernels (the
// python per-op path keeps those): the CPU's decomposition (noise.bernoulli_(1-p).div_(1-p) * input)
// instead of the fused native_dropout PyTorch picks for PrivateUse1. Each sub-op is dispatched from
// the top, as the Python kernel's are: autograd records them, and bernoulli_ takes the per-op path,
// which draws from the device's default generator. Same ops in the same order: the same random stream.

void check_dropout_p(double p) {
  TORCH_CHECK_VALUE(p >= 0 && p <= 1, "dropout probability has to be between 0 and 1, but got ", p);
}

at::Tensor dropout_noise(const at::Tensor& input, double p) {
  at::Tensor noise = at::empty_like(input);
  noise.bernoulli_(1 - p);
  noise.div_(1 - p);
  return noise;
}

at::Tensor zero_like_scalar(const at::Tensor& input) {
  return at::zeros({}, at::TensorOptions().dtype(input.scalar_type()).device(input.device()));
}

at::Tensor dropout_kernel(const at::Tensor& input, double p, bool train) {
  check_dropout_p(p);
  if (!train || p == 0 || input.numel() == 0) return input;
  if (p == 1) return input * zero_like_scalar(input);
  return input * dropout_noise(input, p);
}

at::Tensor& dropout_inplace_kernel(at::Tensor& input, double p, bool train) {
  check_dropout_p(p);
  if (!train || p == 0 || input.numel() == 0) return input;
  if (p == 1) return input.mul_(zero_like_scalar(input));
  return input.mul_(dropout_noise(input, p));
}

std::vector<std::string> split_lines(const char* text) {
  std::vector<std::string> out;
  std::stringstream in(text == nullptr ? "" : text);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) out.push_back(line);
  }
  return out;
}

std::string last_error;

}  // namespace

TORCH_LIBRARY(accel_neuron_emu, m) {
  m.def("to_neuron(Tensor cpu, int index) -> Tensor", &to_neuron);
  m.def("cpu_view(Tensor t) -> Tensor", &cpu_view);
  m.def("resize_storage(Tensor t, int nbytes) -> ()", &resize_storage);
}

// The helpers see tensors as they are: lazy conjugation / negation bits travel with the views
// instead of being materialized (which would call back into the emulator).
#define ACCEL_NEURON_EMU_FALLTHROUGH(key)                                     \
  TORCH_LIBRARY_IMPL(accel_neuron_emu, key, m) {                              \
    m.impl("to_neuron", torch::CppFunction::makeFallthrough());               \
    m.impl("cpu_view", torch::CppFunction::makeFallthrough());                \
    m.impl("resize_storage", torch::CppFunction::makeFallthrough());          \
  }
ACCEL_NEURON_EMU_FALLTHROUGH(Conjugate)
ACCEL_NEURON_EMU_FALLTHROUGH(Negative)
ACCEL_NEURON_EMU_FALLTHROUGH(ZeroTensor)

extern "C" {

// Register the compiled per-op path: the PrivateUse1 fallback, and per-op kernels for the
// newline-separated aten overload names in `explicit_ops` ("add.Tensor"). `slow_ops`: op names
// ("aten::set_") the Python kernel handles; `copy_ops`: copies ("aten::copy_"); `views`: device-agnostic view overloads ("view",
// "view.dtype"). Returns 0, or -1 with the reason in accel_neuron_emulator_last_error().
int accel_neuron_emulator_enable_fast_path(
    const char* slow_ops, const char* copy_ops, const char* views, const char* explicit_ops) {
  try {
    cpu_deleter = c10::GetCPUAllocator()->raw_deleter();
    for (auto& s : split_lines(slow_ops)) slow_names.insert(s);
    for (auto& s : split_lines(copy_ops)) copy_names.insert(s);
    for (auto& s : split_lines(views)) view_names.insert(s);
    static auto* fallback_lib =
        new torch::Library(torch::Library::IMPL, "_", c10::DispatchKey::PrivateUse1, __FILE__, __LINE__);
    fallback_lib->fallback(torch::CppFunction::makeFromBoxedFunction<&fast_kernel>());
    static auto* ops_lib =
        new torch::Library(torch::Library::IMPL, "aten", c10::DispatchKey::PrivateUse1, __FILE__, __LINE__);
    const auto& unboxed = unboxed_views();
    std::unordered_set<std::string> listed;
    for (auto& s : split_lines(explicit_ops)) listed.insert(s);
    std::unordered_set<std::string> typed;  // given an unboxed kernel below
    for (const UnboxedEntry& e : unboxed_ops()) {
      auto op = c10::Dispatcher::singleton().findOp({e.name, e.overload});
      if (!op.has_value()) continue;
      std::string short_name = std::string(e.name).substr(6) + (e.overload[0] != '\0' ? "." : "") + e.overload;
      if (!unboxed_fits(*op, e, listed.count(short_name) != 0)) continue;
      e.register_in(*ops_lib, short_name.c_str());
      typed.insert(short_name);
    }
    for (auto& s : listed) {
      if (typed.count(s) != 0) continue;
      auto it = view_names.count(s) != 0 ? unboxed.find(s) : unboxed.end();
      if (it != unboxed.end()) {
        it->second(*ops_lib, s.c_str());
      } else {
        ops_lib->impl(s.c_str(), torch::CppFunction::makeFromBoxedFunction<&fast_kernel>());
      }
    }
    return 0;
  } catch (const std::exception& e) {
    last_error = e.what();
    return -1;
  }
}

// Register the compiled dropout kernels (aten::dropout, dropout_) at AutogradPrivateUse1, replacing
// the Python ones registered there before. Returns 0, or -1 with the reason in last_error().
int accel_neuron_emulator_enable_native_dropout() {
  try {
    static auto* dropout_lib = new torch::Library(
        torch::Library::IMPL, "aten", c10::DispatchKey::AutogradPrivateUse1, __FILE__, __LINE__);
    dropout_lib->impl("dropout", TORCH_FN(dropout_kernel));
    dropout_lib->impl("dropout_", TORCH_FN(dropout_inplace_kernel));
    return 0;
  } catch (const std::exception& e) {
    last_error = e.what();
    return -1;
  }
}

const char* accel_neuron_emulator_last_error() {
  return last_error.c_str();
}

// Memory statistics of device `index` (memory.py's _KEYS order) into out[kStats].
void accel_neuron_emulator_memory_get(int index, int64_t* out) {
  std::lock_guard<std::mutex> lock(stats_mutex);
  for (int k = 0; k < kStats; ++k) out[k] = stats[index][k];
}

// Overwrite the statistics of device `index` (resets of peaks and accumulated counters).
void accel_neuron_emulator_memory_set(int index, const int64_t* values) {
  std::lock_guard<std::mutex> lock(stats_mutex);
  for (int k = 0; k < kStats; ++k) stats[index][k] = values[k];
}

// Every device's memory in bytes, and the out-of-memory messages (memory.py's templates) to raise.
void accel_neuron_emulator_set_memory_capacity(int64_t nbytes, const char* device_message, const char* host_message) {
  std::lock_guard<std::mutex> lock(stats_mutex);
  capacity.store(nbytes);
  device_oom_message = device_message;
  host_oom_message = host_message;
}

// Whether a neuron storage was made since the flag was last set; `set` >= 0 sets it to `set`.
int accel_neuron_emulator_device_used(int set) {
  bool old = device_used.load();
  if (set >= 0) device_used.store(set != 0);
  return old ? 1 : 0;
}

// How many calls took the compiled path and the Python path (out[0], out[1]).
void accel_neuron_emulator_path_counts(int64_t* out) {
  out[0] = fast_calls.load();
  out[1] = slow_calls.load();
}

}  // extern "C"
