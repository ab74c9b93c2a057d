"""Trains the P&C attention encoder-decoder (papers/001) from Whisper tiny.en's encoder and decoder; a variant is a
config group.

python examples/speech_to_text_aed_pc.py variant=prompt \
    model.aux_ctc.tokenizer.dir=tokenizers/tokenizer_spe_bpe_v128 \
    model.train_ds.manifest_filepath=manifests/train.json \
    model.validation_ds.manifest_filepath=manifests/dev.json \
    trainer.max_steps=2000

Many GPUs: trainer.accelerator=gpu trainer.devices=-1 trainer.strategy=ddp trainer.precision=bf16-mixed
"""

import lightning.pytorch as pl
from nemo.core.config import hydra_runner
from nemo.utils import logging
from nemo.utils.exp_manager import exp_manager
from omegaconf import OmegaConf

from nemo_pc.models import EncDecAEDPCModel


@hydra_runner(config_path="../configs/aed", config_name="aed_pc")
def main(cfg) -> None:
    logging.info(f"Hydra config: {OmegaConf.to_yaml(cfg)}")
    trainer = pl.Trainer(**cfg.trainer)
    exp_manager(trainer, cfg.get("exp_manager", None))
    model = EncDecAEDPCModel(cfg=cfg.model, trainer=trainer)
    model.maybe_init_from_pretrained_checkpoint(cfg)
    trainer.fit(model)
    if cfg.model.test_ds.manifest_filepath:
        if model.prepare_test(trainer):
            trainer.test(model)


if __name__ == "__main__":
    main()
