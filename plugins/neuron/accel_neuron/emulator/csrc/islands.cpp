// The recurrent layers and cells (cpu_islands.RNN_OPS) as the CPU's own autograd graph on neuron
// tensors, without Python in the call: the common cases of cpu_islands.py's kernels.
//
// aten::lstm, gru and rnn_* decompose by device inside ATen (fused cells only CUDA has, the input
// projection batched and oneDNN's RNN only for CPU tensors), so on neuron they run as "islands": the
// CPU op on CPU stand-ins of the neuron tensors, its results handed back as neuron tensors, bit for bit
// the CPU's. These kernels serve the two cases a training loop makes every step:
//   * autograd on (AutogradPrivateUse1, a tensor requiring grad): the CPU graph joins the device's (as
//     island_join.py's forward does): every neuron input enters it as a zero-copy CPU view, every
//     output leaves it as a neuron tensor over its memory, and where the tensor requires grad the
//     crossing is one autograd node (IslandEdgeBackward) whose backward hands the gradient across the
//     same way, over its memory; the two sides count versions together, so an in-place change of
//     either after forward fails a backward that needs the other, as on the CPU, where they are one
//     tensor. One engine run of the caller's backward runs both graphs. (The Python island crosses by
//     autograd's own copies: a small layer's step paid more for them than for the layer.)
//   * no autograd (grad mode off, nothing requiring grad, or the PrivateUse1 kernel): CPU views, with
//     the inputs' requires_grad flags (the CPU op's path looks at them), results over the same memory.
// Everything else (forward-mode AD, functorch transforms, tensors on other devices, a device with no
// generator yet for dropout between layers) is redispatched to the Python island
// registered at AutogradPrivateUse3 / PrivateUse3 (cpu_islands.register), which computes it or raises
// the error naming op and source. The emulator's island tests run under both (the Python one is the
// whole island without a C++ compiler, or with ACCEL_NEURON_EMULATOR_HOT_PATH=python).

#include "emulator.h"

#include <ATen/core/grad_mode.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <torch/csrc/autograd/forward_grad.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/functions/utils.h>

#include <typeinfo>

