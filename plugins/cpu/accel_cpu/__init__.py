"""CPU backend for accel-abstraction (always available)."""
