"""What a machine without a GPU can check about the cuda backend: registration, the reason it gives
when it cannot run, its distributed and visible-devices answers, the cuDNN/TF32/cuBLAS knobs it
sets, and the capabilities it declares without a device. The behaviour on a GPU is the
conformance kit's (test_cuda_conformance.py), run where one is present (``nox -s "tests(backend='cuda')"``).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch
from accel_cuda.backend import CudaBackend, cuda_availability

import accel_abstraction as accel
from accel_abstraction.errors import BackendUnavailableError
from accel_abstraction.plugins import get_host
from accel_abstraction.selection import build_backend, probe

NO_GPU = not torch.cuda.is_available()
needs_no_gpu = pytest.mark.skipif(not NO_GPU, reason="checks the answers given where no GPU is usable")


@pytest.fixture
def backend() -> CudaBackend:
    entry = get_host().registry.get("cuda")
    made = build_backend(entry, None)
    assert isinstance(made, CudaBackend)
    return made


@pytest.fixture
def cudnn_flags() -> Iterator[None]:
    """cuDNN/TF32 flags and ``CUBLAS_WORKSPACE_CONFIG`` as they were before the test."""
    saved = (
        torch.backends.cudnn.deterministic,
        torch.backends.cudnn.benchmark,
        torch.backends.cudnn.allow_tf32,
        torch.backends.cuda.matmul.allow_tf32,
        torch.are_deterministic_algorithms_enabled(),
        torch.is_deterministic_algorithms_warn_only_enabled(),
    )
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("CUBLAS_WORKSPACE_CONFIG", raising=False)
        yield
    (
        torch.backends.cudnn.deterministic,
        torch.backends.cudnn.benchmark,
        torch.backends.cudnn.allow_tf32,
        torch.backends.cuda.matmul.allow_tf32,
        deterministic,
        warn_only,
    ) = saved
    torch.use_deterministic_algorithms(deterministic, warn_only=warn_only)


def test_registered_with_its_priority_and_alias() -> None:
    entry = get_host().registry.get("cuda")
    assert entry.spec.priority == 100
    assert "gpu" in entry.spec.aliases
    assert get_host().registry.get("gpu") is entry


def test_distributed_and_visible_devices_answers(backend: CudaBackend) -> None:
    assert backend.dist_backend() == "nccl"
    assert backend.visible_devices_env() == "CUDA_VISIBLE_DEVICES"
    assert backend.device_type == "cuda"


@needs_no_gpu
def test_unavailable_says_why_and_what_to_do(backend: CudaBackend, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "7")
    avail = probe(backend, get_host().registry.get("cuda"))
    assert not avail.available
    if torch.version.cuda is None:  # a CPU build of torch
        assert "compiled without CUDA support" in avail.reason
        assert torch.__version__ in avail.reason
        assert "ACCEL_BACKEND" in avail.hint
    else:  # a CUDA build on a machine without a usable GPU
        assert "sees no usable GPU" in avail.reason
        assert "CUDA_VISIBLE_DEVICES='7'" in avail.reason
        assert "nvidia-smi" in avail.hint
    assert cuda_availability() == avail


@needs_no_gpu
def test_selecting_it_without_a_gpu_is_an_error_with_the_reason() -> None:
    with pytest.raises(BackendUnavailableError) as caught, accel.using("cuda"):
        pass
    message = str(caught.value)
    assert "cuda" in message
    assert cuda_availability().reason in message


@needs_no_gpu
def test_capabilities_without_a_device(backend: CudaBackend) -> None:
    caps = backend.capabilities()
    # declared by the backend whatever the device ...
    assert caps.streams and caps.events and caps.memory_stats and caps.graphs and caps.pinned_memory
    assert caps.compile_backend == "inductor"
    assert caps.distributed == torch.distributed.is_available()
    # ... and what depends on the device's compute capability is off without one
    assert not caps.tf32 and not caps.fp8 and not caps.bf16
    assert backend.supported_dtypes() == [torch.float32, torch.float16]
    assert backend.is_bf16_supported() is False


@needs_no_gpu
def test_no_device_id_for_a_rank_without_a_gpu(backend: CudaBackend) -> None:
    assert backend.dist_device_id(0) is None


def test_deterministic_sets_cudnn_and_cublas(backend: CudaBackend, cudnn_flags: None) -> None:
    import os

    torch.backends.cudnn.benchmark = True
    backend.set_deterministic(True)
    assert torch.are_deterministic_algorithms_enabled()
    assert torch.backends.cudnn.deterministic is True
    assert torch.backends.cudnn.benchmark is False
    assert os.environ["CUBLAS_WORKSPACE_CONFIG"] == ":4096:8"
    backend.set_deterministic(False)
    assert not torch.are_deterministic_algorithms_enabled()
    assert torch.backends.cudnn.deterministic is False


def test_deterministic_keeps_a_users_cublas_workspace(
    backend: CudaBackend, cudnn_flags: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    monkeypatch.setenv("CUBLAS_WORKSPACE_CONFIG", ":16:8")
    backend.set_deterministic(True, warn_only=True)
    assert os.environ["CUBLAS_WORKSPACE_CONFIG"] == ":16:8"
    assert torch.is_deterministic_algorithms_warn_only_enabled()


def test_benchmark_and_tf32_knobs(backend: CudaBackend, cudnn_flags: None) -> None:
    backend.set_benchmark(True)
    assert torch.backends.cudnn.benchmark is True
    backend.set_benchmark(False)
    assert torch.backends.cudnn.benchmark is False
    backend.set_allow_tf32(True)
    assert torch.backends.cuda.matmul.allow_tf32 is True and torch.backends.cudnn.allow_tf32 is True
    backend.set_allow_tf32(False)
    assert torch.backends.cuda.matmul.allow_tf32 is False and torch.backends.cudnn.allow_tf32 is False


def test_manual_seed_seeds_the_cpu_generator(backend: CudaBackend) -> None:
    backend.manual_seed(1234)
    first = torch.rand(4)
    torch.manual_seed(1234)
    assert torch.equal(first, torch.rand(4))


def test_env_info_names_the_build(backend: CudaBackend) -> None:
    rows = dict(backend.env_info())
    assert rows["torch"] == torch.__version__
    assert rows["CUDA runtime"] == str(torch.version.cuda)
    if NO_GPU:
        assert not any(key.startswith("cuda:") for key in rows)


def test_hot_bindings_cover_the_step_calls(backend: CudaBackend) -> None:
    bound = backend.hot_bindings()
    assert set(bound) == {"synchronize", "device_count", "current_device", "memory_allocated", "max_memory_allocated"}
    assert bound["device_count"] is torch.cuda.device_count
    if NO_GPU:
        assert bound["device_count"]() == 0


@needs_no_gpu
def test_amp_dtype_without_bf16_is_float16(backend: CudaBackend) -> None:
    # no device, so no bf16: the "auto" AMP dtype falls back to float16, the dtype GradScaler exists for
    assert backend.preferred_amp_dtype() is torch.float16
    assert torch.bfloat16 not in backend.supported_dtypes()
