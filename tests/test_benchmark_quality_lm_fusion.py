"""benchmarks/quality_lm_fusion.py end to end on a fake demo folder: tiny untrained models, a four-utterance corpus."""

import json
from pathlib import Path

import torch
from benchmark_loader import load_benchmark
from omegaconf import OmegaConf

import nemo_pc  # noqa: F401  (registers the nemo_pc. config targets)


def fake_demo(root: Path) -> Path:
    from nemo_pc.models import EncDecRNNTPCBPEModel
    from nemo_pc.models.ctc_pc import EncDecCTCPCBPEModel
    from nemo_pc.testing import ctc as ctc_fixtures
    from nemo_pc.testing.asr import tiny_model_config, train_tokenizer, write_pc_manifest

    for split in ("train", "dev", "test"):
        write_pc_manifest(root / "corpus", name=f"{split}.json")
        (root / "manifests").mkdir(exist_ok=True)
        (root / "corpus" / f"{split}.json").rename(root / "manifests" / f"{split}.json")
    train = root / "manifests" / "train.json"
    torch.manual_seed(0)
    rnnt = EncDecRNNTPCBPEModel(OmegaConf.create(tiny_model_config(train_tokenizer(train, root / "tok"))))
    rnnt.save_to(str(root / "models" / "rnnt_conditioned.nemo"))
    styles = train_tokenizer(train, root / "tok_styles", ctc_fixtures.VOCAB_SIZE, style_tags=True)
    ctc = EncDecCTCPCBPEModel(OmegaConf.create(ctc_fixtures.tiny_config(styles, pc={"inter": {"weight": 0.5}})))
    ctc.save_to(str(root / "models" / "ctc_inter.nemo"))
    return root


def test_lm_fusion_benchmark_runs_end_to_end_on_a_fake_demo(tmp_path):
    demo = fake_demo(tmp_path / "demo")
    out = tmp_path / "results" / "lm_fusion.json"
    args = ["--demo-dir", str(demo), "--order", "3", "--alphas", "0.5,2", "--resamples", "20", "--json", str(out)]
    load_benchmark("quality_lm_fusion").main(args)
    report = json.loads(out.read_text())
    assert set(report["systems"]) == {"rnnt_conditioned", "ctc_inter"}
    for system in report["systems"].values():
        assert set(system["dev_grid"]) == {"0", "0.5", "2"} and system["best_alpha"] in (0.0, 0.5, 2.0)
        assert Path(system["lm"]["output"]).is_file() and system["lm"]["order"] == 3
        assert system["lm"]["skipped"]["total"] == 1  # the utterance without punctuated text
        test = system["test"]
        assert set(test["lm"]) == set(test["no_lm"]) == {"wer", "wer_pc", "per", "punct_micro_f1"}
        assert all("delta" in row for row in test["paired"].values())
        # matched pairs for the word error rates; PER (insertions in its denominator) gets the bootstrap only
        assert "p_mapsswe" in test["paired"]["wer_pc"] and "p_mapsswe" not in test["paired"]["per"]
        assert test["num_utterances"] == 4


def test_lm_fusion_benchmark_fuses_the_normalized_mode_with_an_lm_text(tmp_path):
    demo = fake_demo(tmp_path / "demo")
    lm_text = tmp_path / "lm_text.json"
    lm_text.write_text((demo / "manifests" / "train.json").read_text())
    out = tmp_path / "normalized.json"
    args = [
        "--demo-dir",
        str(demo),
        "--systems",
        "rnnt_conditioned",
        "--mode",
        "normalized",
        "--lm-text",
        str(lm_text),
        "--order",
        "3",
        "--alphas",
        "0.5",
        "--resamples",
        "20",
        "--json",
        str(out),
    ]
    load_benchmark("quality_lm_fusion").main(args)
    system = json.loads(out.read_text())["systems"]["rnnt_conditioned"]
    assert system["mode"] == "normalized" and system["lm_text"] == str(lm_text)
    assert system["tuned_on"] == "dev wer" and set(system["test"]["lm"]) == {"wer"}
    assert system["lm"]["skipped"]["total"] == 0  # every line has text_normalized
    assert Path(system["lm"]["output"]).name == "normalized_order3.nemo"


