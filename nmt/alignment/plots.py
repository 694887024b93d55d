"""Attention heatmaps (matplotlib), for TensorBoard and `nmt translate --plot`."""

from __future__ import annotations

import io

import numpy as np


def _decode(values) -> list[str]:
    return [v.decode("utf-8") if isinstance(v, bytes) else str(v) for v in values]


def attention_figure(weights: np.ndarray, source_tokens, target_tokens, title: str = ""):
    """A matplotlib Figure: rows = target tokens, columns = source tokens."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    rows, cols = len(target_tokens), len(source_tokens)
    fig, ax = plt.subplots(figsize=(1.0 + 0.45 * cols, 1.0 + 0.4 * rows), dpi=100)
    ax.imshow(weights[:rows, :cols], cmap="viridis", vmin=0.0, vmax=1.0, aspect="auto")
    ax.set_xticks(range(cols), source_tokens, rotation=60, ha="right")
    ax.set_yticks(range(rows), target_tokens)
    ax.set_xlabel("source")
    ax.set_ylabel("target")
    if title:
        ax.set_title(title, fontsize=9)
    fig.tight_layout()
    return fig


def attention_figure_png(outputs: dict, index: int = 0) -> bytes:
    """PNG bytes of the heatmap of sentence `index` of a translate output dict."""
    from matplotlib import pyplot as plt

    source = [t for t in _decode(outputs["source_tokens"].numpy()[index]) if t]
    target = [t for t in _decode(outputs["target_tokens"].numpy()[index]) if t]
    title = _decode([outputs["translations"].numpy()[index]])[0]
    fig = attention_figure(outputs["alignments"].numpy()[index], source, target, title)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    plt.close(fig)
    return buffer.getvalue()


def save_attention_plot(translation, path: str) -> None:
    """Writes the heatmap of an `nmt.types.Translation` to `path` (PNG)."""
    from matplotlib import pyplot as plt

    fig = attention_figure(translation.alignment, list(translation.source_tokens),
                           list(translation.target_tokens), translation.text)
    fig.savefig(path)
    plt.close(fig)
