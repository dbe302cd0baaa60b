// The emulated neuron device's PrivateUse1 hooks: generators, pinned host memory, device queries.
//
// PyTorch reaches these through at::PrivateUse1HooksInterface (torch.Generator(device="neuron"),
// Tensor.pin_memory(), Tensor.is_pinned(), torch.accelerator, the autograd engine). The Python
// hooks that torch's Python backend API registers only answer is_available/is_built/
// has_primary_context, so everything else failed with "You should register
// PrivateUse1HooksInterface ...".
//
// Generators. A neuron generator wraps a CPU generator (at::CPUGeneratorImpl): the emulator's
// kernels are the CPU's, and a CPU kernel only accepts a CPU generator, so the fallback hands it
// the wrapped one. Seeds go through the emulator's invertible 64-bit mix (rng.py holds the same
// constants), so after manual_seed(s) a neuron stream differs from the CPU stream yet is
// reproducible, and initial_seed() still returns s. States are the CPU's byte layout, so
// torch.neuron.set_rng_state(torch.get_rng_state()) works. The default generator of device i
// wraps rng.generators[i] (the one the Python fallback passes to kernels), so both views share
// one stream.
//
// Pinned memory is ordinary CPU memory whose pointers are remembered, so is_pinned() answers
// as it would on a real device.
//
// C entry points for ctypes (loaded with ctypes.PyDLL: they run with the GIL held and report
// errors as Python exceptions).

#include "emulator.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/Generator.h>
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <c10/core/GeneratorImpl.h>
#include <c10/core/impl/alloc_cpu.h>
#include <torch/csrc/Generator.h>

#include <Python.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <unordered_set>
#include <vector>

namespace {

using accel_neuron_emu::kNeuron;

// Keep in step with rng.py (_ADD, _MUL, _DEFAULT_SEED); a test compares the two.
constexpr uint64_t kAdd = 0x9E3779B97F4A7C15ULL;
constexpr uint64_t kMul = 0xBF58476D1CE4E5B9ULL;
constexpr uint64_t kDefaultSeed = 67280421310721ULL;

uint64_t inverse_of(uint64_t a) {  // modular inverse of an odd number, mod 2**64 (Newton)
  uint64_t x = a;
  for (int i = 0; i < 6; ++i) {
    x *= 2 - a * x;
  }
  return x;
}

// Off under emulate_rng = "cpu" (rng.py): neuron generators then seed like CPU generators.
std::atomic<bool> mixing{true};

uint64_t mix(uint64_t seed) {
  return mixing.load(std::memory_order_relaxed) ? (seed + kAdd) * kMul : seed;
}

uint64_t unmix(uint64_t value) {
  static const uint64_t inv = inverse_of(kMul);
  return mixing.load(std::memory_order_relaxed) ? value * inv - kAdd : value;
}

c10::DeviceIndex resolve(c10::DeviceIndex index) {
  int count = accel_neuron_emulator_device_count();
  if (index < 0) {
    index = static_cast<c10::DeviceIndex>(accel_neuron_emulator_current_device());
  }
  TORCH_CHECK(
      index >= 0 && index < count, "device neuron:", static_cast<int>(index),
      " does not exist: the neuron emulator has ", count, " devices");
  return index;
}

class NeuronGenerator final : public c10::GeneratorImpl {
 public:
  NeuronGenerator(c10::DeviceIndex index, at::Generator cpu)
      : c10::GeneratorImpl(c10::Device(kNeuron, index), c10::DispatchKeySet(c10::DispatchKey::PrivateUse1)),
        cpu_(std::move(cpu)) {}

  void set_current_seed(uint64_t seed) override {
    std::lock_guard<std::mutex> lock(cpu_.mutex());
    cpu_.set_current_seed(mix(seed));
  }
  uint64_t current_seed() const override {
    return unmix(cpu_.current_seed());
  }
  uint64_t seed() override {
    uint64_t value = c10::detail::getNonDeterministicRandom();
    set_current_seed(value);
    return value;
  }
  // A Mersenne Twister stream has no offset (CUDA's Philox streams do). Pickling and deepcopy
  // save and restore one for non-CPU generators: 0, then the state carries everything.
  void set_offset(uint64_t offset) override {
    TORCH_CHECK(offset == 0, "neuron generators (CPU Mersenne Twister streams) have no offset; got ", offset);
  }
  uint64_t get_offset() const override {
    return 0;
  }
  void set_state(const c10::TensorImpl& state) override {
    std::lock_guard<std::mutex> lock(cpu_.mutex());
    cpu_.unsafeGetGeneratorImpl()->set_state(state);
  }
  c10::intrusive_ptr<c10::TensorImpl> get_state() const override {
    std::lock_guard<std::mutex> lock(cpu_.mutex());
    return cpu_.unsafeGetGeneratorImpl()->get_state();
  }
  const at::Generator& cpu() const {
    return cpu_;
  }

