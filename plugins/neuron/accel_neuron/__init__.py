"""AWS Trainium (Neuron) backend for accel-abstraction, with a CPU emulation of the neuron device."""
