"""A P&C model from a stock NeMo checkpoint, whose normalized mode starts as the stock model (``nemo-pc adapt``).

Stock families and what they become:
    * ``EncDecRNNTBPEModel`` (RNN-T or TDT) and ``EncDecHybridRNNTCTCBPEModel``:
      :class:`~nemo_pc.models.EncDecRNNTPCBPEModel` (a hybrid's CTC head becomes its ``aux_ctc`` head, which
      learns the normalized mode). ``decoders=conditioned``:
      the stock predictor with a zero-initialised mode embedding added to its token embedding (``mode_combine:
      add``); ``decoders=dual``: the stock predictor and joint copied into both heads.
    * ``EncDecCTCModelBPE``: :class:`~nemo_pc.models.EncDecCTCPCBPEModel`. ``decoders=dual``: the stock CTC head
      copied into the main (punctuated) head and a normalized head on the last layer (``style_layers`` branching
      after the last layer); ``decoders=conditioned``: one head, and a zero-initialised style embedding at the input
      of the last layer (``style_embedding``).

The RNN-T's decoder and joint are the packaged recipe's ``variant=<decoders>`` (``configs/rnnt/variant``, with the
``predictor`` whose class the stock predictor is) around the stock settings. The encoder and preprocessor are copied
as they are. The tokenizer is the stock one when it already writes case and
the marks; otherwise it is extended (:mod:`nemo_pc.data.tokenizers.extension`): every stock piece keeps its id and its
rows (embedding, output layer), and each appended piece's rows start as the mean of its related stock pieces' rows
(the mean of all stock rows for a mark), its output bias
:data:`~nemo_pc.models.vocabulary.NEW_PIECE_MARGIN` below theirs. An appended piece
therefore scores below a stock piece at every step, and greedy decoding in the normalized mode gives exactly the stock
model's transcripts until the model is trained.
"""

from __future__ import annotations

import importlib
import os
import tarfile
import tempfile
from collections.abc import Callable
from pathlib import Path

import torch
from omegaconf import DictConfig, OmegaConf, open_dict

from nemo_pc.data.tokenizers.extension import ExtendedTokenizer, extend_tokenizer, related_pieces
from nemo_pc.models.vocabulary import RowSources, gather_rows
from nemo_pc.parts.configs import compose_config, group_options
from nemo_pc.parts.text import DEFAULT_MARKS

DECODERS = ("conditioned", "dual")


def stock_family(model) -> str:
    """``rnnt`` (RNN-T or TDT), ``hybrid`` or ``ctc``: the family of a stock NeMo model.

    Raises:
        ValueError: another model class (e.g. an already adapted one, or a character-based model).
    """
    from nemo.collections.asr.models import EncDecCTCModelBPE, EncDecHybridRNNTCTCBPEModel, EncDecRNNTBPEModel

    from nemo_pc.models import EncDecCTCPCBPEModel, EncDecRNNTPCBPEModel

    if isinstance(model, (EncDecRNNTPCBPEModel, EncDecCTCPCBPEModel)):
        raise ValueError(f"{type(model).__name__}: the model is a nemo_pc model already")
    if isinstance(model, EncDecHybridRNNTCTCBPEModel):
        return "hybrid"
    if isinstance(model, EncDecRNNTBPEModel):
        return "rnnt"
    if isinstance(model, EncDecCTCModelBPE):
        return "ctc"
    raise ValueError(
        f"{type(model).__name__}: adapt takes EncDecRNNTBPEModel (RNN-T, TDT), "
        "EncDecHybridRNNTCTCBPEModel or EncDecCTCModelBPE checkpoints"
    )


# The tokenizer


def _write_stock_tokenizer(model, folder: Path) -> Path:
    processor = getattr(model.tokenizer, "tokenizer", None)
    if processor is None or not hasattr(processor, "serialized_model_proto"):
        raise ValueError(f"{type(model).__name__}: adapt needs a SentencePiece tokenizer")
    path = folder / "stock_tokenizer.model"
    path.write_bytes(processor.serialized_model_proto())
    return path


