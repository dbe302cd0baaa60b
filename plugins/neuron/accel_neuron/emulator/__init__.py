"""Pure-Python emulation of the `neuron` device on the CPU (see plugins/neuron/README.md).

Importing this package changes nothing; :func:`install` does, once per process::

    from accel_neuron import emulator
    emulator.install()
    x = torch.ones(3, device="neuron")
"""

from .errors import EmulatorError
from .install import install, is_installed

__all__ = ["EmulatorError", "install", "is_installed"]
