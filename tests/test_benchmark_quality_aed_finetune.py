"""benchmarks/quality_aed_finetune.py, quality_aed_step0.py and quality_aed_interpolation.py: the scores of a
prediction manifest (PER and F1 over the references with marks only), their rendered tables, and bad arguments."""

import json

import pytest
from benchmark_loader import load_benchmark

from nemo_pc.parts.manifest import write_manifest


def _predictions(path):
    rows = [
        {"text": "Hello, world.", "text_normalized": "hello world", "has_marks": True},
        {"text": "ten of clubs", "text_normalized": "ten of clubs", "has_marks": False},
    ]
    rows[0] |= {"pred_text": "Hello world.", "pred_text_normalized": "hello world"}
    rows[1] |= {"pred_text": "Ten of clubs.", "pred_text_normalized": "ten of cubs"}
    return write_manifest(path, rows)


def test_per_and_f1_come_from_the_marked_references_only(tmp_path):
    bench = load_benchmark("quality_aed_finetune")
    scores = bench.score_manifest(_predictions(tmp_path / "p.json"))
    assert scores["utterances"] == 2 and scores["marked"] == 1
    assert scores["n_wer"] == pytest.approx(1 / 5)  # "cubs" for "clubs"
    assert scores["per"] == pytest.approx(0.5)  # the comma missed, the period kept: the unmarked clip's "." unseen
    assert scores["f1"] == pytest.approx(2 / 3)


def test_the_three_tables_render_from_their_results(tmp_path):
    render = load_benchmark("render_results")
    step0 = {
        "rows": [
            {
                "set": "real_dev",
                "system": "whisper_tiny_en",
                "normalized": {"wer": 0.1, "errors": 1, "words": 10},
                "seconds": 3,
            },
            {
                "set": "real_dev",
                "system": "aed zero-shot, unpadded+limits",
                "normalized": {"wer": 0.2, "errors": 2, "words": 10},
                "punctuated_output": {"wer": 0.15, "errors": 1, "words": 10},
                "ratio_to_whisper": 2.0,
                "seconds": 4.2,
            },
        ]
    }
    finetune = {
        "rows": [
            {
                "system": "full",
                "split": "real_test",
                "utterances": 3,
                "n_wer": 0.25,
                "wer": 0.3,
                "train_minutes": 17.5,
            },
            {
                "system": "whisper_tiny_en",
                "split": "test",
                "utterances": 3,
                "n_wer": 0.5,
                "wer": 0.5,
                "per": 0.7,
                "f1": 0.3,
                "marked": 3,
                "train_minutes": 0.0,
            },
        ]
    }
    interpolation = {
        "chosen": 0.5,
        "rows": [
            {"weight": 0.5, "set": "dev", "utterances": 4, "normalized": {"wer": 0.2}, "punctuated": {"wer": 0.3}}
        ],
    }
    for name, payload in (("step0", step0), ("finetune", finetune), ("interpolation", interpolation)):
        (tmp_path / f"{name}.json").write_text(json.dumps(payload))
    text = render.render_aed_step0(tmp_path / "step0.json")
    assert "| real_dev | `aed zero-shot, unpadded+limits` | 20.0% | 2 / 10 | 15.0% | 2.00x | 4 |" in text
    text = render.render_aed_finetune(tmp_path / "finetune.json")
    assert "| `full` | real_test | 3 | 25.0% | 30.0% | - | - | 0 | 17.5 |" in text
    assert "| `whisper_tiny_en` | test | 3 | 50.0% | 50.0% | 70.0% | 30.0% | 3 | 0.0 |" in text
    text = render.render_aed_interpolation(tmp_path / "interpolation.json")
    assert "| 0.50 | dev | 4 | 20.0% | 30.0% |" in text and "Chosen weight: 0.50." in text


def _row(system, split, n_wer, per=None, f1=None, minutes=None):
    return {
        "system": system,
        "split": split,
        "utterances": 4,
        "n_wer": n_wer,
        "wer": n_wer,
        "per": per,
        "f1": f1,
        "train_minutes": minutes,
    }


def test_the_recipes_table_pivots_the_splits_and_decides_the_targets(tmp_path):
    render = load_benchmark("render_results")
    rows = [
        _row("whisper_tiny_en", "test", 0.5, 0.7, 0.3, 0.0),
        _row("whisper_tiny_en", "real_test", 0.2, minutes=0.0),
        _row("keeps", "test", 0.2, 0.3904, 0.72, 17.0),  # PER 39.0% once rounded: met
        _row("keeps", "real_dev", 0.5, minutes=17.0),
        _row("keeps", "real_test", 0.25, minutes=17.0),  # 1.25x
        _row("forgets", "test", 0.2, 0.38, 0.72, 17.0),
        _row("forgets", "real_test", 0.3, minutes=17.0),  # 1.50x
        _row("blurs", "test", 0.2, 0.45, 0.65),
        _row("blurs", "real_test", 0.22),
        _row("neither", "test", 0.3, 0.45, 0.65),
        _row("neither", "real_test", 0.4),
    ]
    (tmp_path / "recipes.json").write_text(json.dumps({"rows": rows}))
    text = render.render_aed_recipes(tmp_path / "recipes.json")
    assert "| `keeps` | 20.0% | 39.0% | 72.0% | 50.0% | 25.0% | 1.25x | 25.0% | 17.0 | both |" in text
    assert "| `forgets` | 20.0% | 38.0% | 72.0% | - | 30.0% | 1.50x | 30.0% | 17.0 | synthetic |" in text
    assert "| `blurs` | 20.0% | 45.0% | 65.0% | - | 22.0% | 1.10x | 22.0% | - | real |" in text
    assert "| `neither` | 30.0% | 45.0% | 65.0% | - | 40.0% | 2.00x | 40.0% | - | neither |" in text
    assert "| `whisper_tiny_en` | 50.0% | 70.0% | 30.0% | - | 20.0% | 1.00x | 20.0% | - | - |" in text
    assert "real_test N-WER <= 1.25x Whisper tiny.en's" in text


def test_an_interpolation_of_some_modules_says_which(tmp_path):
    render = load_benchmark("render_results")
    report = {"chosen": 0.75, "modules": ["encoder"], "rows": []}
    (tmp_path / "sweep.json").write_text(json.dumps(report))
    text = render.render_aed_interpolation(tmp_path / "sweep.json")
    assert "Chosen weight: 0.75 (only `encoder` moves; the rest stays fine-tuned)." in text


@pytest.mark.parametrize(
    ("script", "argv", "message"),
    [
        ("quality_aed_finetune", ["--demo-dir", "{tmp}", "--real-dir", "{tmp}"], "no such manifest"),
        ("quality_aed_finetune", ["--demo-dir", "{tmp}", "--real-dir", "{tmp}", "--model", "x"], "NAME=VALUE"),
        ("quality_aed_step0", ["--manifest", "dev={tmp}/missing.json"], "no such file"),
        ("quality_aed_interpolation", ["--model", "{tmp}/m.nemo", "--dev", "d={tmp}/d.json"], "no such file"),
    ],
)
def test_bad_arguments_exit_2_with_the_reason(tmp_path, capsys, script, argv, message):
    bench = load_benchmark(script)
    with pytest.raises(SystemExit) as exit_info:
        bench.main([part.format(tmp=tmp_path) for part in argv])
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err