def extension_rows(extended: ExtendedTokenizer, stock_processor, marks: str) -> RowSources:
    """Every stock piece keeps its rows; each appended piece starts from its related stock pieces."""
    related = [related_pieces(piece, stock_processor, marks) for piece in extended.added]
    stock = [[index] for index in range(extended.stock_size)]
    return RowSources(extended.stock_size, stock + related, [True] * len(stock) + [False] * len(related))


# The weights


def load_adapted_weights(
    target: torch.nn.Module,
    stock_state: dict[str, torch.Tensor],
    destinations: Callable[[str], list[str]],
    rows: RowSources,
    neutral: tuple[str, ...] = (),
) -> None:
    """Copies every stock tensor to its destinations in ``target`` (``destinations(stock_key)``), widening the
    token-indexed ones (:func:`~nemo_pc.models.vocabulary.gather_rows`); ``neutral`` keys of ``target`` are set to
    zero.

    Raises:
        ValueError: a stock tensor has no destination or does not fit it, or a target tensor stays unset.
    """
    state = target.state_dict()
    unset = set(state)
    added = rows.new_vocab - rows.old_vocab
    for key, value in stock_state.items():
        names = destinations(key)
        if not names:
            raise ValueError(f"{key}: the stock tensor has no place in the adapted model")
        for name in names:
            if name not in state:
                raise ValueError(f"{key}: the adapted model has no {name}")
            if state[name].shape != value.shape:
                grown = value.shape[0] + added == state[name].shape[0] and value.shape[1:] == state[name].shape[1:]
                if not grown:
                    raise ValueError(
                        f"{key}: stock shape {tuple(value.shape)} does not fit {name} {tuple(state[name].shape)}"
                    )
                value = gather_rows(value, rows, is_bias=key.endswith("bias"))
            state[name] = value.clone()
            unset.discard(name)
    for name in neutral:
        state[name] = torch.zeros_like(state[name])
        unset.discard(name)
    if unset:
        raise ValueError(f"the stock checkpoint sets no {sorted(unset)[:5]} of the adapted model")
    target.load_state_dict(state)


# The configs


def _container(cfg: DictConfig) -> dict:
    return OmegaConf.to_container(cfg, resolve=True)


def _data_shell(stock: dict | None, sample_rate: int, shuffle: bool) -> dict:
    stock = stock or {}
    return {
        "manifest_filepath": None,
        "sample_rate": sample_rate,
        "batch_size": stock.get("batch_size", 16),
        "shuffle": shuffle,
        "num_workers": stock.get("num_workers", 0),
    }


def _common_config(stock_cfg: DictConfig, tokenizer_dir: Path) -> dict:
    cfg = _container(stock_cfg)
    rate = cfg.get("sample_rate", cfg.get("preprocessor", {}).get("sample_rate", 16000))
    cfg["tokenizer"] = {"dir": str(tokenizer_dir), "type": "bpe"}
    cfg["train_ds"] = _data_shell(cfg.get("train_ds"), rate, shuffle=True)
    cfg["validation_ds"] = _data_shell(cfg.get("validation_ds"), rate, shuffle=False)
    cfg["test_ds"] = _data_shell(cfg.get("test_ds"), rate, shuffle=False)
    for key in ("target", "nemo_version", "labels"):
        cfg.pop(key, None)
    return cfg


def _same_class(path: str, other: str) -> bool:
    """Whether two ``_target_`` paths name one class (``nemo.collections.asr.modules.RNNTDecoder`` and its module's
    own path ``nemo.collections.asr.modules.rnnt.RNNTDecoder`` do)."""

    def load(target: str):
        module, _, name = target.rpartition(".")
        try:
            return getattr(importlib.import_module(module), name, None)
        except (ImportError, ValueError):
            return None

    return path == other or (load(path) or path) is load(other)


