// Typed (unboxed) kernels for the ops a training step calls most.
//
// The boxed kernel (kernels.cpp) boxes every call into an IValue stack and calls the CPU kernel boxed,
// which unboxes it again: about 0.5 us of the ~1.3 us an op costs. The ops a training step calls most
// (unboxed_ops below) get a typed kernel running the same common case for their arguments (only
// tensors and plain values: no lists, devices or generators): the same checks (admit), CPU views for
// neuron tensors, the op called from the top, written arguments returned as passed, other CPU results
// wrapped as neuron tensors (run_common_case, as_neuron_result), and the Python kernel (PrivateUse3)
// for every other case. An op gets one only where the boxed kernel serves it now and its plan
// (plans.cpp) is the fast, plain kind. Factories (empty, empty_strided, zeros, new_*, *_like, ...) take
// a device argument: as in the boxed kernel's check_args it names the result's device (none: the
// tensor arguments'), and the CPU kernel gets the CPU.

#include "emulator.h"

#include <ATen/ops/_log_softmax_backward_data_ops.h>
#include <ATen/ops/_local_scalar_dense_ops.h>
#include <ATen/ops/_log_softmax_ops.h>
#include <ATen/ops/_softmax_backward_data_ops.h>
#include <ATen/ops/_softmax_ops.h>
#include <ATen/ops/abs_ops.h>
#include <ATen/ops/add_ops.h>
#include <ATen/ops/addcmul_ops.h>
#include <ATen/ops/addmm_ops.h>
#include <ATen/ops/all_ops.h>
#include <ATen/ops/any_ops.h>
#include <ATen/ops/bitwise_and_ops.h>
#include <ATen/ops/bitwise_not_ops.h>
#include <ATen/ops/bitwise_or_ops.h>
#include <ATen/ops/bmm_ops.h>
#include <ATen/ops/clamp_ops.h>
#include <ATen/ops/clone_ops.h>
#include <ATen/ops/div_ops.h>
#include <ATen/ops/dot_ops.h>
#include <ATen/ops/embedding_dense_backward_ops.h>
#include <ATen/ops/empty_like_ops.h>
#include <ATen/ops/empty_ops.h>
#include <ATen/ops/empty_strided_ops.h>
#include <ATen/ops/full_like_ops.h>
#include <ATen/ops/full_ops.h>
#include <ATen/ops/new_empty_ops.h>
#include <ATen/ops/new_empty_strided_ops.h>
#include <ATen/ops/new_full_ops.h>
#include <ATen/ops/new_ones_ops.h>
#include <ATen/ops/new_zeros_ops.h>
#include <ATen/ops/ones_like_ops.h>
#include <ATen/ops/ones_ops.h>
#include <ATen/ops/scalar_tensor_ops.h>
#include <ATen/ops/zeros_like_ops.h>
#include <ATen/ops/zeros_ops.h>
#include <ATen/ops/eq_ops.h>
#include <ATen/ops/exp_ops.h>
#include <ATen/ops/fill_ops.h>
#include <ATen/ops/gather_ops.h>
#include <ATen/ops/ge_ops.h>
#include <ATen/ops/gelu_backward_ops.h>
#include <ATen/ops/gelu_ops.h>
#include <ATen/ops/gt_ops.h>
#include <ATen/ops/index_add_ops.h>
#include <ATen/ops/index_select_ops.h>
#include <ATen/ops/isclose_ops.h>
#include <ATen/ops/isnan_ops.h>
#include <ATen/ops/le_ops.h>
#include <ATen/ops/log_ops.h>
#include <ATen/ops/logical_and_ops.h>
#include <ATen/ops/logical_not_ops.h>
#include <ATen/ops/lt_ops.h>
#include <ATen/ops/masked_fill_ops.h>
#include <ATen/ops/maximum_ops.h>
#include <ATen/ops/mean_ops.h>
#include <ATen/ops/minimum_ops.h>
#include <ATen/ops/mm_ops.h>
#include <ATen/ops/mse_loss_backward_ops.h>
#include <ATen/ops/mse_loss_ops.h>
#include <ATen/ops/mul_ops.h>
#include <ATen/ops/native_layer_norm_backward_ops.h>
#include <ATen/ops/native_layer_norm_ops.h>
#include <ATen/ops/ne_ops.h>
#include <ATen/ops/neg_ops.h>
#include <ATen/ops/nll_loss2d_backward_ops.h>
#include <ATen/ops/nll_loss2d_forward_ops.h>
#include <ATen/ops/nll_loss_backward_ops.h>
#include <ATen/ops/nll_loss_forward_ops.h>
#include <ATen/ops/pow_ops.h>
#include <ATen/ops/relu_ops.h>
#include <ATen/ops/rsqrt_ops.h>
#include <ATen/ops/sigmoid_backward_ops.h>
#include <ATen/ops/sigmoid_ops.h>
#include <ATen/ops/silu_backward_ops.h>
#include <ATen/ops/silu_ops.h>
#include <ATen/ops/sort_ops.h>
#include <ATen/ops/sqrt_ops.h>
#include <ATen/ops/sub_ops.h>
#include <ATen/ops/sum_ops.h>
#include <ATen/ops/tanh_backward_ops.h>
#include <ATen/ops/tanh_ops.h>
#include <ATen/ops/threshold_backward_ops.h>
#include <ATen/ops/where_ops.h>
#include <ATen/ops/zero_ops.h>

