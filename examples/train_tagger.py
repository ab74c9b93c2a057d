"""Trains the text formatter's tagger (papers/003 §3.1); the separate-taggers baseline is a config group.

python examples/train_tagger.py data_dir=formatter_data                 # joint 3-head tagger
python examples/train_tagger.py data_dir=formatter_data heads=punct     # one head, no sharing (baseline)

NeMo's init_from_nemo_model starts from another tagger's weights (+init_from_nemo_model.tagger.path=T.nemo).
"""

import lightning.pytorch as pl
from nemo.core.config import hydra_runner
from nemo.utils.exp_manager import exp_manager

from nemo_pc.models.tagger import PCTaggerModel


@hydra_runner(config_path="../configs/formatter", config_name="tagger")
def main(cfg) -> None:
    trainer = pl.Trainer(**cfg.trainer)
    exp_manager(trainer, cfg.get("exp_manager", None))
    model = PCTaggerModel(cfg=cfg.model, trainer=trainer)
    model.maybe_init_from_pretrained_checkpoint(cfg)
    trainer.fit(model)
    model.save_to(cfg.output_path)


if __name__ == "__main__":
    main()
