// The emulated neuron device's C++ device guard (PrivateUse1).
//
// PyTorch's Python backend API registers a device guard whose C++ side always reports
// device 0 and one device, so C++ code that asks for "the current device" (Tensor.to("neuron"),
// torch.tensor(..., device="neuron"), device guards in PyTorch's own kernels, the autograd
// engine, torch.accelerator) could never see neuron:1. This guard replaces it: the current
// device is thread-local (as CUDA's), the device count is the emulator's.
//
// Streams and events. The emulator executes every op at once on the CPU, so a stream orders
// nothing and every recorded event is complete; but what PyTorch reads off streams is kept, as
// OpenReg's guard keeps it: a current stream per device per thread (default: the device's
// default stream, id 0), new streams with ids of their own, so two streams are two streams to
// torch.Stream, torch.accelerator, torch.neuron (device_streams.py, through the C entry points
// below) and the autograd engine, which compares the stream a gradient accumulator was made
// under with the one its gradient arrives on (the AccumulateGrad stream-mismatch warning). A
// stream holds nothing, so its id is never recycled (CUDA's pool recycles 32 real queues per
// priority); priorities are accepted and not kept. Events (torch.Event, torch.neuron.Event, which
// is one, and the engine's) carry the host time and the device of their last record: elapsedTime is
// the host milliseconds between two records on one device. c10's InlineEvent makes CUDA's checks
// before it asks the guard (both made with enable_timing=True, both recorded: ValueError with
// CUDA's words), so the guard checks only what is its own. Nothing here is on the per-op path:
// getDevice/setDevice are as before, and the engine asks for a stream when it records a node, not per op.
//
// It exposes plain C functions (declared in emulator.h), loaded with ctypes.

#include "emulator.h"

#include <c10/core/Device.h>
#include <c10/core/DeviceType.h>
#include <c10/core/Stream.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/util/Exception.h>

#include <atomic>
#include <chrono>
#include <vector>