#include <tuple>
#include <type_traits>
#include <unordered_set>

namespace accel_neuron_emu {
namespace {

// admit() for each kind of typed argument (`written`: the in-place op's self).
inline bool check_arg(const at::Tensor& t, bool written, int* index) {
  return admit(t, false, false, written, index);
}
inline bool check_arg(const std::optional<at::Tensor>& t, bool written, int* index) {
  return !t.has_value() || admit(*t, false, false, written, index);
}
// A device argument, as in check_args: none leaves the result on the tensor arguments' device (a factory
// has none: the Python kernel picks the current device); a neuron device that exists is the result's (no
// index: the current one) whatever the tensors' device; the CPU or another type takes the Python kernel.
// The ops that take one put it after their tensors (new_*, *_like), so it overrides their device as the
// boxed kernel's `asked` does; a tensor checked after it on another device takes the Python kernel.
inline bool check_arg(const std::optional<c10::Device>& d, bool /*written*/, int* index) {
  if (!d.has_value()) return true;
  if (d->type() != kNeuron) return false;
  int asked = asked_device(*d);
  if (asked < 0) return false;
  *index = asked;
  return true;
}
template <class T>
inline bool check_arg(const T& /*value*/, bool /*written*/, int* /*index*/) {
  using D = std::decay_t<T>;
  static_assert(
      !std::is_same_v<D, std::optional<at::Generator>> && !std::is_same_v<D, at::Generator> &&
          !std::is_same_v<D, c10::Device> && !std::is_same_v<D, std::optional<c10::Device>> &&
          !std::is_same_v<D, at::TensorList> && !std::is_same_v<D, at::ITensorListRef>,
      "unboxed kernels take tensors, plain values and a factory's optional device only");
  return true;
}

inline at::Tensor cpu_arg(const at::Tensor& t, LentViews& lent) {
  return view_if_neuron(t, lent);
}
inline std::optional<at::Tensor> cpu_arg(const std::optional<at::Tensor>& t, LentViews& lent) {
  return t.has_value() ? std::optional<at::Tensor>(view_if_neuron(*t, lent)) : std::nullopt;
}
// (admitted: none, or a neuron device) the CPU kernel makes the result on the CPU; it is wrapped after
inline std::optional<c10::Device> cpu_arg(const std::optional<c10::Device>& d, LentViews& /*lent*/) {
  return d.has_value() ? std::optional<c10::Device>(c10::Device(c10::DeviceType::CPU)) : std::nullopt;
}
template <class T>
inline std::decay_t<T> cpu_arg(const T& value, LentViews& /*lent*/) {
  return value;
}

inline at::Tensor wrap_result(at::Tensor&& t, int index, const LentViews& lent) {
  return as_neuron_result(t, index, lent);
}
// A scalar result (Tensor.item()'s _local_scalar_dense) is the op's result as it is.
inline c10::Scalar wrap_result(c10::Scalar&& s, int /*index*/, const LentViews& /*lent*/) {
  return std::move(s);
}
template <class... T>
inline std::tuple<T...> wrap_result(std::tuple<T...>&& t, int index, const LentViews& lent) {
  return std::apply([index, &lent](auto&&... x) { return std::tuple<T...>(wrap_result(std::move(x), index, lent)...); },
                    std::move(t));
}

template <class Op, class Sig = typename Op::schema>
struct Unboxed;

template <class Op, class R, class First, class... Rest>
struct Unboxed<Op, R(First, Rest...)> {
  static constexpr bool kInPlace = std::is_same_v<R, at::Tensor&>;  // returns its first argument
  static_assert(!kInPlace || std::is_same_v<First, at::Tensor&>, "an in-place op returns its first argument");
  // What the call returns before wrapping: the first argument itself when in place.
  using Out = std::conditional_t<kInPlace, bool, std::decay_t<R>>;

  static R slow_path(First first, Rest... rest) {
    slow_calls.fetch_add(1, std::memory_order_relaxed);
    return Op::redispatch(c10::DispatchKeySet(c10::DispatchKey::PrivateUse3), std::forward<First>(first),
                          std::forward<Rest>(rest)...);
  }

