"""benchmarks/quality_decoder_ctc.py: the recipe's overrides build the head on the AED, and the table renders a row
per results file."""

import json

from benchmark_loader import load_benchmark


def test_the_overrides_compose_a_decoder_ctc_head_on_the_aed_recipe(tmp_path):
    from types import SimpleNamespace

    from omegaconf import OmegaConf

    from nemo_pc.parts.configs import compose_config

    bench = load_benchmark("quality_decoder_ctc")
    aed = SimpleNamespace(
        cfg=OmegaConf.create({"aux_ctc": {"tokenizer": {"dir": "tok"}}, "train_ds": {"max_duration": 8.0}})
    )
    overrides = bench.recipe_overrides(aed, tmp_path, tmp_path / "train.json", 16, 4, 1)
    cfg = compose_config("aed", overrides).model
    assert cfg.decoder_ctc.stack == 4 and cfg.decoder_ctc.vocab_from_train
    assert cfg.train_ds.batch_size == 16 and cfg.train_ds.max_duration == 8.0
    assert cfg.train_ds.manifest_filepath == str(tmp_path / "train.json")
    assert cfg.validation_ds.manifest_filepath is None and cfg.aux_ctc.tokenizer.dir == "tok"
    assert cfg.optim_param_groups.decoder_ctc_decoder.lr == 1e-4 and cfg.optim.lr == 1e-3


def test_the_rendered_table_has_a_row_per_results_file(tmp_path):
    render = load_benchmark("render_results")

    def results(steps: int, extra: list, n_wer: float, overrides: list) -> dict:
        return {
            "settings": {
                "overrides": overrides,
                "steps": steps,
                "batch_size": 16,
                "stack": 4,
                "pieces": 5312,
                "trainable_parameters": 29_624_522,
                "extra_train": extra,
            },
            "utterances": {"train": 2610},
            "train_minutes": 24.31,
            "transcribe_minutes": {"test": 0.52, "real_test": 0.05},
            "scores": {
                "test": {"n_wer": n_wer, "per": 0.49, "punct_f1": 0.516},
                "real_test": {"wer": 0.534, "ci95": [0.466, 0.597]},
            },
        }

    paths = [tmp_path / "a.json", tmp_path / "b.json"]
    paths[0].write_text(json.dumps(results(1000, [], 0.474, ["decoder_ctc=conditioned"])))
    paths[1].write_text(
        json.dumps(results(2000, ["/x/more_hours/extra_train.json:1"], 0.336, ["model.decoder_ctc.inter_block=3"]))
    )
    text = render.render_decoder_ctc(*paths)
    assert "(4 frames a query)" in text
    row = "| none | 2610 | a pass of its own | 1000 | 16 | 5312 | 29.6 M | 24.3 | 0.52 | 47.4% | 49.0% | 51.6% |"
    assert row in text
    assert "| extra_train x1 | 2610 | block 3, one pass | 2000 | 16 |" in text and "| 33.6% |" in text
    assert "more training lines" not in render.render_decoder_ctc(paths[0])  # no extra lines: no column
