"""The PyTorch test tree's sources list and the suite runner's bookkeeping (scripts/torch_*.py),
and what the test-expectation patch 0017 says about the emulated device."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest
import torch

SCRIPTS = Path(__file__).resolve().parent / "scripts"


def _load(name: str) -> ModuleType:
    sys.path.insert(0, str(SCRIPTS))
    spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


tree = _load("torch_tests_tree")
suite = _load("torch_suite")


def test_the_sources_pin_the_commit_the_installed_wheel_was_built_from() -> None:
    src = tree.read_sources(tree.SOURCES)
    assert src.repo == "pytorch/pytorch"
    assert src.tag == f"v{torch.__version__.split('+')[0]}"
    assert src.commit == torch.version.git_version
    for test_file in suite.DEFAULT_FILES:
        assert f"test/{test_file}" in src.paths, test_file
    assert {"test/test_torch.py", "test/test_nn.py", "test/test_modules.py", "test/test_autograd.py"} <= set(
        src.paths
    )


def test_tests_are_compared_by_name_with_the_device_taken_out() -> None:
    assert suite.generic_id("test_view_ops.TestViewOpsPRIVATEUSE1::test_view_neuron_float32", "neuron") == (
        "test_view_ops.TestViewOps::test_view_<device>_float32"
    )
    assert suite.generic_id("test_view_ops.TestViewOpsCPU::test_view_cpu_float32", "cpu") == (
        "test_view_ops.TestViewOps::test_view_<device>_float32"
    )
    # a test whose own name contains the device word keeps it: only the instantiated suffix goes
    assert suite.generic_id("m.TestXCPU::test_cpu_copy_cpu", "cpu") == "m.TestX::test_cpu_copy_<device>"


def test_cpu_pass_neuron_fail_and_accelerator_only_tests_are_told_apart() -> None:
    cpu = {
        "m.TestXCPU::test_a_cpu": ("passed", ""),
        "m.TestXCPU::test_b_cpu": ("passed", ""),
        "m.TestXCPU::test_c_cpu": ("passed", ""),
        "m.TestXCPU::test_d_cpu": ("skipped", "needs an accelerator"),
    }
    neuron = {
        "m.TestXPRIVATEUSE1::test_a_neuron": ("passed", ""),
        "m.TestXPRIVATEUSE1::test_b_neuron": ("failed", "AssertionError: wrong"),
        "m.TestXPRIVATEUSE1::test_d_neuron": ("passed", ""),
        "m.TestXPRIVATEUSE1::test_e_neuron": ("passed", ""),
    }
    found = suite.compare(cpu, neuron)
    assert found["cpu_pass_neuron_fail"] == [
        ("m.TestX::test_b_<device>", "failed", "AssertionError: wrong"),
        ("m.TestX::test_c_<device>", "missing", ""),
    ]
    assert [t for t, _, _ in found["neuron_only"]] == ["m.TestX::test_d_<device>", "m.TestX::test_e_<device>"]


def test_a_failure_naming_a_documented_operator_is_listed_with_its_source() -> None:
    table = suite.trainium_ops()
    why = suite.documented("TrainiumStrictError: aten::quantize_per_tensor on the neuron device", table)
    assert why is not None and why.startswith("quantize_per_tensor: N (AWS Neuron docs")
    assert suite.documented("AssertionError: Tensor-likes are not close!", table) is None


def test_0017s_claim_a_neuron_convolution_selects_overrideable_and_an_empty_one_empty(
    neuron_emulator,
) -> None:
    backend = torch._C._ConvBackend

    def selected(batch: int, device: torch.device) -> object:
        x = torch.randn(batch, 4, 6, 6, device=device)
        w = torch.randn(8, 4, 3, 3, device=device)
        return torch._C._select_conv_backend(x, w, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1)

    assert selected(2, neuron_emulator) == backend.Overrideable
    assert selected(0, neuron_emulator) == backend.Empty
    assert selected(2, torch.device("cpu")) not in (backend.Overrideable, backend.Empty)


def test_0019s_claim_a_fully_masked_row_takes_the_fast_path_on_neuron_as_on_the_cpu(neuron_emulator) -> None:
    # nn.TransformerEncoderLayer's fused path (eval, batch_first, no grad) gives NaN for a row whose
    # keys are all masked; the slow path gives a finite row. test_transformerencoderlayer expects NaN
    # only on cpu/cuda: on neuron, which takes the fast path too, 0019 makes it expect NaN as well.
    def masked_row(device: torch.device, fast: bool) -> torch.Tensor:
        torch.manual_seed(0)
        layer = torch.nn.TransformerEncoderLayer(4, 2, 16, 0.0, batch_first=True).to(device)
        layer.train(not fast)
        x = torch.tensor([[[20.0, 30.0, 40.0, 50.0]]], device=device)
        mask = torch.tensor([[True]], device=device)
        with torch.no_grad():
            return layer(x, src_key_padding_mask=mask).cpu()

    for device in (torch.device("cpu"), neuron_emulator):
        assert torch.isnan(masked_row(device, fast=True)).all(), device
        assert not torch.isnan(masked_row(device, fast=False)).any(), device


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("antialias", [False, True])
def test_0020s_claim_uint8_bilinear_and_bicubic_give_the_cpus_result_on_neuron(neuron_emulator, mode, antialias) -> None:
    # test_upsamplingBiMode2d_nonsupported_dtypes expects uint8 bilinear/bicubic to be refused on every
    # device but the CPU; 0020 lets a PrivateUse1 backend refuse them or compute them exactly as the CPU
    # does. The emulator does the latter (TorchNeuron documents nothing of uint8 interpolation).
    torch.manual_seed(0)
    x = torch.randint(0, 256, (1, 3, 32, 32), dtype=torch.uint8)
    expected = torch.nn.functional.interpolate(x, (12, 12), mode=mode, antialias=antialias)
    out = torch.nn.functional.interpolate(x.to(neuron_emulator), (12, 12), mode=mode, antialias=antialias)
    assert out.device.type == neuron_emulator.type and out.dtype == torch.uint8
    assert torch.equal(out.cpu(), expected)


def test_0021s_claims_legacy_types_and_the_deprecated_grad_scaler_on_neuron(neuron_emulator) -> None:
    # test_torch expects the CPU's legacy classes on every device but CUDA; PyTorch looks the storage
    # class up in the PrivateUse1 backend's module (torch.neuron defines none: None), no legacy tensor
    # type matches a neuron tensor, and the deprecated GradScaler the test makes is torch.cpu.amp's.
    import warnings

    t = torch.ones(3, device=neuron_emulator)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # TypedStorage is deprecated
        assert t.storage_type() is None and torch.ones(3).storage_type() is torch.FloatStorage
    scaler = torch.GradScaler(device="neuron", init_scale=6.0)
    scaler.scale(torch.full((1,), 4.0, device=neuron_emulator))
    assert (scaler._scale.device.type, scaler._scale.dtype) == ("neuron", torch.float32)
    assert not isinstance(scaler._scale, torch.FloatTensor)
    with pytest.warns(FutureWarning, match=r"`torch\.cpu\.amp\.GradScaler\(args...\)` is deprecated"):
        torch.cpu.amp.GradScaler(init_scale=2.0)


def test_the_per_op_path_reaches_the_neuron_leg_only_through_the_option() -> None:
    # the shell's ACCEL_* settings are cleared (a run measured "on the Python path" that way had run the
    # compiled one); --hot-path sets it for the neuron leg alone
    shell = {"ACCEL_NEURON_EMULATOR_HOT_PATH": "python", "ACCEL_BACKEND": "cuda", "PATH": "/bin"}
    assert "ACCEL_NEURON_EMULATOR_HOT_PATH" not in suite.leg_environment("neuron", base=shell)
    neuron = suite.leg_environment("neuron", hot_path="python", base=shell)
    assert (neuron["ACCEL_NEURON_EMULATOR_HOT_PATH"], neuron["ACCEL_BACKEND"], neuron["PATH"]) == ("python", "neuron", "/bin")
    cpu = suite.leg_environment("cpu", strict=True, hot_path="python", base=shell)
    assert cpu["ACCEL_BACKEND"] == "cpu" and not any(k.startswith("ACCEL_NEURON") for k in cpu)
    assert suite.leg_environment("neuron", strict=True, base=shell)["ACCEL_NEURON_STRICT"] == "1"


def test_a_class_not_instantiated_per_device_keeps_pytorchs_own_test_names() -> None:
    # TestPoolingNN is a plain TestCase that runs on both legs; "_cpu" ends its own method name
    cpu = {"nn.test_pooling.TestPoolingNN::test_max_unpool2d_nhwc_cpu": ("passed", "")}
    neuron = {"nn.test_pooling.TestPoolingNN::test_max_unpool2d_nhwc_cpu": ("passed", "")}
    assert suite.generic_id("m.TestPoolingNN::test_max_unpool2d_nhwc_cpu", "cpu") == (
        "m.TestPoolingNN::test_max_unpool2d_nhwc_cpu"
    )
    assert suite.compare(cpu, neuron)["cpu_pass_neuron_fail"] == []


def test_the_documented_status_is_the_one_of_the_operator_the_message_is_about() -> None:
    table = suite.trainium_ops()
    message = (
        "NeuronUnsupportedError: aten::_empty_affine_quantized: a quantized tensor (quantize_per_tensor, "
        "quantize_per_channel, empty quantiz"
    )
    why = suite.documented(message, table)
    assert why is not None and why.startswith("_empty_affine_quantized: N (AWS Neuron docs")


def test_a_sparse_refusal_is_listed_as_an_open_emulator_limit_not_as_a_trainium_fact() -> None:
    table = suite.trainium_ops()
    coo = (
        "accel_neuron.emulator.errors.EmulatorError: aten::_embedding_bag_backward: a torch.sparse_coo "
        "tensor on the neuron device is not supported by the neuron emulato"
    )
    dims = (
        "EmulatorError: aten::_sparse_coo_tensor_with_dims_and_tensors: a sparse tensor on the neuron device"
    )
    for message in (coo, dims):
        assert suite.documented(message, table) is None
        assert suite.emulator_limit(message) is not None and suite.emulator_limit(message).startswith(
            "sparse"
        )
    assert suite.emulator_limit("AssertionError: Tensor-likes are not close!") is None


def test_a_nested_tensor_failure_is_listed_as_an_open_emulator_limit() -> None:
    """The emulator's refusal of a strided nested tensor (plugins/neuron/README.md, "Nested tensors"),
    on each per-op path and for ``.to("neuron")``: listed apart, not as a bug."""
    messages = (
        "failed: accel_neuron.emulator.errors.EmulatorError: aten::_nested_tensor_from_mask: a nested tensor "
        "(torch.nested, layout=torch.strided) on the neuron device is not supported by the neuron emulator",
        "failed: EmulatorError: aten::_to_copy: a nested tensor (torch.nested, layout=torch.strided) on the "
        "neuron device is not supported",
    )
    for message in messages:
        limit = suite.emulator_limit(message)
        assert limit is not None and limit.startswith("nested tensors"), message
    assert suite.emulator_limit("RuntimeError: NestedTensorImpl doesn't support strides") is None
    assert suite.emulator_limit("EmulatorError: aten::add: a nested tensor is fine") is None


def test_the_index_copies_list_names_each_file_run_here_with_commit_size_and_hash() -> None:
    copies = tree.read_copies()
    assert {c.path for c in copies} >= {f"test/{f}" for f in suite.DEFAULT_FILES if "optim" not in f} - {
        "test/test_shape_ops.py",
        "test/nn/test_dropout.py",
    }
    assert all(c.chars > 0 for c in copies)
    # one file comes from a fork tracking upstream: the index's pytorch/pytorch version of it does not
    # import with the installed torch; the row names the fork, and no other row leaves pytorch/pytorch
    assert [(c.repo, c.path, c.excerpt) for c in copies if c.repo != "pytorch/pytorch"] == [
        ("amazon-contributing/upstream-to-pytorch", "test/test_torch.py", True)
    ]


def test_a_hand_written_tree_is_checked_against_the_list(tmp_path: Path) -> None:
    body = "import torch\n"
    digest = __import__("hashlib").sha256(body.encode()).hexdigest()
    row = tree.Copy("pytorch/pytorch", "a" * 40, "test/test_x.py", len(body), digest)
    (tmp_path / "test").mkdir()
    assert tree.verify_copies(tmp_path, [row]) == [
        "test/test_x.py: missing (pytorch/pytorch at aaaaaaaaaaaa)"
    ]
    (tmp_path / "test" / "test_x.py").write_text(body)
    assert tree.verify_copies(tmp_path, [row]) == []
    (tmp_path / "test" / "test_x.py").write_text(body + "# edited\n")
    assert "not the listed copy" in tree.verify_copies(tmp_path, [row])[0]


def test_an_excerpt_row_is_read_and_checked_as_the_excerpt(tmp_path: Path) -> None:
    body = "class TestFooDeviceType:\n    pass\n"
    digest = __import__("hashlib").sha256(body.encode()).hexdigest()
    listing = tmp_path / "copies.txt"
    listing.write_text(
        f"# comment\nexcerpt\tpytorch/pytorch\t{'b' * 40}\ttest/test_y.py\t{len(body)}\t{digest}\n"
    )
    (row,) = tree.read_copies(listing)
    assert row.excerpt and row.path == "test/test_y.py"
    (tmp_path / "test").mkdir()
    (tmp_path / "test" / "test_y.py").write_text(body + "# the whole stored file\n")
    assert "not the listed excerpt" in tree.verify_copies(tmp_path, [row])[0]
    listing.write_text(f"snippet\tpytorch/pytorch\t{'b' * 40}\ttest/test_y.py\t{len(body)}\t{digest}\n")
    with pytest.raises(ValueError, match="expected 'copy"):
        tree.read_copies(listing)


STAMPING_TEST = """\
import os, time
from pathlib import Path


