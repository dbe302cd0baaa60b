// The emulated neuron device's C++ core: what its files share, declared once.
//
// One concern per file (as PyTorch's OpenReg backend is laid out):
//   device_guard.cpp  the PrivateUse1 device guard: current device and stream (thread-local), device
//                     count, stream ids, events (host-timed)
//   runtime.cpp       the PrivateUse1 hooks: device generators, pinned host memory, device queries
//   allocator.cpp     neuron storages (DataPtr context NeuronMemory), memory statistics, out-of-memory text
//   cow.cpp           copy-on-write neuron storages (Tensor._lazy_clone) and their materialization
//   storage_ops.cpp   UntypedStorage.resize_, slices and clone() of a neuron storage (limits.py's patches)
//   device_allocator.cpp  the c10 device allocator of PrivateUse1: the statistics through c10's API
//   views.cpp         CPU views of neuron tensors (lent to CPU kernels and given back per storage: inline here)
//   plans.cpp         per-op plans: which calls the compiled path serves (routing.py's tables)
//   kernels.cpp       the boxed per-op kernel (the PrivateUse1 fallback) and the device-agnostic views
//   typed_kernels.cpp the typed (unboxed) kernels of the ops a training step calls most
//   storage_setters.cpp set_ with a neuron storage: the CPU kernel on the neuron tensor itself
//   islands.cpp       recurrent layers and cells as the CPU's autograd graph (cpu_islands.py's common cases)
//   dropout.cpp       aten::dropout / dropout_ as the CPU decomposes them
//   sdpa.cpp          scaled_dot_product_attention: ATen's composite with the CPU's kernel choice
//   registration.cpp  TORCH_LIBRARY(accel_neuron_emu) and the extern "C" API loaded with ctypes (native.py)
//
// Everything here is in namespace accel_neuron_emu except the extern "C" entry points.

#pragma once

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>
#include <c10/core/InferenceMode.h>
#include <c10/core/StorageImpl.h>
#include <c10/core/TensorImpl.h>
#include <c10/util/SmallVector.h>
#include <torch/library.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

// ---- extern "C" entry points other files of the core call (device_guard.cpp) ------------------
//
// The library is built with -fvisibility=hidden (native.py): calls between its files stay direct.
// Its C entry points, which ctypes loads, are exported by a visibility push(default) around each
// extern "C" block.

#pragma GCC visibility push(default)
extern "C" {
int accel_neuron_emulator_current_device();
int accel_neuron_emulator_device_count();
void accel_neuron_emulator_set_current_device(int index);
}
#pragma GCC visibility pop