def packaged_predictor(stock_target: str) -> str | None:
    """The ``predictor`` option of the packaged RNN-T recipe whose plain predictor (``variant=single``) is the class
    ``stock_target``; None when none is."""
    for predictor in group_options("rnnt", "predictor"):
        plain = compose_config("rnnt", ["variant=single", f"predictor={predictor}"]).model.decoder
        if _same_class(plain["_target_"], stock_target):
            return predictor
    return None


def _per_mode(recipe: DictConfig, stock: dict, **shared) -> dict:
    """A stock predictor or joint config as the head of the recipe's per-mode wrapper (``head_target``, ``head``),
    with the wrapper's ``shared`` settings."""
    return {"_target_": recipe["_target_"], "head_target": stock.pop("_target_"), **shared, "head": stock}


def rnnt_config(stock_cfg: DictConfig, tokenizer_dir: Path, decoders: str, marks: str = DEFAULT_MARKS) -> dict:
    """The P&C RNN-T config of a stock RNN-T / TDT config: the packaged recipe's ``variant=<decoders>`` (with the
    ``predictor`` of the stock class) around the stock predictor and joint, whose settings stay the stock ones."""
    cfg = _common_config(stock_cfg, tokenizer_dir)
    decoder, joint = cfg["decoder"], cfg["joint"]
    decoder.pop("vocab_size", None)
    for key in ("num_classes", "vocabulary"):
        joint.pop(key, None)
    joint["fuse_loss_wer"] = False
    loss = cfg.setdefault("loss", {})
    if loss.get("loss_name", "default") in ("default", "tdt"):
        loss["loss_name"] = "auto"  # nemo_pc's exact losses on CPU, NeMo's numba ones on GPU (tdt_kwargs kept)
    predictor = packaged_predictor(decoder["_target_"])
    if predictor is None and decoders == "conditioned":
        raise ValueError(f"decoder._target_: no mode-conditioned form of {decoder['_target_']}; use --decoders dual")
    choices = [f"variant={decoders}", *([f"predictor={predictor}"] if predictor else [])]
    recipe = compose_config("rnnt", choices).model
    cfg["pc"] = {
        "alpha": recipe.pc.alpha,
        "default_mode": recipe.pc.default_mode,
        "marks": marks,
    }
    if "head" not in recipe.decoder:
        decoder.update(_target_=recipe.decoder["_target_"], mode_combine="add")
        return cfg
    jointnet = joint.pop("jointnet")
    jointnet.pop("encoder_hidden", None)
    jointnet.pop("pred_hidden", None)
    cfg["decoder"] = _per_mode(recipe.decoder, decoder)
    cfg["joint"] = _per_mode(recipe.joint, joint, jointnet=jointnet)
    return cfg


def ctc_config(stock_cfg: DictConfig, tokenizer_dir: Path, decoders: str, marks: str) -> dict:
    """The P&C CTC config of a stock CTC config."""
    cfg = _common_config(stock_cfg, tokenizer_dir)
    cfg["decoder"].update(num_classes=-1, vocabulary=[])  # set from the tokenizer by the model
    layers = int(cfg["encoder"]["n_layers"])
    pc = {"target": "punctuated", "default_mode": "punctuated", "marks": marks}
    if decoders == "dual":
        pc["style_layers"] = {"branch_layer": layers, "weight": 1.0}
    else:
        pc["style_embedding"] = {"layers": [layers], "weight": 1.0}
    cfg["pc"] = pc
    return cfg


# The models


def _rnnt_destinations(decoders: str) -> Callable[[str], list[str]]:
    def destinations(key: str) -> list[str]:
        module, _, rest = key.partition(".")
        if decoders == "dual" and module in ("decoder", "joint"):
            return [f"{module}.heads.{mode}.{rest}" for mode in (0, 1)]
        return [key]

    return destinations


def _ctc_destinations(decoders: str) -> Callable[[str], list[str]]:
    def destinations(key: str) -> list[str]:
        if decoders == "dual" and key.startswith("decoder."):
            return [key, "normalized_" + key]
        return [key]

    return destinations


