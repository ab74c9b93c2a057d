"""A stock SentencePiece tokenizer extended to write case and marks, every stock piece keeping its id.

Released NeMo ASR checkpoints often write lower-case text without marks. To adapt one into a P&C model, its
tokenizer gets the pieces it lacks appended after its own, so that every stock piece keeps its id (and the model its
embedding and output rows). The appended pieces come from one of two sources:

* the stock tokenizer itself (the default): the capitalized twin of every piece that starts with a lower-case letter
  (``▁the`` -> ``▁The``, ``t`` -> ``T``), merged exactly as its twin is (the same merge order, below every stock
  piece), and each mark of the mark set as one piece;
* another tokenizer (``source``), e.g. one trained by ``nemo-pc build-tokenizer`` on punctuated text: its pieces that
  hold an upper-case letter or a mark.

A case-folding normalizer (NeMo's ``--do_lower_case``) is replaced by the same rule without case folding.
Lower-case text without marks never reaches an appended piece (each holds an upper-case letter or a mark), so
normalized text is tokenized exactly as the stock tokenizer tokenizes it. :func:`related_pieces` names the stock
pieces an appended piece starts from (its lower-case spelling without marks, as the stock tokenizer writes it).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from nemo_pc.parts.text import DEFAULT_MARKS

WORD_START = "▁"
MODEL_FILE = "tokenizer.model"


@dataclass
class ExtendedTokenizer:
    """The result of :func:`extend_tokenizer`.

    Attributes:
        directory: the tokenizer folder (``tokenizer.model``, ``tokenizer.vocab``, ``vocab.txt``).
        stock_size: the number of stock pieces; ids below it are the stock ids.
        added: the appended pieces, in id order (``stock_size``, ``stock_size + 1``, ...); empty when the stock
            tokenizer already writes case and marks.
    """

    directory: Path
    stock_size: int
    added: list[str]


def _parse_proto(data: bytes):
    from sentencepiece import sentencepiece_model_pb2

    proto = sentencepiece_model_pb2.ModelProto()
    proto.ParseFromString(data)
    return proto


def _load_proto(model_path: str | Path):
    return _parse_proto(Path(model_path).read_bytes())


def _is_text_piece(piece) -> bool:
    return piece.type in (piece.NORMAL, piece.USER_DEFINED)


def writes_case_and_marks(pieces: Iterable[str], marks: str = DEFAULT_MARKS) -> bool:
    """Whether a vocabulary can write capitals and every mark of ``marks``."""
    text = "".join(pieces)
    return any(ch.isupper() for ch in text) and all(mark in text for mark in marks)


def _capitalize(piece: str) -> str | None:
    body = piece[1:] if piece.startswith(WORD_START) else piece
    if not body or not body[0].islower() or body[0].upper() == body[0]:
        return None
    return piece[: len(piece) - len(body)] + body[0].upper() + body[1:]


def _writes_case_or_mark(piece: str, marks: str) -> bool:
    return any(ch.isupper() or ch in marks for ch in piece)


def _appended(stock, marks: str, source=None) -> list[tuple[str, float]]:
    """The pieces to append and their scores, below every stock score, in the order they rank among themselves."""
    have = {piece.piece for piece in stock.pieces}
    scores = [piece.score for piece in stock.pieces if _is_text_piece(piece)]
    floor = min(scores, default=0.0)
    span = max(scores, default=0.0) - floor + 1.0
    added: dict[str, float] = {}
    if source is None:
        for piece in stock.pieces:
            twin = _capitalize(piece.piece) if piece.type == piece.NORMAL else None
            if twin is not None and twin not in have:
                added.setdefault(twin, piece.score - span)
        bottom = min(added.values(), default=floor - span)
        for rank, mark in enumerate(mark for mark in dict.fromkeys(marks) if mark not in have):
            added.setdefault(mark, bottom - 1.0 - rank)
        return list(added.items())
    source_scores = [piece.score for piece in source.pieces if _is_text_piece(piece)]
    shift = floor - max(source_scores, default=0.0) - 1.0
    for piece in source.pieces:
        if piece.type == piece.NORMAL and piece.piece not in have and _writes_case_or_mark(piece.piece, marks):
            added.setdefault(piece.piece, piece.score + shift)
    return list(added.items())


def _case_keeping_normalizer(proto) -> None:
    """Replaces a case-folding normalizer (``nmt_nfkc_cf``, what NeMo's ``--do_lower_case`` trains) by the same
    rule without case folding, taken from a throw-away model trained in memory, so that capitals reach the model."""
    import io

    import sentencepiece

    name = proto.normalizer_spec.name
    if not name.endswith("_cf"):
        return
    model = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter(["a b c"]),
        model_writer=model,
        vocab_size=4,
        model_type="char",
        normalization_rule_name=name[: -len("_cf")],
        minloglevel=2,
    )
    donor = _parse_proto(model.getvalue())
    proto.normalizer_spec.name = donor.normalizer_spec.name
    proto.normalizer_spec.precompiled_charsmap = donor.normalizer_spec.precompiled_charsmap


def _vocab_txt_line(piece: str) -> str:
    """NeMo's ``vocab.txt`` spelling of a piece (as ``create_spt_model`` writes it)."""
    token = piece[1:] if piece.startswith(WORD_START) else f"##{piece}"
    return token or piece[0]


def write_tokenizer_dir(proto, directory: str | Path) -> Path:
    """Writes a SentencePiece model proto as a NeMo tokenizer folder, each file atomically."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    text_pieces = [piece.piece for piece in proto.pieces if _is_text_piece(piece)]
    contents = {
        MODEL_FILE: proto.SerializeToString(),
        "tokenizer.vocab": "".join(f"{p.piece}\t{p.score:g}\n" for p in proto.pieces).encode("utf-8"),
        "vocab.txt": "".join(f"{_vocab_txt_line(piece)}\n" for piece in text_pieces).encode("utf-8"),
    }
    for name, data in contents.items():
        handle, tmp = tempfile.mkstemp(dir=directory, prefix=f".{name}.")
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.replace(tmp, directory / name)
    return directory


def extend_tokenizer(
    stock_model: str | Path, directory: str | Path, marks: str = DEFAULT_MARKS, source: str | Path | None = None
) -> ExtendedTokenizer:
    """Writes the stock tokenizer, extended with the pieces it needs to write case and ``marks``, to ``directory``.

    Args:
        stock_model: the stock ``tokenizer.model``.
        directory: the folder to write.
        marks: the mark set the P&C model writes.
        source: a tokenizer folder (or ``tokenizer.model``) whose pieces with capitals or marks are appended; None
            appends the capitalized twins of the stock pieces and the marks.

    Raises:
        ValueError: the stock model is not a BPE model (appended pieces would change a unigram model's
            segmentation of lower-case text), or ``source`` has no ``tokenizer.model``.
    """
    stock = _load_proto(stock_model)
    stock_size = len(stock.pieces)
    pieces = [piece.piece for piece in stock.pieces if _is_text_piece(piece)]
    if writes_case_and_marks(pieces, marks) and source is None and not stock.normalizer_spec.name.endswith("_cf"):
        return ExtendedTokenizer(write_tokenizer_dir(stock, directory), stock_size, [])
    if stock.trainer_spec.model_type != stock.trainer_spec.BPE:
        raise ValueError(
            f"{stock_model}: only a BPE tokenizer can be extended; pass a tokenizer that writes case "
            f"and the marks {marks!r}"
        )
    source_proto = None
    if source is not None:
        source_path = Path(source)
        source_path = source_path / MODEL_FILE if source_path.is_dir() else source_path
        if not source_path.is_file():
            raise ValueError(f"{source}: no {MODEL_FILE} in the tokenizer folder")
        source_proto = _load_proto(source_path)
    _case_keeping_normalizer(stock)
    added = _appended(stock, marks, source_proto)
    for piece, score in added:
        new = stock.pieces.add()
        new.piece, new.score, new.type = piece, score, new.NORMAL
    return ExtendedTokenizer(write_tokenizer_dir(stock, directory), stock_size, [piece for piece, _ in added])


def related_pieces(piece: str, stock_processor, marks: str = DEFAULT_MARKS) -> list[int]:
    """The stock ids an appended piece starts from: its lower-case spelling without marks, as one stock piece if
    there is one, else as the stock tokenizer (``stock_processor``, a ``sentencepiece.SentencePieceProcessor``)
    writes it; empty for a mark alone."""
    start = WORD_START if piece.startswith(WORD_START) else ""
    word = "".join(ch for ch in piece[len(start) :].lower() if ch not in marks)
    if not word:
        return []
    unknown = stock_processor.unk_id()
    whole = stock_processor.piece_to_id(start + word)
    if whole != unknown:
        return [whole]
    ids = stock_processor.encode(word, out_type=int)
    if not start and ids and stock_processor.id_to_piece(ids[0]) == WORD_START:
        ids = ids[1:]
    return [i for i in ids if i != unknown]