namespace accel_neuron_emu {

constexpr c10::DeviceType kNeuron = c10::DeviceType::PrivateUse1;

// Devices the compiled per-op path keeps memory statistics for (native.max_devices() reads it).
constexpr int kMaxDevices = 64;

// ---- memory statistics (allocator.cpp) ---------------------------------------------------------
//
// The statistics kept per device: X(enumerator, name). The names are memory.py's keys; Python reads
// them from the library (accel_neuron_emulator_stat_names) and a test compares them with memory._KEYS.
#define ACCEL_NEURON_EMU_STATS(X)            \
  X(kAllocated, "allocated")                 \
  X(kPeak, "peak")                           \
  X(kAllocCount, "alloc_count")              \
  X(kFreeCount, "free_count")                \
  X(kAllocatedTotal, "allocated_total")      \
  X(kFreedTotal, "freed_total")              \
  X(kCurrentCount, "current_count")          \
  X(kPeakCount, "peak_count")                \
  X(kNumOoms, "num_ooms")

#define ACCEL_NEURON_EMU_ENUMERATOR(id, name) id,
enum Stat : int { ACCEL_NEURON_EMU_STATS(ACCEL_NEURON_EMU_ENUMERATOR) kStatCount };
#undef ACCEL_NEURON_EMU_ENUMERATOR

// The statistics' names, newline-separated, in Stat order.
const char* stat_names();
// Copy device `index`'s statistics into out[0..count) / overwrite them from values[0..count).
// Throw c10::IndexError for an index outside [0, kMaxDevices) or a count other than kStatCount.
void read_stats(int index, int64_t* out, int count);
void write_stats(int index, const int64_t* values, int count);
// Peaks back to the current values / the accumulated counters (ever allocated, freed, OOMs) to zero, on
// device `index` (c10::IndexError past kMaxDevices). Twins: memory.py's reset_peak / reset_accumulated,
// the Python per-op path's.
void reset_peak_stats(int index);
void reset_accumulated_stats(int index);
// Every device's memory in bytes, and the out-of-memory messages (memory.py's templates).
void set_capacity(int64_t nbytes, const char* device_message, const char* host_message);
int64_t capacity_bytes();
// Whether a neuron storage was made since the flag was last set; `set` >= 0 sets it to `set`.
bool exchange_device_used(int set);
// The CPU allocator's deleter: a CPU storage with it owns its memory (read at enable_fast_path).
void remember_cpu_deleter();

// A host allocation failure (the CPU allocator's error) under an op on device `index` as a
// c10::OutOfMemoryError (torch.OutOfMemoryError); any other error is rethrown as it is.
[[noreturn]] void rethrow_as_oom(const c10::Error& e, int index);

// Register the c10 device allocator of PrivateUse1 (device_allocator.cpp): torch.accelerator's memory
// functions read the statistics above through it.
void register_device_allocator();

// ---- neuron storages (allocator.cpp) -----------------------------------------------------------

// DataPtr context of a neuron storage: everything the emulator keeps per allocation. Freed with the
// DataPtr, which is when the allocation is counted as freed.
struct NeuronMemory {
  // The CPU storage that owns the memory when it is not `alias` itself; empty when it is (a taken-over
  // kernel result, the common case: one reference to count up and down, not two). Read it with owning().
  c10::Storage owner;
  c10::Storage alias;  // non-resizable CPU storage over the same memory, handed to CPU kernels
  c10::Storage parent;  // a slice of another neuron storage (storage_slice): that storage, kept alive
  const void* ptr = nullptr;
  int64_t nbytes = 0;  // counted in the statistics (0: not counted, nothing to uncount)
  int index = 0;
  // A CPU tensor over `alias` that the last op gave back (owned: one reference), or null; see lend_view.
  std::atomic<c10::TensorImpl*> spare_view{nullptr};
  // The c10 copy-on-write context that holds this memory for its lazy clones (cow.cpp), or null.
  const void* cow_context = nullptr;
  // Whether the data-pointer map (allocator.cpp) names this memory: only once a CPU tensor over it has
  // left the C++ kernels (the cpu_view op) or it was made over a CPU storage others hold.
  std::atomic<bool> mapped{false};

  // The CPU storage that owns the memory (kept alive while this lives).
  const c10::Storage& owning() const { return owner ? owner : alias; }

