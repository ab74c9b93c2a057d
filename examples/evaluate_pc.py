"""Scores a NeMo prediction manifest with every P&C metric; a Hydra front end to ``nemo-pc evaluate``.

python examples/evaluate_pc.py manifest=predictions.json json=report.json png=per.png
"""

from nemo.core.config import hydra_runner
from omegaconf import DictConfig

from nemo_pc.metrics.evaluate import EvalConfig, evaluate
from nemo_pc.metrics.report import format_report, plot_per, write_json


@hydra_runner(config_path="../configs/evaluate", config_name="evaluate_pc")
def main(cfg: DictConfig) -> None:
    config = EvalConfig(
        **{name: cfg[name] for name in EvalConfig.__dataclass_fields__},
    )
    report = evaluate(cfg.manifest, config, compare=cfg.compare, num_resamples=cfg.num_resamples, seed=cfg.seed)
    print(format_report(report))
    if cfg.json:
        write_json(report, cfg.json)
    if cfg.png:
        plot_per(report, cfg.png)


if __name__ == "__main__":
    main()
