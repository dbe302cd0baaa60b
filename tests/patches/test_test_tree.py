"""Patches to PyTorch's own test files: their kind in the series, and applying them to a test tree."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from accel_abstraction.patching.errors import PatchError
from accel_abstraction.patching.series import load_series
from accel_abstraction.patching.test_tree import apply_to_tree

STOCK = textwrap.dedent(
    """\
    class TestConvolutionNNDeviceType(NNTestCase):
        def test_conv_backend(self, device, backend_expected):
            inputs = []

            # Ensure correct backend is selected.
            backend_actual = torch._C._select_conv_backend(*inputs)
            self.assertEqual(backend_actual, backend_expected)

            # Ensure backward call succeeds.
            convolution = torch.ops.aten.convolution
    """
)


#: The lines of test/test_nn.py that 0019 changes (TestNNDeviceType.test_transformerencoderlayer).
STOCK_NN = """\
class TestNNDeviceType(NNTestCase):
    def test_transformerencoderlayer(self, device, dtype):
        def _test(batch_first, training, atol, rtol):
            mask = torch.tensor([[1]], device=device) == 1
            result = model(encoder_input, src_key_padding_mask=mask)
            fast_path_device = result.is_cuda or result.is_cpu
            result = result.cpu().detach().numpy()
            # Non Fast Paths
            if training or not batch_first or TEST_WITH_CROSSREF or not fast_path_device:
"""
#: The lines of test/test_torch.py that 0021 changes (three tests of TestTorchDeviceType).
STOCK_TORCH = """\
class TestTorchDeviceType(TestCase):
    def test_tensor_storage_type(self, device, dtype):
        a = make_tensor((10,), dtype=dtype, device=device, low=-9, high=9)

        module = torch.cuda if (torch.device(device).type == 'cuda') else torch
        expected_storage_type = getattr(module, torch.storage._dtype_to_storage_type_map()[dtype])

        self.assertEqual(a.storage_type(), expected_storage_type)

    def test_grad_scaling_state_dict(self, device):
            if lazy_init_scale:
                # Dummy scale() call to ensure the scale tensor is lazily initialized.
                s1.scale(torch.full((1,), 4.0, dtype=torch.float32, device=device))
                if "cuda" == device.type:
                    self.assertTrue(isinstance(s1._scale, torch.cuda.FloatTensor))
                else:
                    self.assertTrue(isinstance(s1._scale, torch.FloatTensor))

            s1.load_state_dict(s0.state_dict())

    @onlyNativeDeviceTypes
    def test_grad_scaler_deprecated_warning(self, device):
        device = torch.device(device)
        GradScaler = torch.cuda.amp.GradScaler if "cuda" == device.type else torch.cpu.amp.GradScaler

        with self.assertWarnsRegex(
            FutureWarning,
            rf"`torch.{device.type}.amp.GradScaler\\(args...\\)` is deprecated.",
        ):
            _ = GradScaler(init_scale=2.0)

"""
#: The lines of test/test_nn.py that 0020 changes (test_upsamplingBiMode2d_nonsupported_dtypes), after
#: STOCK_NN's in the same class: a tree holds both, and a patch whose lines are missing is refused.
STOCK_NN_UINT8 = """\
    def test_upsamplingBiMode2d_nonsupported_dtypes(self, device, antialias, num_channels, mode, dtype):
        x = torch.ones(1, num_channels, 32, 32, dtype=dtype, device=device)
        elif mode in ("bilinear", "bicubic"):
            if dtype in floating_types() or (device == "cpu" and dtype == torch.uint8):
                should_raise_runtime_error = False

        if should_raise_runtime_error:
            with self.assertRaisesRegex(RuntimeError, "not implemented for"):
                F.interpolate(x, (12, 12), mode=mode, antialias=antialias)
        else:
            _ = F.interpolate(x, (12, 12), mode=mode, antialias=antialias)
