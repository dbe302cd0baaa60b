"""The loss curves of a parity check, one line per backend, as a PNG (matplotlib, the ``plot`` extra)."""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path

from ..errors import AccelError
from ..safe_io import atomic_write
from .runs import BackendRun

__all__ = ["PlotUnavailableError", "plot_runs"]


class PlotUnavailableError(AccelError):
    """matplotlib is not installed."""


def plot_runs(runs: Sequence[BackendRun], path: Path, metric: str = "loss") -> Path:
    """Draw ``metric`` per step for each run, and its absolute difference to the first run; save to ``path``."""
    try:
        import matplotlib
    except ImportError:
        raise PlotUnavailableError(
            "the parity plot needs matplotlib, which is not installed: pip install 'accel-abstraction[plot]' "
            "(or pass --no-plot)"
        ) from None
    matplotlib.use("Agg", force=True)  # files only; never a window
    import matplotlib.pyplot as plt

    usable = [run for run in runs if run.ok and run.series(metric)]
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 6.5), sharex=True, height_ratios=[3, 2])
    try:
        styles = ["-", "--", ":", "-."]
        for i, run in enumerate(usable):
            series = run.series(metric)
            steps = sorted(series)
            top.plot(
                steps, [series[s] for s in steps], styles[i % len(styles)], label=run.label, linewidth=1.4
            )
        top.set_ylabel(metric)
        top.set_title(f"{metric} per step, by backend")
        top.grid(alpha=0.3)
        if usable:
            top.legend()
        if usable:
            ref = usable[0].series(metric)
            for i, run in enumerate(usable[1:], start=1):
                series = run.series(metric)
                steps = sorted(set(ref) & set(series))
                diffs = [abs(series[s] - ref[s]) for s in steps]
                bottom.plot(steps, diffs, styles[i % len(styles)], label=f"{run.label} vs {usable[0].label}")
            if any(line.get_ydata().any() for line in bottom.get_lines()):  # type: ignore[union-attr]
                bottom.set_yscale("symlog", linthresh=1e-8)
            elif len(usable) > 1:
                bottom.text(
                    0.5, 0.75, "bitwise identical at every step", transform=bottom.transAxes, ha="center"
                )
            if len(usable) > 1:
                bottom.legend()
        bottom.set_ylabel(f"|{metric} - reference|")
        bottom.set_xlabel("step")
        bottom.grid(alpha=0.3)
        fig.tight_layout()
        path.parent.mkdir(parents=True, exist_ok=True)
        image = io.BytesIO()
        fig.savefig(image, dpi=110, format="png")
        atomic_write(path, image.getvalue())  # a killed or out-of-space run keeps the previous PNG
    finally:
        plt.close(fig)
    return path