namespace {

constexpr c10::DeviceType kType = accel_neuron_emu::kNeuron;
thread_local c10::DeviceIndex current_index = 0;
c10::DeviceIndex device_count = 1;

// ---- streams: ids only ---------------------------------------------------------------------

constexpr c10::StreamId kDefaultStream = 0;  // every device's default stream (c10's and CUDA's id)
std::atomic<c10::StreamId> next_stream_id{1};
// The calling thread's current stream per device index; an index past the end: its default stream.
thread_local std::vector<c10::StreamId> current_streams;

c10::StreamId current_stream_id(c10::DeviceIndex index) {
  return static_cast<size_t>(index) < current_streams.size() ? current_streams[index] : kDefaultStream;
}

void set_current_stream_id(c10::DeviceIndex index, c10::StreamId id) {
  if (static_cast<size_t>(index) >= current_streams.size()) {
    current_streams.resize(static_cast<size_t>(index) + 1, kDefaultStream);
  }
  current_streams[index] = id;
}

// `index` if it names an emulated device, else the error setDevice and the stream calls raise.
c10::DeviceIndex checked(c10::DeviceIndex index) {
  TORCH_CHECK(
      index >= 0 && index < device_count, "device neuron:", static_cast<int>(index),
      " does not exist: the neuron emulator has ", static_cast<int>(device_count), " devices");
  return index;
}

// The index `d` names (-1, as torch.Stream(device="neuron") passes it: the current device), checked.
c10::DeviceIndex stream_device(c10::Device d) {
  return checked(d.has_index() ? d.index() : current_index);
}

c10::Stream make_stream(c10::DeviceIndex index, c10::StreamId id) {
  return c10::Stream(c10::Stream::UNSAFE, c10::Device(kType, index), id);
}

// ---- events: the host time of the last record ------------------------------------------------

struct EmulatedEvent {
  std::chrono::steady_clock::time_point recorded_at;
  c10::DeviceIndex index = -1;  // the device of the stream that recorded it (c10::Event keeps it fixed)
};

struct EmulatorDeviceGuard final : public c10::impl::DeviceGuardImplInterface {
  c10::DeviceType type() const override {
    return kType;
  }
  c10::Device exchangeDevice(c10::Device d) const override {
    c10::Device old = getDevice();
    if (d.index() != current_index) {
      setDevice(d);
    }
    return old;
  }
  c10::Device getDevice() const override {
    return c10::Device(kType, current_index);
  }
  void setDevice(c10::Device d) const override {
    current_index = checked(d.index());
  }
  void uncheckedSetDevice(c10::Device d) const noexcept override {
    if (d.index() >= 0 && d.index() < device_count) {
      current_index = d.index();
    }
  }
  c10::Stream getStream(c10::Device d) const override {
    c10::DeviceIndex index = stream_device(d);
    return make_stream(index, current_stream_id(index));
  }
  c10::Stream getDefaultStream(c10::Device d) const override {
    return make_stream(stream_device(d), kDefaultStream);
  }
  c10::Stream getNewStream(c10::Device d, int /*priority*/) const override {
    return make_stream(stream_device(d), next_stream_id.fetch_add(1, std::memory_order_relaxed));
  }
  c10::Stream getStreamFromGlobalPool(c10::Device d, bool /*high_priority*/) const override {
    return getNewStream(d, 0);
  }
  c10::Stream exchangeStream(c10::Stream s) const override {
    c10::DeviceIndex index = stream_device(s.device());
    c10::Stream old = make_stream(index, current_stream_id(index));
    set_current_stream_id(index, s.id());
    return old;
  }
  void destroyEvent(void* event, const c10::DeviceIndex /*index*/) const noexcept override {
    delete static_cast<EmulatedEvent*>(event);
  }
  void record(void** event, const c10::Stream& stream, const c10::DeviceIndex index,
              const c10::EventFlag /*flag: InlineEvent keeps it and checks it for elapsedTime*/) const override {
    TORCH_CHECK(
        index == -1 || index == stream.device_index(), "event device neuron:", static_cast<int>(index),
        " does not match the recording stream's device neuron:", static_cast<int>(stream.device_index()));
    auto* e = static_cast<EmulatedEvent*>(*event);
    if (e == nullptr) {
      e = new EmulatedEvent();
      *event = e;
    }
    e->index = stream.device_index();
    e->recorded_at = std::chrono::steady_clock::now();  // the work before it is done: it ran already
  }
  void block(void* /*event*/, const c10::Stream& /*stream*/) const override {}
  bool queryEvent(void* /*event*/) const override {
    return true;
  }
  double elapsedTime(void* start, void* end, const c10::DeviceIndex /*index*/) const override {
    TORCH_CHECK(start != nullptr && end != nullptr, "Both events must be recorded before calculating elapsed time.");
    auto* a = static_cast<EmulatedEvent*>(start);
    auto* b = static_cast<EmulatedEvent*>(end);
    TORCH_CHECK(
        a->index == b->index, "elapsed_time between events recorded on neuron:", static_cast<int>(a->index),
        " and neuron:", static_cast<int>(b->index),
        ": TorchNeuron times events of one device only; record both on streams of that device");
    return std::chrono::duration<double, std::milli>(b->recorded_at - a->recorded_at).count();
  }
  c10::DeviceIndex deviceCount() const noexcept override {
    return device_count;
  }
  bool queryStream(const c10::Stream& /*stream*/) const override {
    return true;
  }
  void synchronizeStream(const c10::Stream& /*stream*/) const override {}
  void synchronizeEvent(void* /*event*/) const override {}
  void synchronizeDevice(const c10::DeviceIndex /*index*/) const override {}
};

}  // namespace

#pragma GCC visibility push(default)  // the C entry points ctypes loads (the rest is hidden)
extern "C" {

// Register the guard for PrivateUse1 with `count` devices (replacing the Python one).
int accel_neuron_emulator_register_guard(int count) {
  static EmulatorDeviceGuard* guard = new EmulatorDeviceGuard();  // leaked: the registry does not own it
  device_count = static_cast<c10::DeviceIndex>(count);
  c10::impl::registerDeviceGuard(kType, guard);
  return 0;
}

int accel_neuron_emulator_device_count() {
  return device_count;
}

int accel_neuron_emulator_current_device() {
  return current_index;
}

void accel_neuron_emulator_set_current_device(int index) {
  current_index = static_cast<c10::DeviceIndex>(index);
}

// The calling thread's current stream id on device `index` (checked by the caller), and setting it:
// torch.neuron's streams (device_streams.py) read and write the state the guard answers with.
int64_t accel_neuron_emulator_current_stream(int index) {
  return current_stream_id(static_cast<c10::DeviceIndex>(index));
}

void accel_neuron_emulator_set_current_stream(int index, int64_t id) {
  set_current_stream_id(static_cast<c10::DeviceIndex>(index), id);
}

// A stream id no stream of any device has had (torch.neuron.Stream(); the guard's getNewStream too).
int64_t accel_neuron_emulator_new_stream() {
  return next_stream_id.fetch_add(1, std::memory_order_relaxed);
}

}  // extern "C"
#pragma GCC visibility pop