"""
CONV, NN, TORCH = "test/nn/test_convolution.py", "test/test_nn.py", "test/test_torch.py"


@pytest.fixture
def series():
    return load_series("2.13.0")


def _tree(tmp_path: Path, text: str = STOCK) -> Path:
    path = tmp_path / "pytorch" / "test" / "nn" / "test_convolution.py"
    path.parent.mkdir(parents=True)
    path.write_text("# a stand-in with the lines the patch changes\n" + text)
    return tmp_path / "pytorch"


def test_patches_to_test_files_are_their_own_kind(series) -> None:
    kinds = {p.name[:4]: p.kind for p in series.all_patches}
    assert kinds["0017"] == "tests" and kinds["0016"] == "wheel"
    assert [p.name[:4] for p in series.test_patches] == ["0017", "0019", "0020", "0021"]
    assert "test/nn/test_convolution.py" not in series.files  # never overlaid onto torch
    assert "test/test_nn.py" not in series.files
    assert "test/test_torch.py" not in series.files


def test_applying_to_a_tree_changes_the_expectation_once(series, tmp_path: Path) -> None:
    tree = _tree(tmp_path)
    [result, *others] = apply_to_tree(series, tree, [CONV])
    assert (result.patch[:4], result.state) == ("0017", "applied")
    assert [(r.patch[:4], r.state) for r in others] == [("0019", "not needed"), ("0020", "not needed"), ("0021", "not needed")]
    text = (tree / "test/nn/test_convolution.py").read_text()
    assert "backend_expected = torch._C._ConvBackend.Overrideable" in text
    assert (
        text.index("_select_conv_backend(*inputs)") < text.index("Overrideable") < text.index("assertEqual")
    )
    [again, *_] = apply_to_tree(series, tree, [CONV])
    assert again.state == "was applied"
    assert (tree / "test/nn/test_convolution.py").read_text() == text


def test_a_tree_of_another_release_is_refused_naming_the_patch(series, tmp_path: Path) -> None:
    tree = _tree(
        tmp_path, STOCK.replace("backend_actual, backend_expected", "backend_expected, backend_actual")
    )
    before = (tree / "test/nn/test_convolution.py").read_text()
    with pytest.raises(PatchError, match=r"0017-.*hunk 1 .* does not apply to test/nn/test_convolution.py"):
        apply_to_tree(series, tree, [CONV])
    assert (tree / "test/nn/test_convolution.py").read_text() == before


def test_a_tree_without_the_file_says_how_to_build_one(series, tmp_path: Path) -> None:
    (tmp_path / "empty" / "test").mkdir(parents=True)
    with pytest.raises(PatchError, match=r"test/nn/test_convolution.py is not in the test tree .*docs/ci.md"):
        apply_to_tree(series, tmp_path / "empty")


def test_only_the_patches_of_the_files_asked_for_are_applied(series, tmp_path: Path) -> None:
    (tmp_path / "partial" / "test" / "nn").mkdir(parents=True)
    results = apply_to_tree(series, tmp_path / "partial", ["test/nn/test_dropout.py"])
    assert [(r.patch[:4], r.state) for r in results] == [
        ("0017", "not needed"),
        ("0019", "not needed"),
        ("0020", "not needed"),
        ("0021", "not needed"),
    ]


RELEASES = ["2.13.0", "2.14.1", "2.15.0"]


@pytest.mark.parametrize("release", RELEASES)
def test_every_release_series_carries_the_test_expectation_patches(release: str) -> None:
    kinds = {p.name[:4]: p.kind for p in load_series(release).all_patches}
    assert [kinds.get(n) for n in ("0016", "0017", "0019", "0020", "0021")] == ["wheel"] + ["tests"] * 4


@pytest.mark.parametrize("release", RELEASES[1:])
def test_a_carried_test_file_patch_is_2_13_0s_change(release: str) -> None:
    """0017 and 0019-0021 are carried unchanged (their series files say from which copies they were checked):
    the same hunks as in the 2.13.0 series, only the subject's patch count may differ."""
    ours = {p.name: p for p in load_series(release).test_patches}
    first = {p.name: p for p in load_series("2.13.0").test_patches}
    assert sorted(ours) == sorted(first)
    for name, patch in ours.items():
        assert _diff_of(patch.path) == _diff_of(first[name].path), name


@pytest.mark.parametrize("release", RELEASES)
def test_the_test_file_patches_apply_to_a_tree_for_every_release(release: str, tmp_path: Path) -> None:
    tree = _stand_in_tree(tmp_path, NN, STOCK_NN + STOCK_NN_UINT8)
    (tree / TORCH).write_text(STOCK_TORCH)
    results = apply_to_tree(load_series(release), tree, [NN, TORCH])
    assert [(r.patch[:4], r.state) for r in results] == [
        ("0017", "not needed"), ("0019", "applied"), ("0020", "applied"), ("0021", "applied"),
    ]  # fmt: skip
    assert "result.device.type == torch._C._get_privateuse1_backend_name()" in (tree / NN).read_text()
    assert "privateuse1 and mode in" in (tree / NN).read_text()
    assert "getattr(module, torch.storage._dtype_to_storage_type_map()[dtype], None)" in (tree / TORCH).read_text()


