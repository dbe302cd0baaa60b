// The emulated neuron device's C++ device guard (PrivateUse1).
//
// PyTorch's Python backend API registers a device guard whose C++ side always reports
// device 0 and one device, so C++ code that asks for "the current device" (Tensor.to("neuron"),
// torch.tensor(..., device="neuron"), device guards in PyTorch's own kernels, the autograd
// engine, torch.accelerator) could never see neuron:1. This guard replaces it: the current
// device is thread-local (as CUDA's), the device count is the emulator's, and streams and
// events are no-ops (the emulator executes synchronously on the CPU).
//
// It exposes plain C functions (declared in emulator.h), loaded with ctypes.

#include "emulator.h"

#include <c10/core/Device.h>
#include <c10/core/DeviceType.h>
#include <c10/core/Stream.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/util/Exception.h>

namespace {

constexpr c10::DeviceType kType = accel_neuron_emu::kNeuron;
thread_local c10::DeviceIndex current_index = 0;
c10::DeviceIndex device_count = 1;

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
    TORCH_CHECK(
        d.index() >= 0 && d.index() < device_count,
        "device neuron:", static_cast<int>(d.index()), " does not exist: the neuron emulator has ",
        static_cast<int>(device_count), " devices");
    current_index = d.index();
  }
  void uncheckedSetDevice(c10::Device d) const noexcept override {
    if (d.index() >= 0 && d.index() < device_count) {
      current_index = d.index();
    }
  }
  c10::Stream getStream(c10::Device d) const override {
    return c10::Stream(c10::Stream::DEFAULT, d);
  }
  c10::Stream getDefaultStream(c10::Device d) const override {
    return c10::Stream(c10::Stream::DEFAULT, d);
  }
  c10::Stream getNewStream(c10::Device d, int /*priority*/) const override {
    return c10::Stream(c10::Stream::DEFAULT, d);
  }
  c10::Stream getStreamFromGlobalPool(c10::Device d, bool /*high_priority*/) const override {
    return c10::Stream(c10::Stream::DEFAULT, d);
  }
  c10::Stream exchangeStream(c10::Stream s) const override {
    return c10::Stream(c10::Stream::DEFAULT, s.device());
  }
  void destroyEvent(void* /*event*/, const c10::DeviceIndex /*index*/) const noexcept override {}
  void record(void** /*event*/, const c10::Stream& /*stream*/, const c10::DeviceIndex /*index*/,
              const c10::EventFlag /*flag*/) const override {}
  void block(void* /*event*/, const c10::Stream& /*stream*/) const override {}
  bool queryEvent(void* /*event*/) const override {
    return true;
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

}  // extern "C"
#pragma GCC visibility pop
