// The c10 device allocator of PrivateUse1: the emulated devices' memory statistics through c10's API.
//
// As a real backend does (PyTorch's OpenReg registers its device allocator the same way), the C++ core
// registers a c10::DeviceAllocator for PrivateUse1, so torch.accelerator's memory functions
// (memory_stats, memory_allocated, max_memory_allocated, memory_reserved, reset_*_memory_stats,
// get_memory_info, empty_cache) read allocator.cpp's statistics through c10 without Python patches.
// Registered on the compiled per-op path only, where the C++ core counts every neuron storage (the
// Python path counts in memory.py, and limits.py routes torch.accelerator's functions there).
//
// Neuron memory is made by the emulator's ops and storages (allocator.cpp: CPU memory under a neuron
// DataPtr whose context keeps the bookkeeping), not by this allocator: a C++ caller asking it for bytes
// directly gets an error saying so (before it, PyTorch's placeholder allocator crashed the process).

#include "emulator.h"

#include <c10/core/CachingDeviceAllocator.h>

#include <algorithm>
#include <cstring>

namespace accel_neuron_emu {
namespace {

// The statistics of device `index` (the current device when negative) in c10's layout: no caching,
// so reserved equals allocated and a segment is an allocation (memory.py's stats() maps them alike).
c10::CachingDeviceAllocator::DeviceStats device_stats(int index) {
  int64_t s[kStatCount];
  read_stats(index, s, kStatCount);
  auto set = [](c10::CachingAllocator::StatArray& a, int64_t current, int64_t peak, int64_t allocated,
                int64_t freed) {
    auto& all = a[static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE)];
    all.current = current;
    all.peak = peak;
    all.allocated = allocated;
    all.freed = freed;
  };
  c10::CachingDeviceAllocator::DeviceStats out;
  set(out.allocated_bytes, s[kAllocated], s[kPeak], s[kAllocatedTotal], s[kFreedTotal]);
  set(out.reserved_bytes, s[kAllocated], s[kPeak], s[kAllocatedTotal], s[kFreedTotal]);
  set(out.active_bytes, s[kAllocated], s[kPeak], s[kAllocatedTotal], s[kFreedTotal]);
  set(out.requested_bytes, s[kAllocated], s[kPeak], s[kAllocatedTotal], s[kFreedTotal]);
  set(out.allocation, s[kCurrentCount], s[kPeakCount], s[kAllocCount], s[kFreeCount]);
  set(out.segment, s[kCurrentCount], s[kPeakCount], s[kAllocCount], s[kFreeCount]);
  set(out.active, s[kCurrentCount], s[kPeakCount], s[kAllocCount], s[kFreeCount]);
  out.num_ooms = s[kNumOoms];
  out.num_device_alloc = s[kAllocCount];
  out.num_device_free = s[kFreeCount];
  return out;
}

int device_or_current(c10::DeviceIndex index) {
  return index < 0 ? accel_neuron_emulator_current_device() : static_cast<int>(index);
}

struct NeuronDeviceAllocator final : public c10::DeviceAllocator {
  c10::DataPtr allocate(size_t n) override {
    TORCH_CHECK_NOT_IMPLEMENTED(
        n == 0, "the neuron emulator makes device memory through its ops and storages, not through c10's "
        "allocator (", n, " bytes were asked of it): create the memory with torch.empty(..., device='neuron') "
        "or torch.UntypedStorage(n, device='neuron') (from C++: at::empty with a neuron device)");
    return c10::DataPtr(nullptr, c10::Device(kNeuron, static_cast<c10::DeviceIndex>(accel_neuron_emulator_current_device())));
  }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    std::memcpy(dest, src, count);  // emulated device memory is CPU memory
  }
  bool initialized() override {
    return true;
  }
  void emptyCache(c10::MempoolId_t /*mempool_id*/) override {}  // no cache to empty
  void recordStream(const c10::DataPtr& /*ptr*/, c10::Stream /*stream*/) override {}  // one stream, synchronous
  c10::CachingDeviceAllocator::DeviceStats getDeviceStats(c10::DeviceIndex index) override {
    return device_stats(device_or_current(index));
  }
  void resetAccumulatedStats(c10::DeviceIndex index) override {
    reset_accumulated_stats(device_or_current(index));
  }
  void resetPeakStats(c10::DeviceIndex index) override {
    reset_peak_stats(device_or_current(index));
  }
  std::pair<size_t, size_t> getMemoryInfo(c10::DeviceIndex index) override {
    int64_t s[kStatCount];
    read_stats(device_or_current(index), s, kStatCount);
    int64_t total = capacity_bytes();
    return {static_cast<size_t>(std::max<int64_t>(total - s[kAllocated], 0)), static_cast<size_t>(total)};
  }
};

}  // namespace

void register_device_allocator() {
  static NeuronDeviceAllocator* allocator = new NeuronDeviceAllocator();  // leaked: c10 keeps a raw pointer
  c10::SetAllocator(kNeuron, allocator, /*priority=*/UINT8_MAX);
}

}  // namespace accel_neuron_emu
