// What the C++ core registers with PyTorch, and its extern "C" API for ctypes (native.py).
//
// Torch ops accel_neuron_emu::{to_neuron, cpu_view, new_storage, clone_storage, resize_storage, storage_slice, lazy_clone} (storage.py's
// native mode) and share_version (island_join.py); the compiled per-op path's kernels (kernels.cpp, typed_kernels.cpp, dropout.cpp),
// registered when native.py enables them; and C functions: registration, memory statistics,
// counters. The functions that can fail return 0, or -1 with the reason in
// accel_neuron_emulator_last_error().
// (device_guard.cpp and runtime.cpp export their own C functions: the guard and the hooks.)

#include "emulator.h"

#include <algorithm>
#include <exception>
#include <sstream>
#include <unordered_set>

namespace {

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

// Runs `body`; 0, or -1 with the error's text kept for accel_neuron_emulator_last_error().
template <class Body>
int reporting(Body&& body) {
  try {
    body();
    return 0;
  } catch (const c10::Error& e) {
    last_error = e.what_without_backtrace();
  } catch (const std::exception& e) {
    last_error = e.what();
  }
  return -1;
}

}  // namespace

TORCH_LIBRARY(accel_neuron_emu, m) {
  m.def("to_neuron(Tensor cpu, int index) -> Tensor",
        [](const at::Tensor& cpu, int64_t index) { return accel_neuron_emu::to_neuron(cpu, index); });
  m.def("cpu_view(Tensor t) -> Tensor", &accel_neuron_emu::cpu_view);
  m.def("new_storage(int nbytes, int index) -> Tensor", &accel_neuron_emu::new_storage);
  m.def("clone_storage(Storage src) -> Tensor", &accel_neuron_emu::clone_storage);
  m.def("resize_storage(Tensor t, int nbytes) -> ()", &accel_neuron_emu::resize_storage);
  m.def("storage_slice(Tensor t, int start, int nbytes) -> Tensor", &accel_neuron_emu::storage_slice);
  m.def("lazy_clone(Tensor t) -> Tensor", &accel_neuron_emu::lazy_clone);
  m.def("python_lazy_clone(Tensor t) -> Tensor", &accel_neuron_emu::python_lazy_clone);
  m.def("python_check_room(Tensor holder) -> int");  // python_cow.py implements these two
  m.def("python_own_memory(Tensor holder) -> int");
  // An island's CPU copy of a neuron input shares the input's version counter, so that an in-place
  // change of the input after forward fails the CPU graph's backward as on the CPU (island_join.py).
  m.def("share_version(Tensor t, Tensor src) -> ()", [](const at::Tensor& t, const at::Tensor& src) {
    t.unsafeGetTensorImpl()->set_version_counter(src.unsafeGetTensorImpl()->version_counter());
  });
}

// The helpers see tensors as they are: lazy conjugation / negation bits travel with the views
// instead of being materialized (which would call back into the emulator).
#define ACCEL_NEURON_EMU_FALLTHROUGH(key)                                     \
  TORCH_LIBRARY_IMPL(accel_neuron_emu, key, m) {                              \
    m.impl("to_neuron", torch::CppFunction::makeFallthrough());               \
    m.impl("cpu_view", torch::CppFunction::makeFallthrough());                \
    m.impl("resize_storage", torch::CppFunction::makeFallthrough());          \
    m.impl("storage_slice", torch::CppFunction::makeFallthrough());           \
    m.impl("lazy_clone", torch::CppFunction::makeFallthrough());              \
    m.impl("python_lazy_clone", torch::CppFunction::makeFallthrough());       \
  }
ACCEL_NEURON_EMU_FALLTHROUGH(Conjugate)
ACCEL_NEURON_EMU_FALLTHROUGH(Negative)
ACCEL_NEURON_EMU_FALLTHROUGH(ZeroTensor)