@pytest.mark.parametrize("release", RELEASES[1:])
def test_a_patch_a_newer_series_leaves_out_is_named_with_its_reason(release: str) -> None:
    """Every 2.13.0 patch a newer series does not carry is named in that series file, with why
    (0007 fixed upstream, 0018 not needed there), so a missing patch is a decision, not a slip."""
    carried = {p.name[:4] for p in load_series(release).all_patches}
    comments = " ".join(  # the series file's comment lines, as one text
        line.lstrip("#").strip()
        for line in (load_series(release).directory / "series").read_text().splitlines()
    )
    for patch in load_series("2.13.0").all_patches:
        number = patch.name[:4]
        if number not in carried:
            assert f"{number} (" in comments, (release, number)
            assert "is not carried" in comments.split(f"{number} (", 1)[1][:300], (release, number)


def _diff_of(path: Path) -> str:
    text = path.read_text()
    return text[text.index("\ndiff --git ") :]


def _stand_in_tree(tmp_path: Path, file: str, text: str) -> Path:
    """A test tree holding only `file`, written as `text` (the lines a patch changes)."""
    path = tmp_path / "pytorch" / file
    path.parent.mkdir(parents=True)
    path.write_text(text)
    return tmp_path / "pytorch"


def _states(series, tree: Path, file: str) -> list[tuple[str, str]]:
    return [(r.patch[:4], r.state) for r in apply_to_tree(series, tree, [file])]


def test_0019_counts_the_privateuse1_backend_as_a_fast_path_device_once(series, tmp_path: Path) -> None:
    tree = _stand_in_tree(tmp_path, NN, STOCK_NN + STOCK_NN_UINT8)
    path = tree / NN
    assert _states(series, tree, NN) == [("0017", "not needed"), ("0019", "applied"), ("0020", "applied"), ("0021", "not needed")]
    text = path.read_text()
    assert (
        "fast_path_device = fast_path_device or result.device.type == torch._C._get_privateuse1_backend_name()"
        in text
    )
    assert (
        text.index("result.is_cuda or result.is_cpu")
        < text.index("privateuse1")
        < text.index("Non Fast Paths")
    )
    assert [state for _, state in _states(series, tree, NN)] == ["not needed", "was applied", "was applied", "not needed"]
    assert path.read_text() == text


def test_0020_lets_a_privateuse1_backend_refuse_uint8_or_match_the_cpu_and_judges_others_as_before(
    series, tmp_path: Path
) -> None:
    tree = _stand_in_tree(tmp_path, NN, STOCK_NN + STOCK_NN_UINT8)
    path = tree / NN
    assert _states(series, tree, NN)[2] == ("0020", "applied")
    text = path.read_text()
    branch = 'if privateuse1 and mode in ("bilinear", "bicubic") and dtype == torch.uint8:'
    assert branch in text and "self.assertEqual(out.cpu(), expected, atol=0, rtol=0)" in text
    # every other device, mode and dtype keeps its expectation: the old test is the elif/else after it
    assert text.index(branch) < text.index("elif should_raise_runtime_error:") < text.index("assertRaisesRegex")
    assert [state for _, state in _states(series, tree, NN)] == ["not needed", "was applied", "was applied", "not needed"]
    assert path.read_text() == text


def test_0021_expects_what_pytorch_gives_on_the_privateuse1_backend_once(series, tmp_path: Path) -> None:
    tree = _stand_in_tree(tmp_path, TORCH, STOCK_TORCH)
    path = tree / TORCH
    assert _states(series, tree, TORCH) == [
        ("0017", "not needed"),
        ("0019", "not needed"),
        ("0020", "not needed"),
        ("0021", "applied"),
    ]
    text = path.read_text()
    backend = "torch._C._get_privateuse1_backend_name()"
    # each change sits in its own test, after the line it qualifies and before the assertion
    storage = text.index("def test_tensor_storage_type")
    assert (
        storage < text.index(f"if torch.device(device).type == {backend}:") < text.index("a.storage_type()")
    )
    assert "getattr(module, torch.storage._dtype_to_storage_type_map()[dtype], None)" in text
    state = text.index("def test_grad_scaling_state_dict")
    assert (
        state
        < text.index(f"elif device.type == {backend}:")
        < text.index("isinstance(s1._scale, torch.FloatTensor)")
    )
    warning = text.index("def test_grad_scaler_deprecated_warning")
    assert warning < text.index('amp_module = "cuda" if "cuda" == device.type else "cpu"')
    assert 'rf"`torch.{amp_module}.amp.GradScaler' in text and "torch.{device.type}.amp" not in text
    assert [state for _, state in _states(series, tree, TORCH)] == ["not needed", "not needed", "not needed", "was applied"]
    assert path.read_text() == text