def test_stamps():
    start = time.time()
    time.sleep(1.5)
    (Path(os.environ["STAMPS"]) / os.environ["PYTORCH_TESTING_DEVICE_ONLY_FOR"]).write_text(f"{start} {time.time()}")
"""


@pytest.mark.slow
@pytest.mark.parametrize("concurrent", [False, True])
def test_concurrent_legs_run_at_the_same_time_and_one_after_the_other_otherwise(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, concurrent: bool
) -> None:
    (tmp_path / "test").mkdir()
    (tmp_path / "test" / "test_stamp.py").write_text(STAMPING_TEST)
    stamps = tmp_path / "stamps"
    stamps.mkdir()
    monkeypatch.setenv("STAMPS", str(stamps))
    work = tmp_path / ".accel-torch"
    work.mkdir()
    got = suite.run_legs(tmp_path, work, "test_stamp.py", [], [], timeout=300, concurrent=concurrent)
    for device in suite.DEVICES:  # each leg ran the test and it passed
        assert [outcome for outcome, _ in got[device][0].values()] == ["passed"], got[device]
    (c0, c1), (n0, n1) = ((float(x) for x in (stamps / k).read_text().split()) for k in ("cpu", "privateuse1"))
    overlap = min(c1, n1) - max(c0, n0)
    assert (overlap > 0) is concurrent, (c0, c1, n0, n1)
