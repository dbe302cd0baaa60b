"""Pure-Python emulation of the `neuron` device on the CPU (see README)."""
