// Per-op plans: which calls of an operator the compiled per-op path serves, from its schema and
// routing.py's tables (handed over at install by native.enable_fast_path).
//
// The compiled path serves the common case: dense neuron tensors on one device (0-dim CPU tensors
// and CPU index tensors allowed; copies mix devices), a device argument on neuron or the CPU, no
// generator argument (the device's default one is passed; a random op without one runs with the
// device's stream swapped into the CPU default generator, SwappedIn), not an op that re-points or
// resizes an argument, out= arguments of one tensor each (one that must grow: the Python kernel).
// A plan says per argument what kind it is and whether the op writes it, and per return which
// argument it returns; an op whose plan is not `fast` always takes the Python kernel.

#include "emulator.h"

#include <unordered_map>
#include <unordered_set>

namespace accel_neuron_emu {
namespace {

std::unordered_set<std::string> slow_names;  // op names the Python kernel must handle (routing.PYTHON_ONLY)
std::unordered_set<std::string> copy_names;  // copies (routing.COPY_OPS)
std::unordered_set<std::string> view_names;  // "name" or "name.overload" of device-agnostic views

bool holds_tensors(const c10::TypePtr& type) {
  if (type->kind() == c10::TypeKind::TensorType) return true;
  for (const auto& t : type->containedTypes()) {
    if (holds_tensors(t)) return true;
  }
  return false;
}

bool is_tensor_type(const c10::TypePtr& type) {
  return type->kind() == c10::TypeKind::TensorType;
}

bool is_optional_tensor_type(const c10::TypePtr& type) {
  return type->kind() == c10::TypeKind::OptionalType && is_tensor_type(type->containedType(0));
}

// The kind of an argument of type `type`; clears `*fast` for tensors, devices or generators inside
// some other structure, and sets `*generator` for a generator argument.
ArgKind kind_of(const c10::TypePtr& type, bool* fast, bool* generator) {
  ArgKind kind = ArgKind::kOther;
  auto k = type->kind();
  if (is_tensor_type(type) || is_optional_tensor_type(type)) {
    kind = ArgKind::kTensor;
  } else if (k == c10::TypeKind::ListType) {
    auto elem = type->containedType(0);
    if (is_tensor_type(elem)) {
      kind = ArgKind::kTensorList;
    } else if (is_optional_tensor_type(elem)) {
      kind = ArgKind::kIndexList;
    }
  } else if (holds_tensors(type)) {
    *fast = false;  // a tensor inside some other structure
  }
  c10::TypePtr inner = k == c10::TypeKind::OptionalType ? type->containedType(0) : type;
  if (inner->kind() == c10::TypeKind::DeviceObjType) {
    kind = ArgKind::kDevice;
  } else if (inner->kind() == c10::TypeKind::GeneratorType) {
    kind = ArgKind::kGenerator;
    *generator = true;
  } else if (kind == ArgKind::kOther) {
    std::string type_str = type->str();
    if (type_str.find("Generator") != std::string::npos || type_str.find("Device") != std::string::npos) {
      *fast = false;  // inside some other structure
    }
  }
  return kind;
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
    ArgKind kind = kind_of(arg.real_type(), &fast, &has_generator);
    const c10::AliasInfo* alias = arg.alias_info();
    if (alias != nullptr && alias->isWrite()) {
      if (arg.kwarg_only()) {  // out=: the kernel may resize it in place (kernels.cpp follows it)
        if (kind == ArgKind::kTensor) {
          plan->outs.push_back(i);
        } else {
          fast = false;  // lists of outputs: the Python kernel
        }
      }
      for (const auto& s : alias->beforeSets()) written[s] = static_cast<int>(i);
    }
    plan->kinds.push_back(kind);
    plan->written.push_back(alias != nullptr && alias->isWrite() && !plan->copy);
    plan->copy_into.push_back(alias != nullptr && alias->isWrite() && plan->copy);
  }
  // random without a generator argument (randn, randint, native_dropout): the device's state swapped in
  plan->seeded = op.hasTag(at::Tag::nondeterministic_seeded) && !has_generator;
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
    const c10::TypePtr& type = ret.real_type();
    bool plain = is_tensor_type(type) || is_optional_tensor_type(type) ||
        (type->kind() == c10::TypeKind::ListType && is_tensor_type(type->containedType(0)));
    if (!plain && holds_tensors(type)) fast = false;
    plan->ret_src.push_back(src);
  }
  plan->fast = fast;
  return plan;
}

}  // namespace

void set_routes(const std::vector<std::string>& python_only, const std::vector<std::string>& copies,
                const std::vector<std::string>& views) {
  slow_names.insert(python_only.begin(), python_only.end());
  copy_names.insert(copies.begin(), copies.end());
  view_names.insert(views.begin(), views.end());
}

bool is_view_route(const std::string& short_name) {
  return view_names.count(short_name) != 0;
}

const Plan& plan_for(const c10::OperatorHandle& op) {
  return made_once_per_op<Plan, &make_plan>(op);
}

}  // namespace accel_neuron_emu
