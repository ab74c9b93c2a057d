"""Trains the joint punctuated + normalized RNN-T; a variant is a config group.

python examples/speech_to_text_rnnt_pc.py variant=conditioned \
    model.tokenizer.dir=tokenizers/tokenizer_spe_bpe_v256 \
    model.train_ds.manifest_filepath=manifests/train.json \
    model.validation_ds.manifest_filepath=manifests/dev.json \
    model.train_ds.pc_fraction=0.2 trainer.max_epochs=20

The predictor first learns the text of a JSON-lines file (text, text_normalized) as a language model:
    model.predictor_lm.text=lm/text.json model.predictor_lm.steps=2000

Many GPUs or nodes: trainer.accelerator=gpu trainer.devices=-1 trainer.num_nodes=2 trainer.strategy=ddp
"""

import lightning.pytorch as pl
from nemo.core.config import hydra_runner
from nemo.utils import logging
from nemo.utils.exp_manager import exp_manager
from omegaconf import OmegaConf

from nemo_pc.models import EncDecRNNTPCBPEModel


@hydra_runner(config_path="../configs/rnnt", config_name="rnnt_pc")
def main(cfg) -> None:
    logging.info(f"Hydra config: {OmegaConf.to_yaml(cfg)}")
    trainer = pl.Trainer(**cfg.trainer)
    exp_manager(trainer, cfg.get("exp_manager", None))
    model = EncDecRNNTPCBPEModel(cfg=cfg.model, trainer=trainer)
    model.maybe_init_from_pretrained_checkpoint(cfg)
    model.pretrain_predictor_lm()  # model.predictor_lm.text=lm.json model.predictor_lm.steps=2000 (else nothing)
    trainer.fit(model)
    if cfg.model.test_ds.manifest_filepath:
        if model.prepare_test(trainer):
            trainer.test(model)


if __name__ == "__main__":
    main()
