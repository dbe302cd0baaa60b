"""The names the ``neuron`` backend answers to (declared once: the plugin registers them, the
torch autoload recognises them in ``ACCEL_BACKEND`` without loading the plugin)."""

#: The backend name, and the device type of TorchNeuron's PrivateUse1 device.
NEURON = "neuron"
#: Other names ``ACCEL_BACKEND`` / ``[tool.accel] backend`` may use for it.
NEURON_ALIASES: tuple[str, ...] = ("trainium", "trn")
