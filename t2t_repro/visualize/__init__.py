"""Pictures of a trained run: attention heat maps (the paper's Figures 3-5) and training curves.

    maps = attention_maps.compute_attention_maps(model, vocabulary, "The cat sat on the mat.", settings)
    paths = attention_maps.render_attention_maps(maps, out_dir)
    paths = curves.plot_curves(output_dir, out_dir)

Figures are drawn with matplotlib's Agg backend (no display needed) and written as PNG files atomically.
"""

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from t2t_repro import safe_write


def new_figure(width, height):
    """A matplotlib Figure on an Agg canvas, outside pyplot's global state (nothing to close, nothing leaks)."""
    figure = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(figure)
    return figure


def save_figure(figure, path, dpi=100):
    """Writes `figure` as a PNG at `path` through a temporary file and a rename; returns `path`."""
    with safe_write.replacing(path) as temporary:
        figure.savefig(temporary, format="png", dpi=dpi)
    return path
