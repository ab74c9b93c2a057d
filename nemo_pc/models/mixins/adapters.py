"""Adapter fine-tuning of the P&C attention encoder-decoder with NeMo's own adapter calls.

``model.adapter_finetune`` (the ``finetune=adapters`` recipe of ``configs/aed/finetune/``) asks for it. The encoder
and the transformer decoder are then built as their registered adapter classes
(:mod:`nemo_pc.modules.whisper_adapters`, NeMo's ``register_adapter``), and once the pretrained weights are in,
NeMo's ``add_adapter`` adds

* ``encoder:<name>_encoder`` and ``transf_decoder:<name>_decoder``: a ``LinearAdapter`` after every block;
* ``transf_decoder:<name>_mode_rows``: a :class:`~nemo_pc.modules.whisper_adapters.RowOffsetAdapter` on the
  ``<|normalized|>`` and ``<|punctuated|>`` rows of the token embedding, which start alike (Whisper's
  ``<|notimestamps|>``) and must learn to differ;

then NeMo's ``freeze`` + ``unfreeze_enabled_adapters`` leave the adapters (and the ``keep_trainable`` modules)
trainable. Every adapter is NeMo's, so ``save_adapters`` / ``load_adapters`` carry all of them, the mode rows included.

A restored model takes its adapters from its saved config and state dict (NeMo's ``setup_adapters``), as any NeMo
model does, and is not frozen again (:meth:`AEDAdapterMixin.freeze_for_adapters` does that).

Config keys (``model.adapter_finetune``; absent or null: no adapters, every weight trains). NeMo keeps the adapters it
has added under ``model.adapters``, so the recipe's keys live apart from them:
    name: the adapters' name stem (``pc``).
    dim: the hidden width of each ``LinearAdapter``.
    encoder, decoder: whether the encoder's and the decoder's blocks take an adapter.
    mode_rows: whether the two mode rows of the token embedding train.
    keep_trainable: model attributes that stay trainable (``ctc_decoder`` and ``ctc_inter_decoder``, the CTC heads:
        they start from random weights, and frozen they would steer the encoder adapters towards a random
        projection); one that is None (no such head) is passed over.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from nemo.collections.common.parts.adapter_modules import LinearAdapterConfig
from nemo.core.classes.mixins import adapter_mixins
from omegaconf import DictConfig, OmegaConf, open_dict
from omegaconf.errors import OmegaConfBaseException

from nemo_pc.modules.whisper_adapters import RowOffsetAdapterConfig
from nemo_pc.parts.modes import MODES


@dataclass
class AdapterFinetuneConfig:
    """The ``model.adapter_finetune`` keys (see the module docstring)."""

    name: str = "pc"
    dim: int = 32
    encoder: bool = True
    decoder: bool = True
    mode_rows: bool = True
    keep_trainable: list[str] = field(default_factory=lambda: ["ctc_decoder", "ctc_inter_decoder"])


def adapter_finetune_config(cfg: DictConfig) -> DictConfig | None:
    """``cfg.adapter_finetune`` over the defaults of :class:`AdapterFinetuneConfig`, or None when it is absent or null.

    Raises:
        ValueError: an unknown key or a bad value; the decoder's adapters with the ``style_layers`` variant, whose
            per-mode top blocks are copies that NeMo's ``add_adapter`` does not reach.
    """
    section = cfg.get("adapter_finetune")
    if section is None:
        return None
    try:
        spec = OmegaConf.merge(OmegaConf.structured(AdapterFinetuneConfig), section)
    except OmegaConfBaseException as error:  # its message names the key
        raise ValueError(f"model.adapter_finetune: {error}") from error
    if spec.decoder and cfg.get("pc", {}).get("variant") == "style_layers":
        raise ValueError(
            "model.adapter_finetune.decoder: the style_layers variant's per-mode decoder blocks take no adapters; "
            "use variant=prompt or mixed, or adapter_finetune.decoder=false"
        )
    return spec


def adapter_class_path(target: str) -> str:
    """The class path of the adapter class registered (NeMo's ``register_adapter``) for ``target``, the class path
    (a short re-exported one too) of a base class or of its adapter class.

    Raises:
        ValueError: no adapter class is registered for it.
    """
    info = adapter_mixins.get_registered_adapter(target)
    if info is None:
        raise ValueError(f"{target}: no adapter class is registered for it with NeMo's register_adapter")
    return info.adapter_class_path


def adapted_modules(spec: DictConfig) -> list[str]:
    """The model's modules that take an adapter under ``spec`` (an :func:`adapter_finetune_config`)."""
    return [
        name
        for name, wanted in (("encoder", spec.encoder), ("transf_decoder", spec.decoder or spec.mode_rows))
        if wanted
    ]


class AEDAdapterMixin:
    """Adapter fine-tuning for the AED (see the module docstring); before NeMo's ``EncDecMultiTaskModel`` in the
    bases. The model calls :meth:`setup_adapter_finetune` once its pretrained weights are loaded."""

    def __init__(self, cfg: DictConfig, trainer: Any = None) -> None:
        spec = adapter_finetune_config(cfg)
        if spec is not None:
            with open_dict(cfg):
                for module in adapted_modules(spec):
                    cfg[module]._target_ = adapter_class_path(cfg[module]._target_)
        super().__init__(cfg=cfg, trainer=trainer)

    def setup_adapter_finetune(self) -> None:
        """When the model is built for training (not restored) with ``model.adapter_finetune``: its adapters, then
        :meth:`freeze_for_adapters`. Adapters already in ``model.adapters`` are kept as they are."""
        spec = adapter_finetune_config(self.cfg)
        if spec is None or self._is_model_being_restored():
            return
        width = self.transf_decoder.hidden_size
        adapters = {
            "encoder": ("encoder", LinearAdapterConfig(in_features=self.encoder.d_model, dim=spec.dim)),
            "decoder": ("transf_decoder", LinearAdapterConfig(in_features=width, dim=spec.dim)),
            "mode_rows": (
                "transf_decoder",
                RowOffsetAdapterConfig(in_features=width, rows=[self.tokenizer.mode_token_id(m) for m in MODES]),
            ),
        }
        present = set(self.cfg.get("adapters") or {})
        for switch, (module, adapter) in adapters.items():
            name = f"{spec.name}_{switch}"
            if spec[switch] and name not in present:
                self.add_adapter(name=f"{module}:{name}", cfg=adapter)
        self.freeze_for_adapters()

    def freeze_for_adapters(self) -> None:
        """NeMo's ``freeze`` and ``unfreeze_enabled_adapters``; the ``keep_trainable`` modules of
        ``model.adapter_finetune`` then take gradients again.

        Raises:
            ValueError: a ``keep_trainable`` name that is no attribute of the model.
        """
        spec = adapter_finetune_config(self.cfg) or OmegaConf.structured(AdapterFinetuneConfig)
        self.freeze()
        self.unfreeze_enabled_adapters()
        for name in spec.keep_trainable:
            if not hasattr(self, name):
                raise ValueError(f"model.adapter_finetune.keep_trainable: the model has no {name!r}")
            module = getattr(self, name)
            if module is not None:
                module.requires_grad_(True)

    def replace_adapter_compatible_modules(self, update_config: bool = True, verbose: bool = True) -> None:
        """NeMo's: every module with a registered adapter class becomes one. The config's ``_target_`` of the encoder
        and the decoder is then set to the adapter class also where it is a short re-exported path
        (``nemo_pc.modules.WhisperEncoder``), which NeMo's exact string match passes over, so that a saved ``.nemo``
        rebuilds the adapter classes."""
        super().replace_adapter_compatible_modules(update_config=update_config, verbose=verbose)
        if not update_config:
            return
        with open_dict(self.cfg):
            for module in ("encoder", "transf_decoder"):
                target = (self.cfg.get(module) or {}).get("_target_")
                if target and isinstance(getattr(self, module, None), adapter_mixins.AdapterModuleMixin):
                    self.cfg[module]._target_ = adapter_class_path(target)
