"""Device spec for transformers' own test harness: run a model's tests on the neuron device.

transformers' ``testing_utils`` imports the file named by ``TRANSFORMERS_TEST_DEVICE_SPEC``
(a path relative to the working directory, imported by its file name) and reads the names
below. With the emulated device configured (``ACCEL_BACKEND=neuron ACCEL_NEURON_EMULATE=1``)
``import torch`` has already set the device up (accel-neuron's ``torch.backends`` autoload);
natively, TorchNeuron's own autoload has. See docs/ci.md ("transformers' model tests").
"""

import torch

#: The device type the tests create their tensors and models on.
DEVICE_NAME = "neuron"


def MANUAL_SEED_FN(seed: int) -> None:  # noqa: N802 - the name transformers reads
    torch.neuron.manual_seed(seed)  # type: ignore[attr-defined]


def EMPTY_CACHE_FN() -> None:  # noqa: N802
    torch.neuron.empty_cache()  # type: ignore[attr-defined]


def DEVICE_COUNT_FN() -> int:  # noqa: N802
    return int(torch.neuron.device_count())  # type: ignore[attr-defined]
