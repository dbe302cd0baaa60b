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
CONV, NN = "test/nn/test_convolution.py", "test/test_nn.py"


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
    assert [p.name[:4] for p in series.test_patches] == ["0017", "0019"]
    assert "test/nn/test_convolution.py" not in series.files  # never overlaid onto torch
    assert "test/test_nn.py" not in series.files


def test_applying_to_a_tree_changes_the_expectation_once(series, tmp_path: Path) -> None:
    tree = _tree(tmp_path)
    [result, other] = apply_to_tree(series, tree, [CONV])
    assert (result.patch[:4], result.state) == ("0017", "applied")
    assert (other.patch[:4], other.state) == ("0019", "not needed")
    text = (tree / "test/nn/test_convolution.py").read_text()
    assert "backend_expected = torch._C._ConvBackend.Overrideable" in text
    assert (
        text.index("_select_conv_backend(*inputs)") < text.index("Overrideable") < text.index("assertEqual")
    )
    [again, _] = apply_to_tree(series, tree, [CONV])
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
    assert [(r.patch[:4], r.state) for r in results] == [("0017", "not needed"), ("0019", "not needed")]


RELEASES = ["2.13.0", "2.14.1", "2.15.0"]


@pytest.mark.parametrize("release", RELEASES)
def test_every_release_series_carries_the_test_expectation_patches(release: str) -> None:
    kinds = {p.name[:4]: p.kind for p in load_series(release).all_patches}
    assert (kinds.get("0016"), kinds.get("0017"), kinds.get("0019")) == ("wheel", "tests", "tests")


@pytest.mark.parametrize("release", RELEASES[1:])
def test_a_carried_test_file_patch_is_2_13_0s_change(release: str) -> None:
    """0017 and 0019 are carried unchanged (their series files say from which copies they were checked):
    the same hunks as in the 2.13.0 series, only the subject's patch count may differ."""
    ours = {p.name: p for p in load_series(release).test_patches}
    first = {p.name: p for p in load_series("2.13.0").test_patches}
    assert sorted(ours) == sorted(first)
    for name, patch in ours.items():
        assert _diff_of(patch.path) == _diff_of(first[name].path), name


@pytest.mark.parametrize("release", RELEASES)
def test_0019_applies_to_a_tree_for_every_release(release: str, tmp_path: Path) -> None:
    path = tmp_path / "pytorch" / NN
    path.parent.mkdir(parents=True)
    path.write_text(STOCK_NN)
    results = apply_to_tree(load_series(release), tmp_path / "pytorch", [NN])
    assert [(r.patch[:4], r.state) for r in results] == [("0017", "not needed"), ("0019", "applied")]
    assert "result.device.type == torch._C._get_privateuse1_backend_name()" in path.read_text()


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


def test_0019_counts_the_privateuse1_backend_as_a_fast_path_device_once(series, tmp_path: Path) -> None:
    path = tmp_path / "pytorch" / NN
    path.parent.mkdir(parents=True)
    path.write_text(STOCK_NN)
    tree = tmp_path / "pytorch"
    results = apply_to_tree(series, tree, [NN])
    assert [(r.patch[:4], r.state) for r in results] == [("0017", "not needed"), ("0019", "applied")]
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
    assert [r.state for r in apply_to_tree(series, tree, [NN])] == ["not needed", "was applied"]
    assert path.read_text() == text
