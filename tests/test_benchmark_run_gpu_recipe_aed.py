"""benchmarks/run_gpu_recipe.py --system aed_prompt: the overrides compose the AED config with the recipe's data and
tokenizer, and the RNN-T's keep composing its own."""

from benchmark_loader import load_benchmark

from nemo_pc.pipelines.train import compose_config


def test_both_systems_overrides_compose_their_configs(tmp_path):
    recipe = load_benchmark("run_gpu_recipe")
    for system, family in recipe.SYSTEMS.items():
        args = recipe.build_parser().parse_args(["--system", system, "--work", str(tmp_path), "--seed", "3"])
        cfg = compose_config(family, recipe.overrides(args, tmp_path, 50, "auto"))
        assert cfg.model.train_ds.use_lhotse and cfg.model.train_ds.shard_seed == 3
        assert cfg.trainer.limit_train_batches == 50
        assert cfg.model.validation_ds.manifest_filepath == str(tmp_path / "manifests" / "dev_curve.json")
        if family == "aed":
            assert cfg.model.aux_ctc.tokenizer.dir.startswith(str(tmp_path / "tokenizers"))
            assert cfg.model.pc.variant == "prompt" and cfg.model.transf_decoder.num_layers == 4
        else:
            assert (
                cfg.model.tokenizer.dir.startswith(str(tmp_path / "tokenizers")) and cfg.model.encoder.n_layers == 17
            )
