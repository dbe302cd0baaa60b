"""NVIDIA CUDA backend for accel-abstraction."""
