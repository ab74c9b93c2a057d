"""The punctuated CTC model of an AED's heads: one encoder trained with several heads, each saved as its own model.

An AED whose ``aux_ctc`` has ``target: punctuated`` and an ``inter`` head (:mod:`nemo_pc.models.mixins.aed_ctc`)
carries, on its encoder, the heads of the ``ctc`` family's ``inter`` variant (papers/004): a punctuated head on the
encoder's output and a normalized head on the state after ``inter.layer`` blocks. :func:`aed_ctc_model` builds that
:class:`~nemo_pc.models.EncDecCTCPCBPEModel` with the AED's features, encoder and heads (the AED's ``ctc_decoder``
becomes its ``decoder``, ``ctc_inter_decoder`` its ``inter_decoder``), so it transcribes both modes as a CTC model
does, through NeMo's ``transcribe_speech.py`` too, and trains on from there as any ``ctc`` model.

    nemo-pc aed-ctc-heads demo_out/models/aed_prompt.nemo ctc_heads.nemo --tokenizer-dir demo_out/tokenizers/...
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from omegaconf import OmegaConf, open_dict

from nemo_pc.parts.manifest import save_model_atomic
from nemo_pc.parts.modes import PUNCTUATED

HEAD_NAMES = {"ctc_decoder.": "decoder.", "ctc_inter_decoder.": "inter_decoder."}
SHARED = ("preprocessor.", "encoder.")


class HeadsError(ValueError):
    """An AED that does not carry the CTC model's heads, or a tokenizer folder that is not theirs."""


def check_heads(aed) -> None:
    """Raises :class:`HeadsError` unless the AED has a punctuated head on its output and an intermediate one."""
    if aed.ctc_decoder is None:
        raise HeadsError("the AED has no CTC head (aux_ctc is null)")
    if aed.ctc_target != PUNCTUATED or aed.ctc_inter_decoder is None:
        raise HeadsError(
            f"the AED's CTC heads are not a punctuated CTC model's: aux_ctc.target is {aed.ctc_target!r} "
            f"(punctuated needed) and aux_ctc.inter is {'set' if aed.ctc_inter_decoder is not None else 'null'} "
            "(an intermediate normalized head needed); train it with model.aux_ctc.target=punctuated "
            "+model.aux_ctc.inter.layer=2 +model.aux_ctc.inter.weight=0.5"
        )


def heads_tokenizer_dir(aed, tokenizer_dir: str | Path | None) -> Path:
    """The SentencePiece folder of the heads: ``tokenizer_dir``, or the one the AED was trained with; it must hold
    the very ``tokenizer.model`` the AED carries (NeMo's CTC model reads the folder's ``vocab.txt`` too)."""
    folder = Path(tokenizer_dir or aed.cfg.aux_ctc.tokenizer.dir)
    model_file = folder / "tokenizer.model"
    if not model_file.is_file():
        raise HeadsError(f"{folder}: no tokenizer.model (pass --tokenizer-dir, the heads' SentencePiece folder)")
    if model_file.read_bytes() != aed.ctc_tokenizer.tokenizer.serialized_model_proto():
        raise HeadsError(f"{model_file}: not the SentencePiece model the AED's CTC heads were trained with")
    return folder


def ctc_config(aed, tokenizer_dir: Path, overrides: Sequence[str] = ()):
    """The ``ctc`` family's ``inter`` config with the AED's features, encoder (no pretrained weights to read: they
    come from the AED), marks, heads' layer and loss weights, and no data."""
    from nemo_pc.parts.configs import compose_config

    whisper = str(aed.cfg.encoder.get("_target_", "")).endswith("WhisperEncoder")
    cfg = compose_config(
        "ctc",
        [
            f"backbone={'whisper_tiny' if whisper else 'fastconformer'}",
            "variant=inter",
            f"model.tokenizer.dir={tokenizer_dir}",
            *overrides,
        ],
    ).model
    weight = aed.ctc_inter_weight
    with open_dict(cfg):
        cfg.preprocessor = OmegaConf.create(OmegaConf.to_container(aed.cfg.preprocessor, resolve=True))
        cfg.encoder = OmegaConf.create(OmegaConf.to_container(aed.cfg.encoder, resolve=True))
        if "pretrained" in cfg.encoder:
            cfg.encoder.pretrained = None
        cfg.pc.marks = aed.cfg.pc.marks
        cfg.pc.ctc_weight = 1.0 - weight
        cfg.pc.inter.weight = weight
        cfg.pc.inter.layer = aed.ctc_inter_layer
        for split in ("train_ds", "validation_ds", "test_ds"):
            if split in cfg:
                cfg[split].manifest_filepath = None
    return cfg


def heads_state(aed) -> dict:
    """The AED's features, encoder and CTC heads under the CTC model's names."""
    state = {}
    for key, value in aed.state_dict().items():
        if key.startswith(SHARED):
            state[key] = value
        for old, new in HEAD_NAMES.items():
            if key.startswith(old):
                state[new + key[len(old) :]] = value
    return state


def aed_ctc_model(aed, tokenizer_dir: str | Path | None = None, overrides: Sequence[str] = ()):
    """The :class:`~nemo_pc.models.EncDecCTCPCBPEModel` of an AED's encoder and CTC heads (see the module docstring).

    Raises:
        HeadsError: the AED lacks the heads, or the tokenizer folder is not theirs; or a weight of the CTC model that
            the AED does not give.
    """
    from nemo_pc.models import EncDecCTCPCBPEModel

    check_heads(aed)
    cfg = ctc_config(aed, heads_tokenizer_dir(aed, tokenizer_dir), overrides)
    model = EncDecCTCPCBPEModel(cfg=cfg)
    missing, _ = model.load_state_dict(heads_state(aed), strict=False)
    if missing:
        raise HeadsError(f"the AED gives no weights for {missing[:3]} ({len(missing)} in all)")
    return model.eval()


def export_aed_ctc_heads(
    aed_path: str | Path, output: str | Path, tokenizer_dir: str | Path | None = None, overrides: Sequence[str] = ()
) -> Path:
    """Writes :func:`aed_ctc_model` of the AED in ``aed_path`` to ``output`` (atomically) and returns its path."""
    from nemo_pc.models import EncDecAEDPCModel

    aed = EncDecAEDPCModel.restore_from(str(aed_path), map_location="cpu")
    model = aed_ctc_model(aed, tokenizer_dir, overrides)
    return save_model_atomic(model, output)