 private:
  NeuronGenerator* clone_impl() const override {
    return new NeuronGenerator(device_.index(), cpu_.clone());
  }
  mutable at::Generator cpu_;  // mutable: locking its mutex in const getters
};

at::Generator fresh_cpu_generator() {
  return at::make_generator<at::CPUGeneratorImpl>(mix(kDefaultSeed));
}

std::mutex generators_mutex;
std::vector<at::Generator> default_generators;  // one per device, set from Python (rng.generators)

// ---- pinned host memory -------------------------------------------------------------------

std::mutex pinned_mutex;
std::unordered_set<const void*> pinned;

void free_pinned(void* ptr) {
  {
    std::lock_guard<std::mutex> lock(pinned_mutex);
    pinned.erase(ptr);
  }
  c10::free_cpu(ptr);
}

struct PinnedAllocator final : public c10::Allocator {
  c10::DataPtr allocate(size_t n) override {
    const c10::Device cpu_device(c10::DeviceType::CPU);
    // owned until the DataPtr takes it: a failed insert frees it
    std::unique_ptr<void, void (*)(void*)> memory(n == 0 ? nullptr : c10::alloc_cpu(n), &c10::free_cpu);
    void* ptr = memory.get();
    if (ptr != nullptr) {
      std::lock_guard<std::mutex> lock(pinned_mutex);
      pinned.insert(ptr);
    }
    return {memory.release(), ptr, &free_pinned, cpu_device};
  }
  c10::DeleterFnPtr raw_deleter() const override {
    return &free_pinned;
  }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    std::memcpy(dest, src, count);
  }
};

bool is_pinned(const void* ptr) {
  std::lock_guard<std::mutex> lock(pinned_mutex);
  return pinned.count(ptr) != 0;
}

// ---- hooks --------------------------------------------------------------------------------

struct EmulatorHooks final : public at::PrivateUse1HooksInterface {
  bool isBuilt() const override {
    return true;
  }
  bool isAvailable() const override {
    return true;
  }
  bool hasPrimaryContext(c10::DeviceIndex /*index*/) const override {
    return true;  // the emulated devices need no context: they are ready once installed
  }
  c10::DeviceIndex deviceCount() const override {
    return static_cast<c10::DeviceIndex>(accel_neuron_emulator_device_count());
  }
  void setCurrentDevice(c10::DeviceIndex index) const override {
    accel_neuron_emulator_set_current_device(resolve(index));
  }
  c10::DeviceIndex getCurrentDevice() const override {
    return static_cast<c10::DeviceIndex>(accel_neuron_emulator_current_device());
  }
  c10::DeviceIndex exchangeDevice(c10::DeviceIndex index) const override {
    c10::DeviceIndex old = getCurrentDevice();
    setCurrentDevice(index);
    return old;
  }
  c10::DeviceIndex maybeExchangeDevice(c10::DeviceIndex index) const override {
    return exchangeDevice(index);
  }
  const at::Generator& getDefaultGenerator(c10::DeviceIndex index) const override {
    index = resolve(index);
    std::lock_guard<std::mutex> lock(generators_mutex);
    TORCH_CHECK(
        static_cast<size_t>(index) < default_generators.size(),
        "the neuron emulator has no default generator for neuron:", static_cast<int>(index));
    return default_generators[index];
  }
  at::Generator getNewGenerator(c10::DeviceIndex index) const override {
    return at::make_generator<NeuronGenerator>(resolve(index), fresh_cpu_generator());
  }
  bool isPinnedPtr(const void* data) const override {
    return is_pinned(data);
  }
  c10::Allocator* getPinnedMemoryAllocator() const override {
    static PinnedAllocator allocator;
    return &allocator;
  }
  at::Device getDeviceFromPtr(void* /*data*/) const override {
    // Emulated device memory is CPU memory: a pointer alone does not say which device owns it.
    return c10::Device(kNeuron, static_cast<c10::DeviceIndex>(accel_neuron_emulator_current_device()));
  }
};

PyObject* fail(const std::exception& e) {
  PyErr_SetString(PyExc_RuntimeError, e.what());
  return nullptr;
}

}  // namespace

// The CPU generator behind the default generator of device `index` (what the Python kernel passes
// to CPU kernels as rng.generators[index]); an undefined Generator when there is none yet.
at::Generator accel_neuron_emu::default_cpu_generator(int index) {
  std::lock_guard<std::mutex> lock(generators_mutex);
  if (index < 0 || static_cast<size_t>(index) >= default_generators.size()) {
    return at::Generator();
  }
  return static_cast<NeuronGenerator*>(default_generators[index].unsafeGetGeneratorImpl())->cpu();
}

// ---- the device's stream in the CPU default generator (SwappedIn) ---------------------------

