"""SpanRewriterModel: a BART seq2seq that writes spoken spans in written form (papers/003 §3.2)."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from lightning.pytorch import Trainer
from nemo.core.classes import ModelPT
from omegaconf import DictConfig, OmegaConf

from nemo_pc.data.datasets.formatter_datasets import PairCollate, PairDataset, build_dataloader
from nemo_pc.data.tokenizers.rewriter import load_rewriter_tokenizer

DEFAULT_BART = {
    "d_model": 256,
    "encoder_layers": 2,
    "decoder_layers": 2,
    "encoder_attention_heads": 4,
    "decoder_attention_heads": 4,
    "encoder_ffn_dim": 768,
    "decoder_ffn_dim": 768,
    "max_position_embeddings": 256,
    "dropout": 0.1,
}
"""The small from-scratch BART used when ``bart`` gives no value (no pretrained BART installs offline)."""


class SpanRewriterModel(ModelPT):
    """BART encoder-decoder trained from scratch; greedy decoding.

    As the span rewriter its input is a spoken span between span markers with a few words of context each side
    (:func:`nemo_pc.formatter.labels.span_input`) and its output the span's written form. Trained on whole
    spoken sentences instead, the same class is the full seq2seq baseline of papers/003 Table 2; the
    difference is only data and lengths, i.e. configuration.

    Config keys:
        tokenizer.tokenizer_file: a ``tokenizer.json`` from
            :func:`nemo_pc.data.tokenizers.rewriter.train_rewriter_tokenizer`; saved in the .nemo.
        bart: BartConfig keyword arguments over :data:`DEFAULT_BART` (vocabulary size and special token ids come
            from the tokenizer).
        max_source_length, max_target_length: token limits for inputs and outputs (training cuts, decoding stops).
        train_ds, validation_ds: ``manifest_filepath`` (``input``/``target`` JSON lines), ``batch_size``,
            ``shuffle``, ``num_workers``.
        optim: NeMo optimizer config.
    """

    def __init__(self, cfg: DictConfig, trainer: Trainer | None = None) -> None:
        cfg = cfg if isinstance(cfg, DictConfig) else OmegaConf.create(cfg)
        self.tokenizer = load_rewriter_tokenizer(
            self.register_artifact("tokenizer.tokenizer_file", cfg.tokenizer.tokenizer_file)
        )
        super().__init__(cfg=cfg, trainer=trainer)
        self.bart = self._setup_bart(cfg.get("bart") or {})

    def _setup_bart(self, bart_cfg: DictConfig | dict):
        from transformers import BartConfig, BartForConditionalGeneration

        overrides = OmegaConf.to_container(bart_cfg) if isinstance(bart_cfg, DictConfig) else dict(bart_cfg)
        options = {**DEFAULT_BART, **overrides}
        tok = self.tokenizer
        config = BartConfig(
            vocab_size=len(tok),
            pad_token_id=tok.pad_token_id,
            bos_token_id=tok.bos_token_id,
            eos_token_id=tok.eos_token_id,
            decoder_start_token_id=tok.eos_token_id,
            forced_bos_token_id=tok.bos_token_id,
            **options,
        )
        return BartForConditionalGeneration(config)

    def setup_training_data(self, train_data_config: DictConfig | dict) -> None:
        self._train_dl = self._dataloader(train_data_config)

    def setup_validation_data(self, val_data_config: DictConfig | dict) -> None:
        self._validation_dl = self._dataloader(val_data_config)

    def _dataloader(self, cfg: DictConfig | dict):
        collate = PairCollate(self.tokenizer, self.max_source_length, self.max_target_length)
        return build_dataloader(cfg, PairDataset(cfg["manifest_filepath"]), collate)

    @property
    def max_source_length(self) -> int:
        return int(self._cfg.get("max_source_length", 128))

    @property
    def max_target_length(self) -> int:
        return int(self._cfg.get("max_target_length", 64))

    @classmethod
    def list_available_models(cls) -> list:
        return []

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """Teacher-forced cross-entropy of ``labels`` given the input."""
        return self.bart(input_ids=input_ids, attention_mask=attention_mask, labels=labels).loss

    def training_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> torch.Tensor:
        loss = self(**batch)
        self.log("train_loss", loss, prog_bar=True)
        return loss

    def validation_step(self, batch: dict[str, torch.Tensor], batch_idx: int, dataloader_idx: int = 0) -> dict:
        output = {"val_loss": self(**batch).detach()}
        self.validation_step_outputs.append(output)
        return output

    def multi_validation_epoch_end(self, outputs: list[dict], dataloader_idx: int = 0) -> dict:
        loss = torch.stack([o["val_loss"] for o in outputs]).mean()
        return {"val_loss": loss, "log": {"val_loss": loss}}

    def rewrite(self, inputs: Sequence[str], batch_size: int = 64) -> list[str]:
        """Greedy decoding of each input; inputs are batched by length so padding stays small."""
        return [text for text, _ in self.rewrite_scored(inputs, batch_size)]

    @torch.inference_mode()
    def rewrite_scored(self, inputs: Sequence[str], batch_size: int = 64) -> list[tuple[str, float]]:
        """Greedy decoding of each input, with its confidence: the lowest probability of any token emitted (the
        end of sequence included, padding after it not)."""
        was_training = self.training
        self.eval()
        order = sorted(range(len(inputs)), key=lambda k: len(inputs[k]))
        outputs: list[tuple[str, float]] = [("", 0.0)] * len(inputs)
        for start in range(0, len(order), batch_size):
            chunk = order[start : start + batch_size]
            encoded = self.tokenizer(
                [inputs[k] for k in chunk],
                truncation=True,
                max_length=self.max_source_length,
                padding=True,
                return_tensors="pt",
            ).to(self.device)
            generated = self.bart.generate(
                input_ids=encoded["input_ids"],
                attention_mask=encoded["attention_mask"],
                num_beams=1,
                do_sample=False,
                max_new_tokens=self.max_target_length,
                return_dict_in_generate=True,
                output_scores=True,
            )
            scores = generated.scores
            logprobs = self.bart.compute_transition_scores(generated.sequences, scores, normalize_logits=True)
            emitted = generated.sequences[:, -logprobs.shape[1] :]
            logprobs = logprobs.masked_fill(emitted == self.tokenizer.pad_token_id, 0.0)
            confidence = logprobs.min(dim=1).values.exp().clamp(0.0, 1.0).tolist()
            texts = self.tokenizer.batch_decode(generated.sequences, skip_special_tokens=True)
            for k, text, score in zip(chunk, texts, confidence, strict=True):
                outputs[k] = (" ".join(text.split()), float(score))
        self.train(was_training)
        return outputs