def test_lm_fusion_benchmark_reads_a_model_outside_the_folder_and_scores_real_test(tmp_path, capsys):
    """``--model NAME=PATH`` reads a .nemo outside models/; ``--splits test,real_test`` scores real_speech/ too, with
    punctuation F1 beside the paired rates; a split without a manifest is refused before any work."""
    import pytest

    demo = fake_demo(tmp_path / "demo")
    elsewhere = tmp_path / "elsewhere" / "final.nemo"
    elsewhere.parent.mkdir()
    (demo / "models" / "ctc_inter.nemo").rename(elsewhere)
    (demo / "real_speech").mkdir()
    (demo / "real_speech" / "real_test.json").write_text((demo / "manifests" / "test.json").read_text())
    out = tmp_path / "real.json"
    common = ["--demo-dir", str(demo), "--systems", "mine", "--model", f"mine={elsewhere}", "--order", "3"]
    args = [*common, "--alphas", "0.5", "--resamples", "20", "--splits", "test,real_test", "--json", str(out)]
    load_benchmark("quality_lm_fusion").main(args)
    system = json.loads(out.read_text())["systems"]["mine"]
    assert system["model"] == str(elsewhere)
    assert set(system["splits"]) == {"test", "real_test"} and system["test"] == system["splits"]["test"]
    for row in system["splits"].values():
        assert set(row["lm"]) == set(row["no_lm"]) == {"wer", "wer_pc", "per", "punct_micro_f1"}
        assert 0.0 <= row["lm"]["punct_micro_f1"] <= 1.0 and row["num_utterances"] == 4
    rendered = load_benchmark("render_results").render_lm_fusion(out)
    real = next(line for line in rendered.splitlines() if "| real_test |" in line)
    assert real.startswith("| `mine` | real_test | 4 |") and real.endswith("| - | - | - |")
    f1 = system["splits"]["test"]["lm"]["punct_micro_f1"]
    assert f"→ {100 * f1:.1f}% |" in next(line for line in rendered.splitlines() if "| test |" in line)
    with pytest.raises(SystemExit) as exit_info:
        load_benchmark("quality_lm_fusion").main([*common, "--splits", "test,real_dev", "--json", str(out)])
    assert exit_info.value.code == 2 and "no manifest for ['real_dev']" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        load_benchmark("quality_lm_fusion").main([*common, "--model", "broken", "--json", str(out)])
    assert "--model broken: give NAME=PATH" in capsys.readouterr().err


def test_lm_fusion_benchmark_tunes_the_ctc_beam_bonus_with_the_weight(tmp_path, capsys):
    """``--betas``: every weight with every bonus on dev; the row without the LM at its own best bonus; a bonus that
    reaches the decoder changes what it writes; greedy decoding refuses the option."""
    import pytest

    demo = fake_demo(tmp_path / "demo")
    out = tmp_path / "betas.json"
    common = ["--demo-dir", str(demo), "--systems", "ctc_inter", "--order", "3", "--alphas", "0.5"]
    args = [*common, "--strategy", "beam", "--beam-size", "2", "--betas", "0,5", "--resamples", "20"]
    load_benchmark("quality_lm_fusion").main([*args, "--json", str(out)])
    system = json.loads(out.read_text())["systems"]["ctc_inter"]
    grid = system["dev_grid"]
    assert set(grid) == {"0/beta0", "0/beta5", "0.5/beta0", "0.5/beta5"}
    assert grid["0/beta0"] != grid["0/beta5"]  # a bonus of 5 per piece writes more pieces
    assert system["best_beta"] in (0.0, 5.0) and system["no_lm_beta"] in (0.0, 5.0)
    best = min(grid.values(), key=lambda row: row["wer_pc"])["wer_pc"]
    assert grid[f"{system['best_alpha']:g}/beta{system['best_beta']:g}"]["wer_pc"] == best
    no_lm = min((grid["0/beta0"], grid["0/beta5"]), key=lambda row: row["wer_pc"])
    assert grid[f"0/beta{system['no_lm_beta']:g}"] == no_lm
    first = load_benchmark("render_results").render_lm_fusion(out).splitlines()[0]
    chosen = f"`ctc_inter` {system['best_beta']:g} with the LM and {system['no_lm_beta']:g} without"
    assert f"per-piece bonus (`beam_beta`) over [0.0, 5.0] ({chosen})" in first
    with pytest.raises(SystemExit):
        load_benchmark("quality_lm_fusion").main([*common, "--betas", "1", "--json", str(out)])
    assert "--betas needs --strategy beam" in capsys.readouterr().err


def test_lm_loso_refuses_a_source_the_demo_does_not_have(tmp_path, capsys):
    import pytest

    (tmp_path / "config.json").write_text(json.dumps({"sources": ["kjv"]}))
    with pytest.raises(SystemExit) as exit_info:
        load_benchmark("quality_lm_loso").main(["--demo-dir", str(tmp_path), "--leave-out", "wiki"])
    assert exit_info.value.code == 2
    assert "--leave-out wiki: the demo's sources are ['kjv']" in capsys.readouterr().err