#pragma GCC visibility push(default)  // the C entry points ctypes loads (the rest is hidden)
extern "C" {

// Register the compiled per-op path: the PrivateUse1 fallback, and per-op kernels for the
// newline-separated aten overload names in `explicit_ops` ("add.Tensor"). `slow_ops`: op names
// ("aten::set_") the Python kernel handles; `copy_ops`: copies ("aten::copy_"); `views`: device-agnostic
// view overloads ("view", "view.dtype") (routing.py's tables).
int accel_neuron_emulator_enable_fast_path(
    const char* slow_ops, const char* copy_ops, const char* views, const char* explicit_ops) {
  namespace emu = accel_neuron_emu;
  return reporting([&] {
    emu::remember_cpu_deleter();
    emu::set_routes(split_lines(slow_ops), split_lines(copy_ops), split_lines(views));
    static auto* fallback_lib =
        new torch::Library(torch::Library::IMPL, "_", c10::DispatchKey::PrivateUse1, __FILE__, __LINE__);
    fallback_lib->fallback(torch::CppFunction::makeFromBoxedFunction<&emu::fast_kernel>());
    static auto* ops_lib =
        new torch::Library(torch::Library::IMPL, "aten", c10::DispatchKey::PrivateUse1, __FILE__, __LINE__);
    const std::vector<std::string> listed = split_lines(explicit_ops);
    const std::vector<std::string> typed = emu::register_typed_kernels(*ops_lib, listed);
    for (const std::string& s : std::unordered_set<std::string>(listed.begin(), listed.end())) {
      if (std::find(typed.begin(), typed.end(), s) != typed.end()) continue;
      if (emu::is_view_route(s) && emu::register_view_kernel(*ops_lib, s)) continue;
      if (emu::register_storage_setter(*ops_lib, s)) continue;
      ops_lib->impl(s.c_str(), torch::CppFunction::makeFromBoxedFunction<&emu::fast_kernel>());
    }
  });
}

// Register the compiled dropout kernels (aten::dropout, dropout_) at AutogradPrivateUse1, replacing
// the Python ones registered there before.
int accel_neuron_emulator_enable_native_dropout() {
  return reporting([] {
    static auto* dropout_lib = new torch::Library(
        torch::Library::IMPL, "aten", c10::DispatchKey::AutogradPrivateUse1, __FILE__, __LINE__);
    dropout_lib->impl("dropout", TORCH_FN(accel_neuron_emu::dropout_kernel));
    dropout_lib->impl("dropout_", TORCH_FN(accel_neuron_emu::dropout_inplace_kernel));
  });
}

// Register the compiled island kernels (islands.cpp) for the newline-separated aten overloads in `names`
// (cpu_islands.RNN_OPS) at AutogradPrivateUse1 and PrivateUse1, where the Python islands were before.
int accel_neuron_emulator_enable_native_islands(const char* names) {
  return reporting([&] {
    static auto* autograd_lib = new torch::Library(
        torch::Library::IMPL, "aten", c10::DispatchKey::AutogradPrivateUse1, __FILE__, __LINE__);
    static auto* plain_lib =
        new torch::Library(torch::Library::IMPL, "aten", c10::DispatchKey::PrivateUse1, __FILE__, __LINE__);
    for (const std::string& name : split_lines(names)) {
      autograd_lib->impl(name.c_str(), torch::CppFunction::makeFromBoxedFunction<&accel_neuron_emu::island_autograd_kernel>());
      plain_lib->impl(name.c_str(), torch::CppFunction::makeFromBoxedFunction<&accel_neuron_emu::island_kernel>());
    }
  });
}

// Give (on != 0) or take back (on == 0) PrivateUse1's entry in ATen's SDPA chooser (sdpa.cpp): with it,
// scaled_dot_product_attention on neuron runs ATen's composite with the CPU's kernel choice.
int accel_neuron_emulator_enable_native_sdpa(int on) {
  return reporting([&] { accel_neuron_emu::enable_sdp_choice(on != 0); });
}

// Register the c10 device allocator of PrivateUse1 (torch.accelerator's memory functions read the
// C++ core's statistics through it).
int accel_neuron_emulator_register_device_allocator() {
  return reporting([] { accel_neuron_emu::register_device_allocator(); });
}

// Reset the peak / the accumulated statistics of device `index`.
int accel_neuron_emulator_reset_peak_stats(int index) {
  return reporting([&] { accel_neuron_emu::reset_peak_stats(index); });
}
int accel_neuron_emulator_reset_accumulated_stats(int index) {
  return reporting([&] { accel_neuron_emu::reset_accumulated_stats(index); });
}

const char* accel_neuron_emulator_last_error() {
  return last_error.c_str();
}

// The memory statistics' names, newline-separated, in the order memory_get/memory_set use.
const char* accel_neuron_emulator_stat_names() {
  return accel_neuron_emu::stat_names();
}

// Devices the compiled per-op path keeps memory statistics for.
int accel_neuron_emulator_max_devices() {
  return accel_neuron_emu::kMaxDevices;
}

// Memory statistics of device `index` into out[0..count) (count: the number of stat names).
int accel_neuron_emulator_memory_get(int index, int64_t* out, int count) {
  return reporting([&] { accel_neuron_emu::read_stats(index, out, count); });
}

// Overwrite the statistics of device `index` from values[0..count) (resets of peaks and counters).
int accel_neuron_emulator_memory_set(int index, const int64_t* values, int count) {
  return reporting([&] { accel_neuron_emu::write_stats(index, values, count); });
}

// Every device's memory in bytes, and the out-of-memory messages (memory.py's templates) to raise.
void accel_neuron_emulator_set_memory_capacity(int64_t nbytes, const char* device_message, const char* host_message) {
  accel_neuron_emu::set_capacity(nbytes, device_message, host_message);
}

// Whether a neuron storage was made since the flag was last set; `set` >= 0 sets it to `set`.
int accel_neuron_emulator_device_used(int set) {
  return accel_neuron_emu::exchange_device_used(set) ? 1 : 0;
}

// How many calls took the compiled path and the Python path (out[0], out[1]).
void accel_neuron_emulator_path_counts(int64_t* out) {
  out[0] = accel_neuron_emu::fast_calls.load();
  out[1] = accel_neuron_emu::slow_calls.load();
}

}  // extern "C"
#pragma GCC visibility pop
