// The compiled per-op path's boxed kernel, and the device-agnostic views.
//
// A boxed PrivateUse1 kernel (the fallback, and per-op for ops whose composite kernel would otherwise
// win) runs the common case (plans.cpp): it swaps neuron tensors for CPU views (views.cpp), calls the op
// (full dispatch, as the Python path does), returns written arguments as passed and wraps other CPU
// results as neuron tensors over the same memory (run_common_case, shared with the typed kernels of
// typed_kernels.cpp). Every other call is redispatched to the PrivateUse3 key, where the Python kernel
// (fallback.py) is registered: it raises the device errors, handles generators, out= outputs that grow,
// accelerator-only dtypes, and the rest.
//
// Twin: fallback.py's run() (with _convert_one and _wrap), the Python per-op path's kernel, which must
// keep its own common case: it is the whole per-op path without a C++ compiler (or with
// ACCEL_NEURON_EMULATOR_HOT_PATH=python, which CI runs the emulator tests under too). The emulator
// tests run under both paths and compare their results with the CPU's.

#include "emulator.h"

#include <ATen/core/ivalue.h>
#include <ATen/ops/_reshape_alias_ops.h>
#include <ATen/ops/as_strided_ops.h>
#include <ATen/ops/unfold_ops.h>
#include <ATen/ops/view_as_complex_ops.h>
#include <ATen/ops/view_as_real_ops.h>
#include <ATen/ops/view_ops.h>

#include <memory>
#include <optional>
#include <string_view>
#include <unordered_map>

namespace accel_neuron_emu {

std::atomic<int64_t> fast_calls{0};
std::atomic<int64_t> slow_calls{0};

namespace {

// The boxed result `out` of the CPU kernel as the op's result on device `index` (`lent`: the call's views).
c10::IValue wrap(c10::IValue&& out, int index, const LentViews& lent) {
  if (out.isTensor()) return as_neuron_result(out.toTensor(), index, lent);
  if (out.isTensorList()) {
    c10::List<at::Tensor> in = out.toTensorList();
    c10::List<at::Tensor> res;
    res.reserve(in.size());
    for (const at::Tensor& t : in) res.push_back(as_neuron_result(t, index, lent));
    return res;
  }
  return std::move(out);
}

void view_kernel(const c10::OperatorHandle& op, const Plan& plan, torch::jit::Stack* stack) {
  const c10::IValue& self = (*stack)[stack->size() - plan.nargs];
  if (!self.isTensor() || self.toTensor().device().type() != kNeuron) {
    hand_to_python(op, stack);  // the Python kernel raises the device error
    return;
  }
  fast_calls.fetch_add(1, std::memory_order_relaxed);
  op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::CPU), stack);
}

// What the checks of one boxed call found: the device its results go to, and what to pass for its
// device and generator arguments.
struct Checked {
  bool fast = true;     // false: the call takes the Python kernel
  int index = -1;       // device of the neuron tensor arguments
  int asked = -1;       // device named by a device argument
  bool to_cpu = false;  // a device argument names the CPU: results stay CPU tensors
  bool needs_generator = false;
};

Checked check_args(const Plan& plan, const torch::jit::Stack& stack, size_t base) {
  Checked c;
  const bool copy = plan.copy;
  for (size_t i = 0; i < plan.nargs && c.fast; ++i) {
    const c10::IValue& a = stack[base + i];
    switch (plan.kinds[i]) {
      case ArgKind::kTensor:
        if (a.isTensor()) {
          c.fast = admit(a.toTensor(), copy, copy, plan.written[i], &c.index);
          if (c.fast && plan.copy_into[i]) own_memory_if_neuron(a.toTensor());
        }
        break;
      case ArgKind::kTensorList:
        if (a.isTensorList()) {
          for (const at::Tensor& t : a.toTensorList()) {
            if (!(c.fast = admit(t, copy, copy, plan.written[i], &c.index))) break;
          }
        }
        break;
      case ArgKind::kIndexList:
        if (a.isList()) {
          for (const c10::IValue& e : a.toListRef()) {
            if (e.isTensor() && !(c.fast = admit(e.toTensor(), true, copy, false, &c.index))) break;
          }
        }
        break;
      case ArgKind::kDevice:
        if (a.isDevice()) {
          c10::Device d = a.toDevice();
          if (d.type() == c10::DeviceType::CPU) {
            c.to_cpu = true;
          } else if (d.type() == kNeuron) {
            c.asked = asked_device(d);
            c.fast = c.asked >= 0;  // else Python's error
          } else {
            c.fast = false;
          }
        } else {
          c.fast = a.isNone();
        }
        break;
      case ArgKind::kGenerator:
        c.fast = a.isNone();  // a neuron generator: Python unwraps it
        c.needs_generator = true;
        break;
      case ArgKind::kOther:
        break;
    }
  }
  return c;
}

