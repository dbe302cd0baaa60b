// Neuron storages and the memory statistics of the emulated devices.
//
// A neuron storage is a PrivateUse1 c10::StorageImpl whose DataPtr points at CPU memory and whose
// DataPtr context (NeuronMemory) holds everything the emulator keeps per allocation: the CPU storage
// that owns the memory (kept alive), a non-resizable CPU storage over it (what CPU kernels get, so no
// kernel can reallocate memory under a neuron storage), the device index and the size counted in the
// memory statistics. A fresh CPU storage (a kernel's result: nothing else holds it, its memory came
// from the CPU allocator) is taken over: made non-resizable, it is both; any other gets a separate
// non-resizable alias. The context is freed with the DataPtr, which is when the allocation is counted
// as freed; swapping or replacing a storage's DataPtr (resize) moves the bookkeeping with the memory.
// A CPU result over memory that already belongs to a neuron storage (a view, an in-place result) gets
// that storage: the compiled kernels find it among the storages whose CPU views they lent for the call
// (LentViews::storage_over); a map from data pointer to (weak) neuron storage finds the others. Only
// memory whose CPU views leave the C++ kernels (the cpu_view op: Python's kernels and islands) or that
// was made over a CPU storage others hold is in the map (NeuronMemory::mapped): a kernel's fresh result
// pays no map entry (and its lock) at birth and death.
//
// Each device has a capacity (memory.py's emulate_memory): an allocation past it is refused with
// c10::OutOfMemoryError in CUDA's words before anything is counted or kept.

#include "emulator.h"

#include <c10/core/AutogradState.h>
#include <c10/core/CPUAllocator.h>
#include <c10/util/intrusive_ptr.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <typeinfo>
#include <unordered_map>

