"""Trains EncDecCTCPCBPEModel: punctuated CTC with an intermediate normalized CTC, or a multi-style variant.

python examples/speech_to_text_ctc_pc.py variant=inter \
    model.tokenizer.dir=tokenizers/tokenizer_spe_bpe_v256 \
    model.train_ds.manifest_filepath=manifests/train.json \
    model.validation_ds.manifest_filepath=manifests/dev.json \
    trainer.max_epochs=50

Variants (configs/ctc/variant): punctuated, inter, style_layers, mixed_m0, mixed_m1, mixed_m2, style_embedding.
"""

import lightning.pytorch as pl
from nemo.core.config import hydra_runner
from nemo.utils import logging
from nemo.utils.exp_manager import exp_manager
from omegaconf import OmegaConf

from nemo_pc.models.ctc_pc import EncDecCTCPCBPEModel


@hydra_runner(config_path="../configs/ctc", config_name="ctc_pc")
def main(cfg):
    logging.info(f"Hydra config:\n{OmegaConf.to_yaml(cfg)}")
    trainer = pl.Trainer(**cfg.trainer)
    exp_manager(trainer, cfg.get("exp_manager", None))
    model = EncDecCTCPCBPEModel(cfg=cfg.model, trainer=trainer)
    model.maybe_init_from_pretrained_checkpoint(cfg)
    trainer.fit(model)


if __name__ == "__main__":
    main()
