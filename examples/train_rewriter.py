"""Trains the span rewriter (papers/003 §3.2) or, with task=full, the full seq2seq baseline.

python examples/train_rewriter.py data_dir=formatter_data              # span rewriter
python examples/train_rewriter.py data_dir=formatter_data task=full    # full seq2seq baseline
"""

import lightning.pytorch as pl
from nemo.core.config import hydra_runner
from nemo.utils.exp_manager import exp_manager

from nemo_pc.models.rewriter import SpanRewriterModel


@hydra_runner(config_path="../configs/formatter", config_name="rewriter")
def main(cfg) -> None:
    trainer = pl.Trainer(**cfg.trainer)
    exp_manager(trainer, cfg.get("exp_manager", None))
    model = SpanRewriterModel(cfg=cfg.model, trainer=trainer)
    trainer.fit(model)
    model.save_to(cfg.output_path)


if __name__ == "__main__":
    main()