// The CPU kernel's arguments in place of the call's on `stack`: CPU views of neuron tensors, the CPU
// for a neuron device, `generator` for a missing generator.
void to_cpu_args(const Plan& plan, torch::jit::Stack& stack, size_t base, LentViews& lent,
                 const at::Generator& generator) {
  for (size_t i = 0; i < plan.nargs; ++i) {
    c10::IValue& a = stack[base + i];
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
}

// After an out= op: neuron tensor `n` follows its CPU view `v`, which the CPU kernel may have resized
// in place (resize_output) or pointed at other memory (written_args._follow, the Python kernel's twin).
void follow(const at::Tensor& n, const at::Tensor& v, int index, const LentViews& lent) {
  c10::TensorImpl* impl = n.unsafeGetTensorImpl();
  const NeuronMemory* mem = memory_of(n.storage().unsafeGetStorageImpl());
  if (mem == nullptr || v.storage().unsafeGetStorageImpl() != mem->alias.unsafeGetStorageImpl()) {
    impl->set_storage_keep_dtype(to_neuron(v, index, &lent).storage());
  } else if (v.sizes() == n.sizes() && v.strides() == n.strides() && v.storage_offset() == n.storage_offset()) {
    return;
  }
  impl->set_sizes_and_strides(v.sizes(), v.strides(), v.storage_offset());
}

// Whether `e` is the CPU kernel refusing to grow an out= argument's storage (the CPU alias of neuron
// memory is not resizable): the Python kernel then runs the op into fresh outputs (written_args.run_out).
bool must_grow(const c10::Error& e) {
  return std::string_view(e.what_without_backtrace()).find("not resizable") != std::string_view::npos;
}

}  // namespace

void fast_kernel(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const Plan& plan = plan_for(op);
  if (plan.view) {
    view_kernel(op, plan, stack);
    return;
  }
  if (!plan.fast) {
    hand_to_python(op, stack);
    return;
  }
  const size_t base = stack->size() - plan.nargs;
  const Checked c = check_args(plan, *stack, base);
  // The result's device: a device argument decides, else the neuron arguments'.
  const int out_index = c.asked >= 0 ? c.asked : c.index;
  if (!c.fast || out_index < 0) return hand_to_python(op, stack);  // nothing on neuron: Python picks the current device
  at::Generator generator;
  if (c.needs_generator) {
    generator = default_cpu_generator(out_index);
    if (!generator.defined()) return hand_to_python(op, stack);
  }

  // Random with no generator argument: the device's stream swapped in. On the heap: a SwappedIn holds
  // two generator states (5 KB), which an optional on the stack zeroed on every call of every op.
  std::unique_ptr<SwappedIn> swapped;
  if (plan.seeded && !(swapped = std::make_unique<SwappedIn>(out_index))->ok()) return hand_to_python(op, stack);

  c10::SmallVector<c10::IValue, 8> orig(stack->begin() + static_cast<std::ptrdiff_t>(base), stack->end());
  LentViews lent;
  to_cpu_args(plan, *stack, base, lent, generator);
  c10::SmallVector<at::Tensor, 2> out_views;  // the out= arguments' CPU views, followed after the call
  for (size_t i : plan.outs) out_views.push_back((*stack)[base + i].isTensor() ? (*stack)[base + i].toTensor() : at::Tensor());
  bool served = run_common_case(
      out_index, lent,
      [&] {
        try {
          op.callBoxed(stack);
        } catch (const c10::Error& e) {
          if (out_views.empty() || !must_grow(e)) throw;
          TORCH_CHECK_NOT_IMPLEMENTED(false, "an out= argument must grow: the Python kernel runs it");
        }
        if (swapped) swapped->restore();
        for (size_t k = 0; k < out_views.size(); ++k) {
          if (out_views[k].defined()) follow(orig[plan.outs[k]].toTensor(), out_views[k], out_index, lent);
        }
        out_views.clear();
      },
      [&] {
        const size_t nret = plan.ret_src.size();
        const size_t rbase = stack->size() - nret;
        for (size_t r = 0; r < nret; ++r) {
          c10::IValue& out = (*stack)[rbase + r];
          int src = plan.ret_src[r];
          if (src >= 0) {
            out = orig[static_cast<size_t>(src)];
          } else if (!c.to_cpu) {
            out = wrap(std::move(out), out_index, lent);
          }
        }
      });
  if (!served) {
    if (swapped) swapped->rewind();  // the Python kernel draws from where this call started
    stack->resize(base);
    stack->insert(stack->end(), orig.begin(), orig.end());
    hand_to_python(op, stack);
  }
}

// ---- unboxed device-agnostic views ---------------------------------------------------------
//
// The views whose CPU kernel only re-points a tensor at its own storage (routing.py's
// DEVICE_AGNOSTIC_VIEWS) run that kernel on the neuron tensor itself, unboxed: the boxed
// kernel above would box and unbox their size lists on every call (about 1 us a view; a
// transformer step makes hundreds). Their only tensor is `self`, so reaching PrivateUse1 means
// `self` is a neuron tensor.

namespace {

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

// name (routing.py's spelling) -> registration of its unboxed kernel
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

}  // namespace

bool register_view_kernel(torch::Library& lib, const std::string& name) {
  auto it = unboxed_views().find(name);
  if (it == unboxed_views().end()) return false;
  it->second(lib, name.c_str());
  return true;
}

}  // namespace accel_neuron_emu