def _stock_state(model) -> dict[str, torch.Tensor]:
    """The stock model's weights, without the buffers of its loss and metric (rebuilt by the adapted model)."""
    return {
        key: value
        for key, value in model.state_dict().items()
        if not key.startswith(("loss.", "wer.", "ctc_loss.", "ctc_wer."))
    }


def adapt_model(
    stock,
    workdir: str | Path,
    decoders: str = "conditioned",
    tokenizer: str | Path | None = None,
    marks: str = DEFAULT_MARKS,
):
    """The P&C model of a stock NeMo ASR model (see the module docstring), in eval mode on the CPU.

    Args:
        stock: a restored ``EncDecRNNTBPEModel``, ``EncDecHybridRNNTCTCBPEModel`` or ``EncDecCTCModelBPE``.
        workdir: a folder for the tokenizer files; it must exist until the model is saved.
        decoders: ``conditioned`` or ``dual``.
        tokenizer: a tokenizer folder whose pieces with capitals or marks extend the stock tokenizer; None extends
            it with the capitalized twins of its pieces and the marks (or keeps it, when it writes both).
        marks: the mark set of the P&C model.

    Raises:
        ValueError: an unknown ``decoders``, a stock model adapt does not take, or weights that do not fit.
    """
    from nemo_pc.models import EncDecCTCPCBPEModel, EncDecRNNTPCBPEModel

    if decoders not in DECODERS:
        raise ValueError(f"decoders must be one of {DECODERS}, got {decoders!r}")
    family = stock_family(stock)
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    stock_model = _write_stock_tokenizer(stock, workdir)
    extended = extend_tokenizer(stock_model, workdir / "tokenizer", marks, tokenizer)
    rows = extension_rows(extended, stock.tokenizer.tokenizer, marks)
    stock_vocab = stock.tokenizer.vocab_size
    if family == "ctc":
        cfg = ctc_config(stock.cfg, extended.directory, decoders, marks)
        model = EncDecCTCPCBPEModel(cfg=OmegaConf.create(cfg))
        destinations = _ctc_destinations(decoders)
        neutral = ("style_embedding.proj.weight",) if decoders == "conditioned" else ()
    else:
        cfg = rnnt_config(stock.cfg, extended.directory, decoders, marks)
        model = EncDecRNNTPCBPEModel(cfg=OmegaConf.create(cfg))
        destinations = _rnnt_destinations(decoders)
        neutral = ("decoder.mode_embed.weight",) if decoders == "conditioned" else ()
    load_adapted_weights(model, _stock_state(stock), destinations, rows, neutral)
    with open_dict(model.cfg):
        model.cfg.pc.adapted_from = {
            "family": family,
            "class": type(stock).__name__,
            "stock_vocab": stock_vocab,
            "added_pieces": len(extended.added),
        }
    return model.eval()


def adapt_checkpoint(
    stock_path: str | Path,
    out_path: str | Path,
    decoders: str = "conditioned",
    tokenizer: str | Path | None = None,
    marks: str = DEFAULT_MARKS,
):
    """Restores a stock ``.nemo``, adapts it (:func:`adapt_model`) and writes the P&C ``.nemo`` atomically.

    Returns:
        The adapted model.

    Raises:
        ValueError: see :func:`adapt_model`; also an ``out_path`` that does not end in ``.nemo``.
    """
    stock_path, out_path = Path(stock_path), Path(out_path)
    if out_path.suffix != ".nemo":
        raise ValueError(f"{out_path}: the output must be a .nemo file")
    if not stock_path.is_file():
        raise FileNotFoundError(2, "No such file", str(stock_path))
    from nemo.collections.asr.models import ASRModel

    try:
        stock = ASRModel.restore_from(str(stock_path), map_location="cpu")
    except (tarfile.TarError, KeyError, EOFError) as err:
        raise ValueError(f"{stock_path}: not a NeMo .nemo checkpoint ({err})") from err
    out_path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out_path.parent, prefix=".adapt.") as work:
        model = adapt_model(stock, Path(work) / "files", decoders, tokenizer, marks)
        partial = Path(work) / out_path.name
        model.save_to(str(partial))
        os.replace(partial, out_path)
    return model
