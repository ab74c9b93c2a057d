"""The rewriter's tokenizer: byte-level BPE trained offline on the rewriter's own data.

No pretrained BART (and so no BART vocabulary) installs offline, so the rewriter trains its tokenizer with HF
``tokenizers``. Byte-level BPE never meets an unknown character, so any input can be encoded; the span markers
of :func:`nemo_pc.formatter.labels.span_input` are special tokens, and every sequence is ``<s> ... </s>``.

Digits are split one to a token before BPE sees them (``individual_digits``), as number-handling language models
do. With multi-digit tokens ("202", "4"), writing 224 after "two hundred twenty four" means picking among unrelated
vocabulary entries; with single digits the rewriter only has to emit each digit in turn.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from nemo_pc.parts.formatter_labels import SPAN_CLOSE, SPAN_OPEN

SPECIAL_TOKENS = ("<pad>", "<s>", "</s>", "<unk>", SPAN_OPEN, SPAN_CLOSE)


def train_rewriter_tokenizer(
    texts: Iterable[str], path: str | Path, vocab_size: int = 1000, individual_digits: bool = True
) -> Path:
    """Trains byte-level BPE on ``texts`` (inputs and targets) and writes it to ``path`` (``tokenizer.json``);
    ``individual_digits`` keeps every digit a token of its own."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tokenizer = Tokenizer(models.BPE())
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False)
    if individual_digits:
        byte_level = pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True), byte_level])
    tokenizer.pre_tokenizer = byte_level
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(texts, trainer)
    bos, eos = tokenizer.token_to_id("<s>"), tokenizer.token_to_id("</s>")
    tokenizer.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>", special_tokens=[("<s>", bos), ("</s>", eos)]
    )
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tokenizer.save(str(path))
    return path


def load_rewriter_tokenizer(path: str | Path):
    """The tokenizer written by :func:`train_rewriter_tokenizer`, as a ``transformers`` fast tokenizer."""
    from transformers import PreTrainedTokenizerFast

    return PreTrainedTokenizerFast(
        tokenizer_file=str(path), bos_token="<s>", eos_token="</s>", pad_token="<pad>", unk_token="<unk>"
    )
