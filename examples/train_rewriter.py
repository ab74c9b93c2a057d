"""Trains the span rewriter (papers/003 §3.2) or, with task=full, the full seq2seq baseline.

python examples/train_rewriter.py data_dir=formatter_data              # span rewriter
python examples/train_rewriter.py data_dir=formatter_data task=full    # full seq2seq baseline

Start from another model's weights with NeMo's init_from_nemo_model, e.g. the full seq2seq from the span rewriter
(its position table is shorter, so leave it out):
python examples/train_rewriter.py data_dir=formatter_data task=full model.optim.lr=5e-4 \
    +init_from_nemo_model.span.path=SpanRewriter.nemo '+init_from_nemo_model.span.exclude=[embed_positions]'
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
    model.maybe_init_from_pretrained_checkpoint(cfg)
    trainer.fit(model)
    model.save_to(cfg.output_path)


if __name__ == "__main__":
    main()