  ~NeuronMemory();
};

void delete_memory(void* ctx);

// ---- copy-on-write neuron storages (cow.cpp) ---------------------------------------------------

// The NeuronMemory that c10 copy-on-write context `cow_context` holds, or null when the emulator did not
// make that context (cow.cpp keeps the pairs: c10's context does not show what it holds).
NeuronMemory* cow_memory_of(const void* cow_context);
// memory_of() for a DataPtr that is not a plain neuron one: the NeuronMemory a copy-on-write one shares,
// else null (out of line: the common case stays one comparison).
NeuronMemory* shared_memory_of(const c10::DataPtr& dp);
// `mem` is no longer held by `cow_context` (freed, or its last reference took it back).
void forget_cow_context(const void* cow_context, const NeuronMemory* mem);
// Tensor._lazy_clone of neuron tensor `t`: a tensor over a new storage sharing t's memory, both storages
// c10 copy-on-write (torch._C._is_cow_tensor), each given memory of its own by its first write.
at::Tensor lazy_clone(const at::Tensor& t);
// The same for a storage of the Python per-op path (memory held in Python, no DataPtr context): its
// materializer calls python_cow.py's ops accel_neuron_emu::python_check_room and python_own_memory.
at::Tensor python_lazy_clone(const at::Tensor& t);

// The NeuronMemory of neuron storage `st` (shared by copy-on-write storages), or null when the emulator
// did not make it.
inline NeuronMemory* memory_of(const c10::StorageImpl* st) {
  const c10::DataPtr& dp = st->data_ptr();
  if (C10_LIKELY(dp.get_deleter() == &delete_memory)) return static_cast<NeuronMemory*>(dp.get_context());
  return shared_memory_of(dp);
}

// Room for `nbytes` more on device `index`, or c10::OutOfMemoryError (counted in num_ooms) before anything changes.
void check_room(int64_t nbytes, int index);
// `nbytes` of fresh host memory (a resizable CPU storage) for device `index`; a host failure is its OOM.
c10::Storage host_memory(int64_t nbytes, int index);
// A DataPtr of device `index` for storage `for_storage` over `host` (from host_memory; it becomes the neuron
// memory itself), counted as allocated; `check` false: check_room passed already and this cannot fail.
c10::DataPtr adopt_host_memory(const c10::Storage& host, int index, c10::StorageImpl* for_storage, bool check);
struct LentViews;
// A neuron tensor over the memory of CPU tensor `c` (zero-copy, same geometry and dtype): over the neuron
// storage that already holds that memory (one whose CPU views `lent` lent, or one the data-pointer map
// names), else over a new one on device `index`. `reuse` (a CPU kernel's result, which the caller gives up):
// a fresh `c` (see becomes_neuron in allocator.cpp) is turned into that neuron tensor itself and returned,
// saving a TensorImpl and its geometry copy; it is then indistinguishable from a new neuron tensor.
at::Tensor to_neuron(const at::Tensor& c, int64_t index, const LentViews* lent = nullptr, bool reuse = false);
// A uint8 neuron tensor over a new storage of `nbytes` on device `index` (``UntypedStorage(n, device=...)``):
// host memory taken over, counted; the host's failure or the device's capacity raise c10::OutOfMemoryError.
at::Tensor new_storage(int64_t nbytes, int64_t index);
// Put the memory of neuron storage `st` in the data-pointer map (once): a CPU tensor over it leaves the
// C++ kernels (the cpu_view op), so a later result over that memory must find `st` from its pointer.
void map_memory(c10::StorageImpl* st, NeuronMemory* mem);
// A non-resizable CPU storage over the `nbytes` at `ptr`, keeping `owner` alive (allocator.cpp).
c10::Storage alias_over(void* ptr, int64_t nbytes, const c10::Storage& owner);

// ---- operations on a neuron storage (storage_ops.cpp): limits.py's UntypedStorage patches ---------

// UntypedStorage.resize_ on the storage of neuron tensor `t`: new memory (old bytes kept), same storage.
void resize_storage(const at::Tensor& t, int64_t nbytes);
// UntypedStorage[start:start + nbytes] of the storage of neuron tensor `t`: a uint8 neuron tensor over a
// new storage sharing those bytes (not counted as allocated; it keeps the sliced storage alive).
at::Tensor storage_slice(const at::Tensor& t, int64_t start, int64_t nbytes);
// ``UntypedStorage.clone()`` of neuron storage `src` in one call: a uint8 neuron tensor over a new storage
// (new_storage: counted, OOM as there) holding a copy of its bytes. c10::NotImplementedError for a storage
// the emulator did not make (the caller takes PyTorch's own clone).
at::Tensor clone_storage(const c10::Storage& src);

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

// ---- CPU views of neuron tensors (views.cpp) ---------------------------------------------------
//
// Lending and giving back are on every op's path, so they are inline here; views.cpp says how they work.

// A CPU tensor over the memory of neuron tensor `t` (zero-copy, fresh; the cpu_view op).
at::Tensor cpu_view(const at::Tensor& t);
// The dispatch keys of a fresh CPU view made outside inference mode.
c10::DispatchKeySet plain_view_keys();

// A CPU tensor over the memory of neuron tensor `t` (zero-copy, fresh: the caller may re-point it).
inline at::Tensor cpu_view_of(const at::Tensor& t, const NeuronMemory* mem) {
  auto impl = c10::make_intrusive<c10::TensorImpl>(
      c10::Storage(mem->alias), c10::DispatchKeySet(c10::DispatchKey::CPU), t.dtype());
  copy_geometry(impl.get(), t);
  return at::Tensor(std::move(impl));
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

// A CPU view of neuron tensor `t` for one call: its storage's spare view when it fits, else a fresh one.
inline at::Tensor lend_view(const at::Tensor& t) {
  NeuronMemory* mem = memory_of(t.storage().unsafeGetStorageImpl());
  // (a plain load first: a storage with no spare, such as a result lent for the first time, costs no
  // atomic exchange)
  if (!c10::InferenceMode::is_enabled() && !t.unsafeGetTensorImpl()->has_symbolic_sizes_strides() &&
      mem->spare_view.load(std::memory_order_relaxed) != nullptr) {
    if (c10::TensorImpl* spare = mem->spare_view.exchange(nullptr, std::memory_order_acquire)) {
      auto impl = c10::intrusive_ptr<c10::TensorImpl>::reclaim(spare);
      if (reuse_as_view_of(impl.get(), t, mem)) return at::Tensor(std::move(impl));
    }
  }
  return cpu_view_of(t, mem);
}

// After the call: `view`, lent for neuron storage `st`, becomes its spare if nothing else holds it.
inline void give_back(c10::StorageImpl* st, at::Tensor&& view) {
  c10::TensorImpl* impl = view.unsafeGetTensorImpl();
  NeuronMemory* mem = memory_of(st);  // again: the storage may have been given other memory meanwhile
  if (mem == nullptr || impl->storage().unsafeGetStorageImpl() != mem->alias.unsafeGetStorageImpl() ||
      view.use_count() != 1 || view.weak_use_count() != 1 || impl->pyobj_slot()->load_pyobj() != nullptr ||
      impl->autograd_meta() != nullptr) {
    return;
  }
  if (mem->spare_view.load(std::memory_order_relaxed) != nullptr) return;  // it has one: `view` goes
  c10::TensorImpl* expected = nullptr;
  c10::TensorImpl* raw = view.unsafeReleaseTensorImpl();
  if (!mem->spare_view.compare_exchange_strong(expected, raw, std::memory_order_acq_rel)) {
    c10::raw::intrusive_ptr::decref(raw);  // another op gave one back first
  }
}

// The CPU views lent for one call, given back when it returns. The storages stay listed after: a CPU
// result over their memory (a view the CPU kernel made of a lent view) belongs to them (storage_over), so
// their memory needs no entry in the data-pointer map while its CPU views stay inside the C++ kernels.
struct LentViews {
  c10::SmallVector<std::pair<c10::StorageImpl*, at::Tensor>, 8> lent;

  at::Tensor lend(const at::Tensor& t) {
    at::Tensor view = lend_view(t);
    lent.emplace_back(t.storage().unsafeGetStorageImpl(), view);
    return view;
  }
  // After a call that returned: the kernel's references are gone, so the views go back.
  void give_back_all() {
    for (auto& [st, view] : lent) {
      if (view.defined()) give_back(st, std::move(view));
    }
  }
  // The lent neuron storage over the `nbytes` at `ptr` (as the data-pointer map would find it), or null.
  // The call's neuron arguments hold the storages until it returns.
  c10::StorageImpl* storage_over(const void* ptr, size_t nbytes) const {
    for (const auto& entry : lent) {
      c10::StorageImpl* st = entry.first;
      if (st->data_ptr().get() == ptr && st->nbytes() >= nbytes) return st;
    }
    return nullptr;
  }
};

// ---- per-op plans (plans.cpp) ------------------------------------------------------------------

enum class ArgKind : uint8_t { kOther, kTensor, kTensorList, kIndexList, kDevice, kGenerator };

// What the compiled path knows of an operator, from its schema and routing.py's tables.
struct Plan {
  bool fast = false;
  bool view = false;  // a device-agnostic view op: its CPU kernel runs on the neuron tensor itself
  bool copy = false;  // a copy: CPU tensors and other neuron devices may meet (routing.COPY_OPS)
  bool seeded = false;  // random with no generator argument: runs with the device's stream swapped in (SwappedIn)
  size_t nargs = 0;
  std::vector<ArgKind> kinds;
  std::vector<bool> written;  // per argument: written by the op (in-place self): must be on the device
  std::vector<bool> copy_into;  // per argument: a copy's destination (written, may be a CPU tensor)
  std::vector<int> ret_src;   // per return: the argument it returns (written alias), or -1
  std::vector<size_t> outs;   // the out= arguments (kwarg-only, written, one tensor each)
};

// What `make` builds for `op`: built once per operator (under a lock), then found without a lock (each
// thread keeps a map of the operators it has seen). The per-op plans of plans.cpp and islands.cpp.
template <class T, std::unique_ptr<T> (*Make)(const c10::OperatorHandle&)>
const T& made_once_per_op(const c10::OperatorHandle& op) {
  static std::mutex mutex;
  static std::unordered_map<c10::OperatorHandle, std::unique_ptr<T>> made;  // never shrinks: pointers stay valid
  thread_local std::unordered_map<c10::OperatorHandle, const T*> seen;
  auto hit = seen.find(op);
  if (hit != seen.end()) return *hit->second;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = made.find(op);
  if (it == made.end()) it = made.emplace(op, Make(op)).first;
  seen.emplace(op, it->second.get());
  return *it->second;
}

// Set routing.py's tables: op names the Python kernel must handle, copies, device-agnostic views.
void set_routes(const std::vector<std::string>& python_only, const std::vector<std::string>& copies,
                const std::vector<std::string>& views);
// Whether "name" or "name.overload" (no aten:: prefix) is a device-agnostic view.
bool is_view_route(const std::string& short_name);
// The plan of `op` (made once, then found without a lock).
const Plan& plan_for(const c10::OperatorHandle& op);

// ---- the common case, shared by the boxed and the typed kernels (kernels.cpp, typed_kernels.cpp) ---

extern std::atomic<int64_t> fast_calls;  // calls the compiled path served
extern std::atomic<int64_t> slow_calls;  // calls handed to the Python kernel (PrivateUse3)

// Hands the boxed call on `stack` to the Python kernel at `key` (PrivateUse3; the islands' autograd
// kernel: AutogradPrivateUse3), counted as a call the compiled path did not serve.
inline void hand_to_python(const c10::OperatorHandle& op, torch::jit::Stack* stack,
                           c10::DispatchKey key = c10::DispatchKey::PrivateUse3) {
  slow_calls.fetch_add(1, std::memory_order_relaxed);
  op.redispatchBoxed(c10::DispatchKeySet(key), stack);
}

// Checks one tensor argument and notes its device in `*index`. False: the call takes the Python path.
// `cpu_ok`: a CPU tensor of any size belongs here (index lists, copies; else only 0-dim CPU tensors);
// `mixed_ok`: so do other neuron devices (copies); `written`: the op writes it (out=, in-place self), so
// it must be on the device (no 0-dim CPU exemption, as on CUDA), and a copy-on-write storage gets memory of
// its own here, before any CPU view of it is lent (c10's mutable_data: CPU kernels write through the views).
inline bool admit(const at::Tensor& t, bool cpu_ok, bool mixed_ok, bool written, int* index) {
  if (!t.defined()) return true;
  c10::DeviceType type = t.device().type();
  if (type == kNeuron) {
    if (t.layout() != c10::kStrided || t.is_conj() || t.is_neg()) return false;
    c10::StorageImpl* st = t.storage().unsafeGetStorageImpl();
    if (written) st->mutable_data();
    if (memory_of(st) == nullptr) return false;
    int j = t.device().index();
    if (*index < 0) {
      *index = j;
    } else if (*index != j && !mixed_ok) {
      return false;
    }
    return true;
  }
  return !written && type == c10::DeviceType::CPU && (cpu_ok || t.dim() == 0) && t.layout() == c10::kStrided;
}

// The device a neuron device argument names (no index: the calling thread's current one), or -1 when the
// emulator has no such device (the Python kernel raises the error): the boxed kernel's check_args and the
// typed kernels' device check both ask here.
inline int asked_device(c10::Device d) {
  int asked = d.has_index() ? d.index() : accel_neuron_emulator_current_device();
  return asked < accel_neuron_emulator_device_count() ? asked : -1;
}

// A copy's destination `t` (admitted with written false: it may be a CPU tensor): a neuron one that is
// copy-on-write gets memory of its own before its CPU view is lent, as admit() does for written arguments.
inline void own_memory_if_neuron(const at::Tensor& t) {
  if (t.defined() && t.device().type() == kNeuron) t.storage().unsafeGetStorageImpl()->mutable_data();
}

// The argument the CPU kernel gets for `t`: a lent CPU view of a neuron tensor, anything else as is.
inline at::Tensor view_if_neuron(const at::Tensor& t, LentViews& lent) {
  if (t.defined() && t.device().type() == kNeuron) return lent.lend(t);
  return t;
}

// A result of the CPU kernel as the op's result on device `index`: a CPU tensor becomes a neuron tensor
// over the same memory (a lent storage's, when it is theirs: `lent`); anything else is returned as is.
// The caller replaces `t` with the result (a fresh `t` may become it: to_neuron's `reuse`).
inline at::Tensor as_neuron_result(const at::Tensor& t, int index, const LentViews& lent) {
  if (t.defined() && t.device().type() == c10::DeviceType::CPU) return to_neuron(t, index, &lent, /*reuse=*/true);
  return t;
}

// The common case's last steps: `call` runs the op on the CPU views (and drops the caller's references
// to them), the lent views go back, `finish` turns the results into the op's. False when the CPU kernel
// or a result refused (c10::NotImplementedError: a dtype the CPU kernel rejects, a result with no neuron
// twin): the caller hands the original call to the Python kernel, which computes it as CUDA does or
// raises the error naming op and source. A host allocation failure becomes the device's out of memory.
template <class Call, class Finish>
inline bool run_common_case(int index, LentViews& lent, Call&& call, Finish&& finish) {
  try {
    call();
    fast_calls.fetch_add(1, std::memory_order_relaxed);
    lent.give_back_all();
    finish();
    return true;
  } catch (const c10::NotImplementedError&) {
    return false;
  } catch (const c10::OutOfMemoryError&) {
    throw;
  } catch (const c10::Error& e) {
    rethrow_as_oom(e, index);
  }
}

// The boxed kernel: the PrivateUse1 fallback, and per-op where a composite kernel would win.
void fast_kernel(const c10::OperatorHandle& op, torch::jit::Stack* stack);

// Registers the unboxed kernel of device-agnostic view `name` in `lib`; false when it has none.
bool register_view_kernel(torch::Library& lib, const std::string& name);

// Registers in `lib` the typed kernels whose op the boxed kernel serves now with a plan of the plain
// fast kind (`listed`: overloads registered per op anyway, "add.Tensor"). Returns the overloads it took.
std::vector<std::string> register_typed_kernels(torch::Library& lib, const std::vector<std::string>& listed);

// Registers in `lib` the kernel of set_ overload `name` ("set_.source_Storage", storage_setters.cpp);
// false when `name` is not one of them.
bool register_storage_setter(torch::Library& lib, const std::string& name);

// ---- recurrent layers and cells (islands.cpp) ----------------------------------------------------

// The island kernels of cpu_islands.RNN_OPS: at AutogradPrivateUse1 (the CPU graph joins the device's)
// and at PrivateUse1; every other case goes to the Python island at AutogradPrivateUse3 / PrivateUse3.
void island_autograd_kernel(const c10::OperatorHandle& op, torch::jit::Stack* stack);
void island_kernel(const c10::OperatorHandle& op, torch::jit::Stack* stack);

// ---- dropout (dropout.cpp) -----------------------------------------------------------------------

at::Tensor dropout_kernel(const at::Tensor& input, double p, bool train);
at::Tensor& dropout_inplace_kernel(at::Tensor& input, double p, bool train);

// ---- scaled_dot_product_attention (sdpa.cpp) ---------------------------------------------------

// Gives (on) or takes back (off) PrivateUse1's entry in ATen's SDPA backend chooser: with it, ATen's
// composite runs on neuron tensors the kernel the CPU would run.
void enable_sdp_choice(bool on);

// ---- runtime.cpp ---------------------------------------------------------------------------------

// The CPU generator behind the default generator of device `index`; undefined when there is none yet.
at::Generator default_cpu_generator(int index);

// While it lives, the CPU default generator draws device `index`'s stream (rng.swapped_in's twin, for
// random ops with no generator argument): its state (engine, cached normal samples) is swapped in;
// `restore()` (or the destructor) gives the device its advanced state and the CPU its own back. Moving
// the state is what get_state/set_state do, without the byte tensors. With emulate_rng = "cpu" the
// device's generator is the CPU's: nothing to swap. `rewind()`: restore, then put the device's stream
// back where it was at the start (a call the Python kernel runs again from the start).
class SwappedIn {
 public:
  explicit SwappedIn(int index);
  ~SwappedIn();
  SwappedIn(const SwappedIn&) = delete;
  SwappedIn& operator=(const SwappedIn&) = delete;
  bool ok() const { return device_ != nullptr; }  // false: the device has no generator yet
  void restore();
  void rewind();

 private:
  struct State {
    at::mt19937 engine;
    std::optional<float> next_float;
    std::optional<double> next_double;
  };
  static State read(at::CPUGeneratorImpl* g);
  static void write(at::CPUGeneratorImpl* g, const State& s);

  at::Generator device_gen_;
  at::CPUGeneratorImpl* device_ = nullptr;
  at::CPUGeneratorImpl* cpu_ = nullptr;  // null: nothing swapped (shared stream, or restored)
  std::optional<State> cpu_saved_;
  std::optional<State> device_before_;
};

}  // namespace accel_neuron_emu