accel_neuron_emu::SwappedIn::State accel_neuron_emu::SwappedIn::read(at::CPUGeneratorImpl* g) {
  return State{g->engine(), g->next_float_normal_sample(), g->next_double_normal_sample()};
}

void accel_neuron_emu::SwappedIn::write(at::CPUGeneratorImpl* g, const State& s) {
  g->set_engine(s.engine);
  g->set_next_float_normal_sample(s.next_float);
  g->set_next_double_normal_sample(s.next_double);
}

accel_neuron_emu::SwappedIn::SwappedIn(int index) : device_gen_(default_cpu_generator(index)) {
  if (!device_gen_.defined()) return;
  device_ = at::check_generator<at::CPUGeneratorImpl>(device_gen_);
  auto* cpu_impl = at::check_generator<at::CPUGeneratorImpl>(at::detail::getDefaultCPUGenerator());
  if (cpu_impl == device_) return;  // emulate_rng = "cpu": the op draws from the CPU stream itself
  std::scoped_lock lock(device_->mutex_, cpu_impl->mutex_);
  cpu_saved_.emplace(read(cpu_impl));
  device_before_.emplace(read(device_));
  write(cpu_impl, *device_before_);
  cpu_ = cpu_impl;
}

void accel_neuron_emu::SwappedIn::restore() {
  if (cpu_ == nullptr) return;
  std::scoped_lock lock(device_->mutex_, cpu_->mutex_);
  write(device_, read(cpu_));
  write(cpu_, *cpu_saved_);
  cpu_ = nullptr;
}

void accel_neuron_emu::SwappedIn::rewind() {
  restore();
  if (device_before_.has_value()) {
    std::lock_guard<std::mutex> lock(device_->mutex_);
    write(device_, *device_before_);
  }
}

accel_neuron_emu::SwappedIn::~SwappedIn() {
  restore();
}

#pragma GCC visibility push(default)  // the C entry points ctypes loads (the rest is hidden)
extern "C" {

// Seeds of neuron generators mixed (1, the default: the device's own streams) or taken as given
// (0: emulate_rng = "cpu", a neuron generator seeded with s streams as a CPU one seeded with s).
void accel_neuron_emulator_set_seed_mixing(int on) {
  mixing.store(on != 0, std::memory_order_relaxed);
}

// Register the hooks (replacing the Python ones). Returns 0.
int accel_neuron_emulator_register_hooks() {
  static EmulatorHooks* hooks = new EmulatorHooks();  // leaked: PyTorch keeps a raw pointer
  at::RegisterPrivateUse1HooksInterface(hooks);
  return 0;
}

// Make the default generator of device i wrap the CPU generator cpu_generators[i] (a list of
// torch.Generator objects on the CPU). Returns None, or NULL with a Python error.
PyObject* accel_neuron_emulator_set_default_generators(PyObject* cpu_generators) {
  try {
    if (!PyList_Check(cpu_generators)) {
      PyErr_SetString(PyExc_TypeError, "expected a list of CPU torch.Generator objects");
      return nullptr;
    }
    std::vector<at::Generator> made;
    Py_ssize_t n = PyList_Size(cpu_generators);
    for (Py_ssize_t i = 0; i < n; ++i) {
      PyObject* item = PyList_GetItem(cpu_generators, i);
      if (!THPGenerator_Check(item)) {
        PyErr_SetString(PyExc_TypeError, "expected a list of CPU torch.Generator objects");
        return nullptr;
      }
      at::Generator cpu = reinterpret_cast<THPGenerator*>(item)->cdata;
      TORCH_CHECK(cpu.device().is_cpu(), "the default neuron generators wrap CPU generators");
      made.push_back(at::make_generator<NeuronGenerator>(static_cast<c10::DeviceIndex>(i), cpu));
    }
    std::lock_guard<std::mutex> lock(generators_mutex);
    default_generators = std::move(made);
    Py_RETURN_NONE;
  } catch (const std::exception& e) {
    return fail(e);
  }
}

// The CPU generator a neuron generator draws from (a torch.Generator on the CPU), or NULL with a
// Python error when `generator` is not a neuron generator.
PyObject* accel_neuron_emulator_cpu_generator(PyObject* generator) {
  try {
    if (!THPGenerator_Check(generator)) {
      PyErr_SetString(PyExc_TypeError, "expected a torch.Generator");
      return nullptr;
    }
    const at::Generator& gen = reinterpret_cast<THPGenerator*>(generator)->cdata;
    auto* impl = dynamic_cast<NeuronGenerator*>(gen.unsafeGetGeneratorImpl());
    if (impl == nullptr) {
      PyErr_Format(PyExc_RuntimeError, "expected a neuron generator, got one on %s",
                   gen.device().str().c_str());
      return nullptr;
    }
    return THPGenerator_Wrap(impl->cpu());
  } catch (const std::exception& e) {
    return fail(e);
  }
}

}  // extern "C"
#pragma GCC visibility pop
