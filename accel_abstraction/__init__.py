"""accel-abstraction: a hardware-agnostic accelerator layer for PyTorch."""
