"""REPORT.md's learning curves: the real dev WER beside the synthetic dev WER of each model, and stats written before
the models validated on real_dev rendered as they were."""

import json

from nemo_pc.pipelines.demo.curves_report import curve_table, plot_curves
from nemo_pc.pipelines.demo.report import write_report

OLD = [{"step": 100, "val_wer": 0.9}, {"step": 200, "val_wer": 0.5}]
BOTH = [
    {
        "step": 10,
        "val_wer": 0.6,
        "val_wer_normalized": 0.4,
        "real_dev_val_wer": 0.9,
        "real_dev_val_wer_normalized": 0.8,
    },
    {
        "step": 20,
        "val_wer": 0.5,
        "val_wer_normalized": 0.3,
        "real_dev_val_wer": 0.85,
        "real_dev_val_wer_normalized": 0.7,
    },
]


def _stats(tmp_path, **curves):
    (tmp_path / "models").mkdir(exist_ok=True)
    for name, curve in curves.items():
        stats = {"steps": 200, "seconds": 1.0, "parameters": 1, "curve": curve}
        (tmp_path / "models" / f"{name}.json").write_text(json.dumps(stats))
    tagger = {"steps": 200, "seconds": 1.0, "parameters": 1}  # no curve: no row
    (tmp_path / "models" / "tagger.json").write_text(json.dumps(tagger))


def test_stats_without_real_dev_keys_render_as_before(tmp_path):
    _stats(tmp_path, base=OLD)
    assert plot_curves(tmp_path).stat().st_size > 1000
    assert curve_table(tmp_path) == [
        "| model | step | wer (dev) |",
        "|---|---:|---:|",
        "| `base` | 100 | 90.0 |",
        "| `base` | 200 | 50.0 |",
    ]


def test_the_real_dev_wer_gets_a_column_beside_the_dev_wer(tmp_path):
    _stats(tmp_path, base=OLD, rnnt_conditioned=BOTH)
    lines = curve_table(tmp_path)
    assert lines[0] == (
        "| model | step | wer_normalized (dev) | wer_normalized (real_dev) | wer (dev) | wer (real_dev) |"
    )
    assert "| `base` | 200 | - | - | 50.0 | - |" in lines
    assert "| `rnnt_conditioned` | 20 | 30.0 | 70.0 | 50.0 | 85.0 |" in lines
    assert len(lines) == 2 + 4


def test_the_plot_draws_real_dev_dashed_in_the_model_s_colour(tmp_path, monkeypatch):
    import matplotlib.axes

    drawn = []
    original = matplotlib.axes.Axes.plot

    def plot(self, *args, **kwargs):
        drawn.append((kwargs["label"], kwargs["color"], kwargs["linestyle"], list(args[1])))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(matplotlib.axes.Axes, "plot", plot)
    _stats(tmp_path, base=OLD, rnnt_conditioned=BOTH)
    assert plot_curves(tmp_path).is_file()
    assert drawn == [
        ("base (wer, dev)", "C0", "-", [90.0, 50.0]),
        ("rnnt_conditioned (wer_normalized, dev)", "C1", "-", [40.0, 30.0]),
        ("rnnt_conditioned (wer_normalized, real_dev)", "C1", "--", [80.0, 70.0]),
    ]


def test_the_report_s_curve_section_names_both_sets(tmp_path):
    _stats(tmp_path, rnnt_conditioned=BOTH)
    (tmp_path / "config.json").write_text(json.dumps({"hours": 0.1, "sources": ["kjv"], "seed": 0}))
    report = {
        "num_utterances": 2,
        "empty_share": 0.0,
        "normalized_output": {"wer": 0.25},
        "metrics": {"wer": 0.3, "per": 0.4},
        "support": {"wer": 4, "per": 2},
    }
    runs = [{"finished": "now", "seconds": {"corpus": 1.0}}]
    text = write_report(tmp_path, {"rnnt_conditioned": report}, runs, "rnnt_conditioned").read_text()
    section = text[text.index("## Learning curves") : text.index("## Models")]
    assert "![learning curves](curves.png)" in section and "on `real_dev` (real recordings" in section
    assert "| `rnnt_conditioned` | 10 | 40.0 | 80.0 | 60.0 | 90.0 |" in section
    # the targets keep reading the synthetic dev WER
    assert "| `rnnt_conditioned` | 25.00 (misses by 5.0) | <= 20 | 30.00 | +5.0 |" in text