namespace accel_neuron_emu {
namespace {

// One op's tensor arguments, read once from its schema (cpu_islands._Plan's twin).
struct IslandPlan {
  size_t nargs = 0;
  std::vector<std::pair<size_t, bool>> tensor_args;  // (argument, whether a Tensor[])
  size_t cpu_by_design = SIZE_MAX;  // batch_sizes: a CPU tensor on every device
  int dropout = -1;
  int train = -1;
};

std::unique_ptr<IslandPlan> make_island_plan(const c10::OperatorHandle& op) {
  auto plan = std::make_unique<IslandPlan>();
  const auto& arguments = op.schema().arguments();
  plan->nargs = arguments.size();
  for (size_t i = 0; i < arguments.size(); ++i) {
    const c10::TypePtr& type = arguments[i].real_type();
    const auto kind = type->kind();
    const bool optional = kind == c10::TypeKind::OptionalType;
    const c10::TypePtr& inner = optional || kind == c10::TypeKind::ListType ? type->containedType(0) : type;
    if (inner->kind() == c10::TypeKind::TensorType) plan->tensor_args.emplace_back(i, kind == c10::TypeKind::ListType);
    const std::string& name = arguments[i].name();
    if (name == "batch_sizes") plan->cpu_by_design = i;
    if (name == "dropout") plan->dropout = static_cast<int>(i);
    if (name == "train") plan->train = static_cast<int>(i);
  }
  return plan;
}

const IslandPlan& island_plan(const c10::OperatorHandle& op) {
  return made_once_per_op<IslandPlan, &make_island_plan>(op);
}

// torch._C._are_functorch_transforms_active()
bool functorch_active() {
  const auto included = c10::impl::tls_local_dispatch_key_set().included_;
  return included.has(c10::DispatchKey::FuncTorchDynamicLayerFrontMode) ||
      included.has(c10::DispatchKey::FuncTorchDynamicLayerBackMode);
}

// A forward-mode AD level is open (torch.autograd.forward_ad's _current_level >= 0; levels do not nest).
bool forward_ad_active() {
  return torch::autograd::ForwardADLevel::try_get_by_idx(0) != nullptr;
}

// One call taken apart: its tensors in plan order, where their results go, and what it asks for.
struct IslandCall {
  c10::SmallVector<at::Tensor, 16> tensors;
  int index = -1;
  bool random = false;  // dropout between layers in training: draws from the device's stream
  bool requires_grad = false;
};

// The call on `stack` taken apart, or false when the Python island must take it (module comment).
bool take_apart(const IslandPlan& plan, const torch::jit::Stack& stack, size_t base, IslandCall* call) {
  for (const auto& [i, many] : plan.tensor_args) {
    const c10::IValue& a = stack[base + i];
    const size_t first = call->tensors.size();
    if (many) {
      for (const at::Tensor& t : a.toTensorList()) call->tensors.push_back(t);
    } else if (a.isTensor()) {
      call->tensors.push_back(a.toTensor());
    }
    for (size_t k = first; k < call->tensors.size(); ++k) {
      const at::Tensor& t = call->tensors[k];
      if (!t.defined()) continue;
      call->requires_grad = call->requires_grad || t.requires_grad();
      if (t.device().type() != kNeuron) {
        if (i != plan.cpu_by_design) return false;  // the Python island checks devices and raises
      } else if (!t.unsafeGetTensorImpl()->has_storage() || !admit(t, false, false, false, &call->index)) {
        return false;
      }
    }
  }
  const auto flag = [&](int i) { return i >= 0 && static_cast<size_t>(i) < plan.nargs && stack[base + i].toBool(); };
  const auto rate = [&](int i) { return i >= 0 && static_cast<size_t>(i) < plan.nargs && stack[base + i].toDouble() != 0.0; };
  call->random = rate(plan.dropout) && flag(plan.train);
  return call->index >= 0;
}

// A gradient crossing an island's edge to `device`: over its own memory (a neuron gradient as a CPU
// view; a CPU one nothing else holds as a neuron tensor), or by autograd's own copy where a graph of the
// backward is being made (create_graph: second-order gradients flow through the copy) or the gradient
// is no plain dense tensor (vmap's batched gradients).
at::Tensor edge_grad(at::Tensor g, c10::Device device) {
  if (!g.defined()) return g;
  c10::TensorImpl* impl = g.unsafeGetTensorImpl();
  if (!at::GradMode::is_enabled() && impl->has_storage() && g.layout() == c10::kStrided && !g.is_conj() &&
      !g.is_neg() && typeid(*impl) == typeid(c10::TensorImpl)) {
    if (device.type() == kNeuron && g.device().type() == c10::DeviceType::CPU && g.use_count() == 1 &&
        g.storage().use_count() == 1) {
      return to_neuron(g, device.index(), nullptr, /*reuse=*/true);
    }
    if (device.type() == c10::DeviceType::CPU && g.device().type() == kNeuron &&
        memory_of(g.storage().unsafeGetStorageImpl()) != nullptr) {
      return cpu_view(g);
    }
  }
  return g.to(g.options().device(device), /*non_blocking=*/false, /*copy=*/false, std::nullopt);
}

// The backward of one side of an island's edge: hands each incoming gradient to the device of the
// tensor it belongs to (edge_grad). One node per side and call (all the inputs that require grad, all
// the outputs that do), not one per tensor: each node costs the engine a dispatch of its own. A plain
// Node, not a torch::autograd::Function (whose backward demangles its name on every call).
struct IslandEdgeBackward : public torch::autograd::Node {
  explicit IslandEdgeBackward(c10::SmallVector<c10::Device, 8> devices) : devices(std::move(devices)) {}
  torch::autograd::variable_list apply(torch::autograd::variable_list&& grads) override {
    torch::autograd::variable_list out;
    out.reserve(grads.size());
    for (size_t i = 0; i < grads.size(); ++i) out.push_back(edge_grad(std::move(grads[i]), devices[i]));
    return out;
  }
  std::string name() const override { return "IslandEdgeBackward"; }
  c10::SmallVector<c10::Device, 8> devices;
};

// `tensors[slots[k]]` (each made over the memory of `from[k]`, which requires grad) as `from[k]` crossing an
// island's edge: the outputs of one autograd node whose backward hands each gradient to its `from`'s
// device, each counting versions with its `from` (an in-place change of either after forward fails a
// backward that needs the other, as on the CPU, where they are one tensor).
template <class Tensors>
void across_edge(Tensors& tensors, const c10::SmallVector<size_t, 16>& slots, const std::vector<at::Tensor>& from) {
  if (from.empty()) return;
  c10::SmallVector<c10::Device, 8> devices;
  for (const at::Tensor& f : from) devices.push_back(f.device());
  auto node = c10::make_intrusive<IslandEdgeBackward>(std::move(devices));
  node->set_next_edges(torch::autograd::collect_next_edges(at::ArrayRef<at::Tensor>(from)));
  c10::intrusive_ptr<torch::autograd::Node> fn(std::move(node));
  for (size_t k = 0; k < slots.size(); ++k) {
    at::Tensor& out = tensors[slots[k]];
    out.unsafeGetTensorImpl()->set_version_counter(from[k].unsafeGetTensorImpl()->version_counter());
    torch::autograd::set_history(out, fn);  // output k of the node, in this order
  }
}

// Put `cpu` (the stand-ins of the call's tensors, in plan order) in their places on `stack`.
void put_back(const IslandPlan& plan, torch::jit::Stack& stack, size_t base, c10::SmallVector<at::Tensor, 16>& cpu) {
  size_t next = 0;
  for (const auto& [i, many] : plan.tensor_args) {
    c10::IValue& a = stack[base + i];
    if (many) {
      const size_t n = a.toTensorList().size();
      c10::List<at::Tensor> list;
      list.reserve(n);
      for (size_t k = 0; k < n; ++k) list.push_back(std::move(cpu[next++]));
      a = std::move(list);
    } else if (a.isTensor()) {
      a = std::move(cpu[next++]);
    }
  }
}

// In inference mode: a CPU view of `t` of t's kind (an inference tensor only for an inference tensor:
// the CPU op treats the two kinds apart, and a view made now would be one).
at::Tensor view_in_kind(const at::Tensor& t) {
  c10::InferenceMode mode(t.is_inference());
  return cpu_view(t);
}

void python_island(const c10::OperatorHandle& op, torch::jit::Stack* stack, bool autograd) {
  hand_to_python(op, stack, autograd ? c10::DispatchKey::AutogradPrivateUse3 : c10::DispatchKey::PrivateUse3);
}

void island(const c10::OperatorHandle& op, torch::jit::Stack* stack, bool autograd) {
  if (functorch_active() || (autograd && forward_ad_active())) return python_island(op, stack, autograd);
  const bool inference = c10::InferenceMode::is_enabled();
  const IslandPlan& plan = island_plan(op);
  const size_t base = stack->size() - plan.nargs;
  IslandCall call;
  if (!take_apart(plan, *stack, base, &call)) return python_island(op, stack, autograd);
  std::unique_ptr<SwappedIn> swapped;
  if (call.random && !(swapped = std::make_unique<SwappedIn>(call.index))->ok()) {
    return python_island(op, stack, autograd);
  }
  const bool join = autograd && call.requires_grad && at::GradMode::is_enabled();

  c10::SmallVector<at::Tensor, 16> cpu;
  c10::SmallVector<size_t, 16> crossing;  // the stand-ins that enter the CPU graph requiring grad
  std::vector<at::Tensor> from;
  cpu.reserve(call.tensors.size());
  for (const at::Tensor& t : call.tensors) {
    if (!t.defined() || t.device().type() != kNeuron) {
      cpu.push_back(t);
    } else if (join && t.requires_grad()) {
      crossing.push_back(cpu.size());
      from.push_back(t);
      cpu.push_back(cpu_view(t));  // zero-copy: into the CPU graph
    } else {
      at::Tensor view = inference ? view_in_kind(t) : cpu_view(t);
      if (!join && t.requires_grad()) view.requires_grad_(true);  // the CPU op's path looks at the flags
      cpu.push_back(std::move(view));
    }
  }
  across_edge(cpu, crossing, from);
  from.clear();
  crossing.clear();
  call.tensors.clear();
  put_back(plan, *stack, base, cpu);
  op.callBoxed(stack);  // from the top: with autograd on, the CPU records its graph
  if (swapped) swapped->restore();
  fast_calls.fetch_add(1, std::memory_order_relaxed);

  c10::SmallVector<at::Tensor, 16> results;  // (the stack's IValues hold their tensors by value)
  for (size_t r = base; r < stack->size(); ++r) {
    c10::IValue& out = (*stack)[r];
    if (!out.isTensor()) continue;
    const at::Tensor& c = out.toTensor();
    if (!c.defined() || c.device().type() != c10::DeviceType::CPU) continue;
    if (join && c.requires_grad()) {
      crossing.push_back(results.size());
      from.push_back(c);
    }
    results.push_back(to_neuron(c, call.index));  // over c's memory: out of the CPU graph
    out = results.back();
  }
  across_edge(results, crossing, from);  // the stack holds the same TensorImpls: it sees their history
}

}  // namespace

void island_autograd_kernel(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  island(op, stack, /*autograd=*/true);
}

void island_kernel(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  island(op, stack, /*autograd=*/false);
}

}  // namespace accel_neuron_emu
