"""assert_backends_match: equal results pass, a diverging backend is named and located."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch

import accel_abstraction as accel
import accel_abstraction.plugins as plugins
import accel_abstraction.runtime as runtime
from accel_abstraction.testing import assert_backends_match
from tests.testing import fakes, match_fns


@pytest.fixture(autouse=True)
def fake_backends(clean_accel_env: None) -> Iterator[None]:
    fakes.install()
    yield
    runtime.reset()
    plugins.reset()


def test_equal_results_pass_and_come_back_on_the_cpu() -> None:
    results = assert_backends_match(match_fns.forward, backends=["cpu", "fakecpu"])
    assert list(results) == ["cpu", "fakecpu"]
    assert results["fakecpu"]["y"].device.type == "cpu"
    assert torch.equal(results["cpu"]["inputs"][1][0], results["fakecpu"]["inputs"][1][0])


def test_selection_is_restored() -> None:
    before = accel.use("cpu")
    assert_backends_match(match_fns.forward, backends=["fakecpu", "fakecpu"])
    assert accel.backend() is before


def test_diverging_backend_is_named_and_located() -> None:
    with pytest.raises(AssertionError) as info:
        assert_backends_match(match_fns.off_by_a_bit, backends=["cpu", "fakecpu"])
    msg = str(info.value)
    assert msg.startswith(
        "backend 'fakecpu' diverged from 'cpu' at result[0]: 1 of 6 elements differ (bitwise)"
    )
    assert "first at index (1, 2): fakecpu=5.000999927520752 cpu=5.0" in msg
    assert "max abs diff 0.000999928" in msg


def test_tolerances_accept_small_differences() -> None:
    assert_backends_match(match_fns.off_by_a_bit, backends=["cpu", "fakecpu"], atol=1e-2)
    assert_backends_match(match_fns.off_by_a_bit, backends=["cpu", "fakecpu"], rtol=1e-3)
    with pytest.raises(AssertionError, match=r"\(rtol=1e-05, atol=0\)"):
        assert_backends_match(match_fns.off_by_a_bit, backends=["cpu", "fakecpu"], rtol=1e-5)


def test_bitwise_means_bits() -> None:
    def signed_zero() -> dict[str, torch.Tensor]:
        zero = -0.0 if accel.backend().name == "fakecpu" else 0.0
        return {"nan": torch.tensor([float("nan")]), "z": torch.tensor([1.0, zero])}

    with pytest.raises(
        AssertionError, match=r"at result\['z'\]: 1 of 2 elements differ \(bitwise\); first at index \(1,\)"
    ):
        assert_backends_match(signed_zero, backends=["cpu", "fakecpu"])
    assert_backends_match(signed_zero, backends=["cpu", "fakecpu"], atol=1e-9)  # values equal, NaNs agree


def test_structure_and_dtype_differences_are_reported() -> None:
    def dtype() -> torch.Tensor:
        return torch.zeros(2, dtype=torch.float16 if accel.backend().name == "fakecpu" else torch.float32)

    def structure() -> dict[str, object]:
        return {"a": 1} if accel.backend().name == "fakecpu" else {"a": 1, "b": 2}

    with pytest.raises(AssertionError, match=r"at result: dtype torch.float16 != torch.float32"):
        assert_backends_match(dtype, backends=["cpu", "fakecpu"])
    with pytest.raises(AssertionError, match=r"at result: keys \['a'\] != \['a', 'b'\]"):
        assert_backends_match(structure, backends=["cpu", "fakecpu"])


def test_subprocess_mode_needs_an_importable_function() -> None:
    with pytest.raises(ValueError, match="importable function: pass 'module:function'"):
        assert_backends_match(lambda: torch.ones(1), backends=["cpu"], subprocess=True)


@pytest.mark.slow
def test_subprocess_mode_runs_each_backend_in_its_own_process() -> None:
    results = assert_backends_match(
        "tests.testing.match_fns:forward", backends=["cpu", "cpu"], subprocess=True
    )
    assert list(results) == ["cpu", "cpu#2"]
    assert torch.equal(results["cpu"]["y"], results["cpu#2"]["y"])


@pytest.mark.slow
def test_cpu_and_emulated_neuron_match_across_processes() -> None:
    """The emulation needs the PrivateUse1 slot: 'auto' runs it in a subprocess, with its emulation variable."""
    results = assert_backends_match(
        "tests.testing.match_fns:forward", backends=["cpu", "neuron"], subprocess="auto"
    )
    assert list(results) == ["cpu", "neuron"]
    with pytest.raises(
        AssertionError, match=r"backend 'neuron' diverged from 'cpu' at result\[0\]: 1 of 6 elements"
    ):
        assert_backends_match(
            "tests.testing.match_fns:off_by_a_bit", backends=["cpu", "neuron"], subprocess="auto"
        )