namespace accel_neuron_emu {
namespace {

// ---- memory statistics ---------------------------------------------------------------------

using DeviceStats = std::array<int64_t, kStatCount>;

// One lock for the memory statistics and the pointer map below: a storage's birth and death touch both.
// Held for a few counter updates (a map lookup at most), almost never contended: a spin lock (one atomic
// exchange to take, a plain store to release; a mutex costs an atomic operation and a call each way).
class StatsLock {
 public:
  void lock() noexcept {
    while (held_.exchange(true, std::memory_order_acquire)) {
      for (int spins = 0; held_.load(std::memory_order_relaxed); ++spins) {
        if (spins >= 64) std::this_thread::yield();  // a waiter yields after a short spin
      }
    }
  }
  void unlock() noexcept { held_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> held_{false};
};
StatsLock stats_lock;
std::array<DeviceStats, kMaxDevices> stats{};
std::atomic<bool> device_used{false};

// Every device's memory (bytes) and the out-of-memory messages (memory.py's templates, set at install).
std::atomic<int64_t> capacity{int64_t(24) << 30};
std::string device_oom_message;
std::string host_oom_message;

// The statistics of device `index`, or null past the devices kept. Caller holds stats_lock.
DeviceStats* find_stats(int index) {
  return index >= 0 && index < kMaxDevices ? &stats[static_cast<size_t>(index)] : nullptr;
}

// The statistics of device `index`; c10::IndexError (Python's IndexError) past the devices kept.
// Caller holds stats_lock.
DeviceStats& stats_of(int index) {
  DeviceStats* s = find_stats(index);
  TORCH_CHECK_INDEX(
      s != nullptr, "neuron:", index, " has no memory statistics: the neuron emulator's compiled per-op path keeps "
      "them for devices 0..", kMaxDevices - 1, " (emulate fewer devices, or use ACCEL_NEURON_EMULATOR_HOT_PATH=python)");
  return *s;
}

void check_count(int count) {
  TORCH_CHECK_INDEX(
      count == kStatCount, "the neuron emulator's C++ core keeps ", static_cast<int>(kStatCount),
      " memory statistics per device, and was asked for ", count,
      " (native.py and the built library disagree: rebuild it, see native.py)");
}

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
    std::lock_guard<StatsLock> lock(stats_lock);  // every raise builds its message here: count it (num_ooms)
    stats_of(index)[kNumOoms] += 1;
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
  std::lock_guard<StatsLock> lock(stats_lock);
  return stats_of(index)[kAllocated];
}

// Caller holds stats_lock.
void count_allocation_locked(DeviceStats& s, int64_t nbytes) {
  s[kAllocated] += nbytes;
  s[kAllocCount] += 1;
  s[kAllocatedTotal] += nbytes;
  s[kCurrentCount] += 1;
  if (s[kAllocated] > s[kPeak]) s[kPeak] = s[kAllocated];
  if (s[kCurrentCount] > s[kPeakCount]) s[kPeakCount] = s[kCurrentCount];
}

// Caller holds stats_lock.
void count_free_locked(DeviceStats& s, int64_t nbytes) {
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

struct MapEntry {
  c10::weak_intrusive_ptr<c10::StorageImpl> storage;
  const NeuronMemory* memory;
};
std::unordered_map<const void*, MapEntry> by_ptr;  // data pointer -> the neuron storage over it (stats_lock)

// Name `st` (its memory `mem` at `ptr`) in the map: the latest storage named for a pointer wins (the clone
// of a copy-on-write pair that outlived the storage its memory was made for, a storage whose memory was
// swapped in). Caller holds stats_lock.
void map_locked(const void* ptr, c10::StorageImpl* st, NeuronMemory* mem) {
  MapEntry entry{c10::weak_intrusive_ptr<c10::StorageImpl>(
                     c10::intrusive_ptr<c10::StorageImpl>::unsafe_reclaim_from_nonowning(st)),
                 mem};
  auto it = by_ptr.find(ptr);
  if (it != by_ptr.end()) {
    it->second = std::move(entry);
  } else {
    by_ptr.emplace(ptr, std::move(entry));
  }
  mem->mapped.store(true, std::memory_order_release);
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

}  // namespace

c10::Storage alias_over(void* ptr, int64_t nbytes, const c10::Storage& owner) {
  const c10::Device cpu_device(c10::DeviceType::CPU);
  auto ctx = std::make_unique<AliasContext>(AliasContext{owner});
  c10::DataPtr dp(ptr, ctx.release(), &delete_alias, cpu_device);  // owns the context from here
  return c10::Storage(c10::make_intrusive<c10::StorageImpl>(
      c10::StorageImpl::use_byte_size_t(), nbytes, std::move(dp), /*allocator=*/nullptr, /*resizable=*/false));
}

namespace {

// A DataPtr for neuron memory over `cpu`'s bytes on device `index`, counted as allocated. `take_over`
// (a fresh `cpu`): `cpu` becomes non-resizable and is handed to CPU kernels itself, without an alias.
//
// Past the device's capacity it throws c10::OutOfMemoryError before anything is counted or kept: the
// context is owned by a unique_ptr until the DataPtr takes it (nothing between the two can throw), and
// is counted (its nbytes set) only in the same locked step that checks the capacity, so a refused or
// failed allocation frees the context and leaves the statistics and the pointer map as they were.
// `check` false: the caller checked the room already (check_room) and this step must not fail.
c10::DataPtr neuron_data_ptr(const c10::Storage& cpu, int index, c10::StorageImpl* for_storage, bool take_over,
                             bool check = true) {
  const c10::Device device(kNeuron, static_cast<c10::DeviceIndex>(index));
  auto mem = std::make_unique<NeuronMemory>();
  void* ptr = const_cast<void*>(cpu.data_ptr().get());
  int64_t nbytes = static_cast<int64_t>(cpu.nbytes());
  mem->ptr = ptr;
  mem->nbytes = 0;  // not counted yet: the destructor uncounts only what was counted
  mem->index = index;
  if (take_over) {
    mem->alias = cpu;  // its own owner: owning() is the alias
  } else {
    mem->owner = owner_of(cpu);
    mem->alias = alias_over(ptr, nbytes, mem->owner);
  }
  if (nbytes != 0) {
    std::unique_lock<StatsLock> lock(stats_lock);
    DeviceStats& s = stats_of(index);
    int64_t held = s[kAllocated];
    if (check && held + nbytes > capacity.load(std::memory_order_relaxed)) {
      lock.unlock();
      TORCH_CHECK_WITH(OutOfMemoryError, false, oom_message(nbytes, index, held, nullptr));
    }
    if (!take_over) map_locked(ptr, for_storage, mem.get());  // `cpu` is held elsewhere: its views may come back
    count_allocation_locked(s, nbytes);
    mem->nbytes = nbytes;
  }
  if (take_over) cpu.unsafeGetStorageImpl()->set_resizable(false);
  c10::DataPtr dp(ptr, mem.release(), &delete_memory, device);  // owns the context from here
  device_used.store(true, std::memory_order_relaxed);
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

// The neuron storage over the memory of CPU storage `cpu`: the existing one (one `lent` lent views of, or
// the map's; its device wins), or a new one on device `*index`.
c10::intrusive_ptr<c10::StorageImpl> neuron_storage_for(const c10::Storage& cpu, int* index, const LentViews* lent) {
  const void* ptr = cpu.data_ptr().get();
  size_t nbytes = cpu.nbytes();
  if (is_fresh(cpu)) {
    return new_storage_over(cpu, *index, /*take_over=*/true);
  }
  if (nbytes != 0 && ptr != nullptr) {
    c10::intrusive_ptr<c10::StorageImpl> found;
    if (c10::StorageImpl* st = lent == nullptr ? nullptr : lent->storage_over(ptr, nbytes)) {
      found = c10::intrusive_ptr<c10::StorageImpl>::reclaim_copy(st);
    } else {
      std::lock_guard<StatsLock> lock(stats_lock);
      auto it = by_ptr.find(ptr);
      if (it != by_ptr.end()) {
        found = it->second.storage.lock();
      }
    }
    // (the storage's memory still: a copy-on-write storage that was given its own has left `ptr`)
    if (found && found->nbytes() >= nbytes && found->data_ptr().get() == ptr) {
      *index = found->device().index();
      return found;
    }
  }
  return new_storage_over(cpu, *index, /*take_over=*/false);
}

// The dispatch keys a TensorImpl made now (outside or inside inference mode) gets from the CPU key / the
// neuron key, and whether _change_backend_component_keys turns the first into the second (checked once
// against this torch's constructor: if not, no result is turned into a neuron tensor in place).
struct ResultKeys {
  c10::DispatchKeySet cpu[2];
  c10::DispatchKeySet neuron[2];
  bool ok = true;
};

const ResultKeys& result_keys() {
  static const ResultKeys keys = [] {
    ResultKeys k;
    for (int mode = 0; mode < 2; ++mode) {
      c10::InferenceMode guard(mode == 1);
      auto meta = caffe2::TypeMeta::Make<float>();
      auto c = c10::make_intrusive<c10::TensorImpl>(c10::DispatchKeySet(c10::DispatchKey::CPU), meta, c10::Device(c10::kCPU));
      const c10::Device device(kNeuron, 0);
      auto n = c10::make_intrusive<c10::TensorImpl>(c10::DispatchKeySet(c10::DispatchKey::PrivateUse1), meta, device);
      k.cpu[mode] = c->key_set();
      k.neuron[mode] = n->key_set();
      c->_change_backend_component_keys(device);
      k.ok = k.ok && c->key_set() == k.neuron[mode];
    }
    return k;
  }();
  return keys;
}

// Whether CPU kernel result `c` can become the neuron tensor over its own memory in place: nothing else
// holds or observes it (one reference, no weak one, no Python object, no autograd data), it is a plain
// dense TensorImpl with exactly the keys, version (0, its own counter) and bits a fresh one made now has,
// and its storage is fresh (taken over). Then only its storage, device and backend keys differ from the
// neuron tensor to_neuron would make, and those are what the conversion sets.
bool becomes_neuron(const at::Tensor& c) {
  c10::TensorImpl* impl = c.unsafeGetTensorImpl();
  const ResultKeys& keys = result_keys();
  const int mode = c10::InferenceMode::is_enabled() ? 1 : 0;
  if (!keys.ok || c.use_count() != 1 || c.weak_use_count() != 1 || impl->key_set() != keys.cpu[mode] ||
      typeid(*impl) != typeid(c10::TensorImpl) || impl->autograd_meta() != nullptr ||
      impl->pyobj_slot()->load_pyobj() != nullptr || impl->is_wrapped_number() ||
      impl->has_symbolic_sizes_strides() || impl->get_backend_meta() != nullptr ||
      !impl->allow_tensor_metadata_change() || !is_fresh(c.storage())) {
    return false;
  }
  // an inference tensor has no version counter, as a neuron tensor made in inference mode
  return mode == 1 || (impl->version_counter().current_version() == 0 && impl->unique_version());
}

}  // namespace

NeuronMemory::~NeuronMemory() {
  // the last reference is going: nothing else reads or gives back a spare now, so a plain load will do
  if (c10::TensorImpl* spare = spare_view.load(std::memory_order_acquire)) {
    c10::raw::intrusive_ptr::decref(spare);
  }
  if (cow_context != nullptr) forget_cow_context(cow_context, this);
  if (nbytes != 0) {
    std::lock_guard<StatsLock> lock(stats_lock);
    if (mapped.load(std::memory_order_relaxed)) {
      auto it = by_ptr.find(ptr);
      if (it != by_ptr.end() && it->second.memory == this) {
        by_ptr.erase(it);
      }
    }
    // counted (nbytes != 0) only after stats_of(index) accepted the index: find_stats finds it
    if (DeviceStats* s = find_stats(index)) count_free_locked(*s, nbytes);
  }
}

void delete_memory(void* ctx) {
  delete static_cast<NeuronMemory*>(ctx);
}

void rethrow_as_oom(const c10::Error& e, int index) {
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

at::Tensor to_neuron(const at::Tensor& c, int64_t index, const LentViews* lent, bool reuse) {
  TORCH_CHECK_NOT_IMPLEMENTED(  // NotImplementedError: fallback.py turns it into the emulator's limit error
      c.layout() == c10::kStrided, "the neuron emulator holds dense (torch.strided) tensors only; got a ",
      c.layout(), " tensor (keep sparse tensors on the CPU, or call .to_dense() before moving them to neuron)");
  TORCH_CHECK_NOT_IMPLEMENTED(  // fallback.py names the op and TorchNeuron's table (quantized: N)
      !c.is_quantized(), "the neuron device holds no quantized tensors");
  int i = static_cast<int>(index);
  if (reuse && becomes_neuron(c)) {
    // is_fresh: taken over, so storage and device are new_storage_over's, as neuron_storage_for's would be
    c10::TensorImpl* impl = c.unsafeGetTensorImpl();
    impl->set_storage_keep_dtype(c10::Storage(new_storage_over(c.storage(), i, /*take_over=*/true)));
    impl->_change_backend_component_keys(impl->storage().device());
    return c;
  }
  TORCH_CHECK_NOT_IMPLEMENTED(!c.is_nested(), "the neuron device holds no nested tensors of the strided kind");
  auto st = neuron_storage_for(c.storage(), &i, lent);
  auto impl = c10::make_intrusive<c10::TensorImpl>(
      c10::Storage(std::move(st)), c10::DispatchKeySet(c10::DispatchKey::PrivateUse1), c.dtype());
  copy_geometry(impl.get(), c);
  return at::Tensor(std::move(impl));
}

at::Tensor new_storage(int64_t nbytes, int64_t index) {
  TORCH_CHECK(nbytes >= 0, "new_storage: a storage of ", nbytes, " bytes");
  int i = static_cast<int>(index);
  c10::Storage host = host_memory(nbytes, i);  // nothing else holds it: taken over, not aliased or mapped
  auto impl = c10::make_intrusive<c10::TensorImpl>(
      c10::Storage(new_storage_over(host, i, /*take_over=*/true)), c10::DispatchKeySet(c10::DispatchKey::PrivateUse1),
      caffe2::TypeMeta::Make<uint8_t>());
  impl->set_sizes_contiguous({nbytes});
  return at::Tensor(std::move(impl));
}

void check_room(int64_t nbytes, int index) {
  std::unique_lock<StatsLock> lock(stats_lock);
  int64_t held = stats_of(index)[kAllocated];
  if (held + nbytes > capacity.load(std::memory_order_relaxed)) {
    lock.unlock();
    TORCH_CHECK_WITH(OutOfMemoryError, false, oom_message(nbytes, index, held, nullptr));
  }
}

c10::Storage host_memory(int64_t nbytes, int index) {
  try {
    return c10::Storage(c10::make_intrusive<c10::StorageImpl>(
        c10::StorageImpl::use_byte_size_t(), nbytes, c10::GetCPUAllocator(), /*resizable=*/true));
  } catch (const c10::Error& e) {
    rethrow_as_oom(e, index);
  }
}

void map_memory(c10::StorageImpl* st, NeuronMemory* mem) {
  if (mem->nbytes == 0) return;  // not counted (a storage slice): never in the map, as before
  std::lock_guard<StatsLock> lock(stats_lock);
  map_locked(mem->ptr, st, mem);
}

c10::DataPtr adopt_host_memory(const c10::Storage& host, int index, c10::StorageImpl* for_storage, bool check) {
  return neuron_data_ptr(host, index, for_storage, /*take_over=*/true, check);
}

const char* stat_names() {
#define ACCEL_NEURON_EMU_NAME(id, name) name "\n"
  static const char names[] = ACCEL_NEURON_EMU_STATS(ACCEL_NEURON_EMU_NAME);
#undef ACCEL_NEURON_EMU_NAME
  return names;
}

void read_stats(int index, int64_t* out, int count) {
  check_count(count);
  std::lock_guard<StatsLock> lock(stats_lock);
  const DeviceStats& s = stats_of(index);
  std::copy(s.begin(), s.end(), out);
}

void write_stats(int index, const int64_t* values, int count) {
  check_count(count);
  std::lock_guard<StatsLock> lock(stats_lock);
  DeviceStats& s = stats_of(index);
  std::copy(values, values + kStatCount, s.begin());
}

void reset_peak_stats(int index) {
  std::lock_guard<StatsLock> lock(stats_lock);
  DeviceStats& s = stats_of(index);
  s[kPeak] = s[kAllocated];
  s[kPeakCount] = s[kCurrentCount];
}

void reset_accumulated_stats(int index) {
  std::lock_guard<StatsLock> lock(stats_lock);
  DeviceStats& s = stats_of(index);
  for (Stat k : {kAllocCount, kFreeCount, kAllocatedTotal, kFreedTotal, kNumOoms}) s[k] = 0;
}

int64_t capacity_bytes() {
  return capacity.load(std::memory_order_relaxed);
}

void set_capacity(int64_t nbytes, const char* device_message, const char* host_message) {
  std::lock_guard<StatsLock> lock(stats_lock);
  capacity.store(nbytes);
  device_oom_message = device_message;
  host_oom_message = host_message;
}

bool exchange_device_used(int set) {
  bool old = device_used.load();
  if (set >= 0) device_used.store(set != 0);
  return old;
}

void remember_cpu_deleter() {
  cpu_deleter = c10::GetCPUAllocator()->raw_deleter();
}

}  // namespace accel_neuron_emu