  static R call(First first, Rest... rest) {
    int index = -1;
    if (!(check_arg(first, kInPlace, &index) && (check_arg(rest, false, &index) && ...)) || index < 0) {
      return slow_path(std::forward<First>(first), std::forward<Rest>(rest)...);
    }
    LentViews lent;
    auto cpu = std::make_tuple(cpu_arg(first, lent), cpu_arg(rest, lent)...);
    Out out{};
    bool served = run_common_case(
        index, lent,
        [&] {
          if constexpr (kInPlace) {
            std::apply([](auto&... a) { Op::call(a...); }, cpu);
          } else {
            out = std::apply([](auto&... a) { return Op::call(a...); }, cpu);
          }
          cpu = decltype(cpu)();  // drop our references to the views first
        },
        [&] {
          if constexpr (!kInPlace) out = wrap_result(std::move(out), index, lent);
        });
    if (!served) return slow_path(std::forward<First>(first), std::forward<Rest>(rest)...);
    if constexpr (kInPlace) {
      return first;
    } else {
      return out;
    }
  }
};

struct UnboxedEntry {
  const char* name;      // "aten::mul"
  const char* overload;  // "Tensor"
  bool in_place;
  void (*register_in)(torch::Library&, const char*);
};

template <class Op>
void register_unboxed(torch::Library& lib, const char* qualname) {
  lib.impl(qualname, TORCH_FN(Unboxed<Op>::call));
}

template <class... Ops>
std::vector<UnboxedEntry> unboxed_entries() {
  return {UnboxedEntry{Ops::name, Ops::overload_name, Unboxed<Ops>::kInPlace, &register_unboxed<Ops>}...};
}

// The ops a training step (examples/train.py, the MLP and transformer benchmarks) and PyTorch's test
// files (comparisons, masks, fills) call most.
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
      o::sigmoid_backward, o::silu, o::silu_backward, o::exp, o::rsqrt, o::pow_Tensor_Scalar, o::gather,
      // what PyTorch's test files compare and check with most (assertEqual's isclose, isnan masks)
      o::abs, o::eq_Tensor, o::eq_Scalar, o::ne_Tensor, o::ne_Scalar, o::le_Tensor, o::le_Scalar, o::lt_Tensor,
      o::lt_Scalar, o::ge_Tensor, o::ge_Scalar, o::gt_Tensor, o::gt_Scalar, o::isnan, o::bitwise_and_Tensor,
      o::bitwise_and__Tensor, o::bitwise_or_Tensor, o::bitwise_or__Tensor, o::logical_and, o::logical_not, o::all,
      o::any, o::zero_, o::fill__Scalar, o::clamp, o::maximum, o::minimum, o::sub__Tensor, o::add__Scalar,
      // what PyTorch's test_modules runs most through the boxed kernel (nn.LinearCrossEntropyLoss's chunks)
      o::dot, o::exp_, o::log_, o::neg_, o::index_add_, o::addmm_, o::masked_fill__Scalar, o::nll_loss2d_forward,
      o::nll_loss2d_backward,
      // Tensor.item(), which PyTorch's test files call between ops (test_modules: ~190k calls)
      o::_local_scalar_dense,
      // composite_overrides.WHOLE_ON_DEVICE: served whole (the CPU's composite once, on CPU views)
      o::isclose,
      // factories: every zeros, ones, full, *_like and new_* on the device ends in one of them, or is one
      // the compiled path registers per op (kernel_keys.native_ops: the CPU's composite run whole)
      o::empty_memory_format, o::empty_strided, o::zeros, o::ones, o::full, o::scalar_tensor, o::new_empty,
      o::new_empty_strided, o::new_zeros, o::new_ones, o::new_full, o::empty_like, o::zeros_like, o::ones_like,
      o::full_like>();
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
  if (!plan.fast || plan.view || plan.copy || plan.seeded) return false;
  for (ArgKind k : plan.kinds) {
    if (k != ArgKind::kTensor && k != ArgKind::kOther && k != ArgKind::kDevice) return false;
  }
  for (size_t r = 0; r < plan.ret_src.size(); ++r) {
    int want = e.in_place && r == 0 ? 0 : -1;
    if (plan.ret_src[r] != want) return false;
  }
  return !e.in_place || plan.ret_src.size() == 1;
}

}  // namespace

std::vector<std::string> register_typed_kernels(torch::Library& lib, const std::vector<std::string>& listed) {
  std::unordered_set<std::string> per_op(listed.begin(), listed.end());
  std::vector<std::string> typed;
  for (const UnboxedEntry& e : unboxed_ops()) {
    auto op = c10::Dispatcher::singleton().findOp({e.name, e.overload});
    if (!op.has_value()) continue;
    std::string short_name = std::string(e.name).substr(6) + (e.overload[0] != '\0' ? "." : "") + e.overload;
    if (!unboxed_fits(*op, e, per_op.count(short_name) != 0)) continue;
    e.register_in(lib, short_name.c_str());
    typed.push_back(short_name);
  }
  return typed;
}

}  // namespace accel_neuron_emu
