"""The prompt of the P&C attention encoder-decoder: ``<|startoftranscript|> <|mode|>``, then the text and EOS.

:class:`PCModePromptFormatter` is a NeMo prompt formatter (``prompt_format: nemo_pc_mode`` in a model config) for a
tokenizer with ``mode_token_id`` (:class:`~nemo_pc.data.tokenizers.whisper_bpe.WhisperPCTokenizer`). The user turn
names the output mode in its ``mode`` slot: a mode name, its initial, its id (``"0"``/``"1"``) or its control token.
Canary's ``pnc`` slot is an alias (``pnc: yes`` asks for punctuated text, ``pnc: no`` for normalized text) used when
``mode`` is absent, as in manifests and ``transcribe(..., pnc=...)`` calls written for Canary. A turn that names no
mode asks for :data:`DEFAULT_MODE`: NeMo's ``transcribe`` builds its cuts and default prompts without one.

Importing this module registers the formatter under ``nemo_pc_mode`` (``PromptFormatter.resolve``) and its lhotse
prompt-format function, which NeMo's ``PromptedAudioToTextLhotseDataset`` applies to every cut.
"""

from __future__ import annotations

from typing import Any

import torch
from lhotse.cut import Cut, MixedCut
from nemo.collections.common.data.prompt_fn import registered_prompt_format_fn
from nemo.collections.common.prompts.canary import PNC_FALSE, PNC_TRUE
from nemo.collections.common.prompts.formatter import Modality, PromptFormatter

from nemo_pc.data.tokenizers.whisper_bpe import BOS_TOKEN, EOS_TOKEN, MODE_TOKENS
from nemo_pc.parts.modes import MODES, NORMALIZED, PUNCTUATED

DEFAULT_MODE = PUNCTUATED
"""The mode of a turn that names none (neither ``mode`` nor ``pnc``)."""
MODE_VALUES: dict[str, str] = {
    **{spelling: mode for mode in MODES for spelling in (mode, mode[0].upper(), mode[0])},
    **{str(index): mode for index, mode in enumerate(MODES)},
    **{token: mode for mode, token in MODE_TOKENS.items()},
}
"""Every accepted ``mode`` slot value and the mode it names."""


def _slot_error(slot: str, value: Any, allowed: Any) -> ValueError:
    return ValueError(f"prompt slot {slot!r} must be one of {sorted(allowed)}, got {value!r}")


def slot_mode(slots: dict[str, Any]) -> str:
    """The mode a user turn's slots ask for: ``mode``, else Canary's ``pnc``, else :data:`DEFAULT_MODE`.

    Raises:
        ValueError: a ``mode`` or ``pnc`` value that is not accepted; the message names the slot and the value.
    """
    mode = slots.get("mode")
    if mode is not None:
        key = str(mode).strip()
        if key not in MODE_VALUES and key.lower() not in MODE_VALUES:
            raise _slot_error("mode", mode, MODE_VALUES)
        return MODE_VALUES.get(key) or MODE_VALUES[key.lower()]
    pnc = slots.get("pnc")
    if pnc is None:
        return DEFAULT_MODE
    if str(pnc).strip() in PNC_TRUE:
        return PUNCTUATED
    if str(pnc).strip() in PNC_FALSE:
        return NORMALIZED
    raise _slot_error("pnc", pnc, PNC_TRUE | PNC_FALSE)


class PCModePromptFormatter(PromptFormatter):
    """``<|startoftranscript|> <|mode|>`` for the user turn, ``text <|endoftext|>`` for the assistant turn.

    The turns are encoded from the tokenizer's ids (``bos``, ``mode_token_id``, ``text_to_ids``, ``eos``), never by
    running the template strings through the BPE; the templates only document the layout.
    """

    NAME = "nemo_pc_mode"
    OUTPUT_ROLE = "assistant"
    TEMPLATE = {
        "user": {
            "template": f"{BOS_TOKEN}|mode|",
            "slots": {"mode": Modality.TextLiteral(*MODE_VALUES)},
        },
        OUTPUT_ROLE: {
            "template": f"|text|{EOS_TOKEN}",
            "slots": {"text": Modality.Text},
        },
    }

    def _validate_slot_values(self, expected: dict[str, Modality], received: dict[str, Any]) -> None:
        """Checks a turn's slots, raising ``ValueError`` (naming the slot and the value) instead of asserting."""
        if "mode" in expected:
            slot_mode(received)
        elif not isinstance(received.get("text"), str):
            raise ValueError(f"prompt slot 'text' must be a string, got {received.get('text')!r}")

    def encode_turn(self, prompt_template: str, expected_slots: dict[str, Modality], slot_values: dict) -> list[int]:
        """``[bos, mode token]`` for the user turn; the text's ids and ``eos`` for the assistant turn."""
        if "mode" in expected_slots:
            return [self.tokenizer.bos, self.tokenizer.mode_token_id(slot_mode(slot_values))]
        return [*self.tokenizer.text_to_ids(slot_values.get("text") or ""), self.tokenizer.eos]


@registered_prompt_format_fn(Cut, PCModePromptFormatter)
def pc_mode(cut: Cut, prompt: PCModePromptFormatter) -> dict[str, torch.Tensor]:
    """Encodes a cut for NeMo's ``PromptedAudioToTextLhotseDataset``, as Canary's prompt function does.

    The mode comes from ``cut.custom["mode"]`` (or Canary's ``pnc``; :data:`DEFAULT_MODE` when neither is there),
    the text from the cut's supervisions (empty for transcription).

    Returns:
        ``input_ids`` (``bos mode text eos``), ``context_ids`` (``bos mode``), ``answer_ids`` (the text, EOS
        stripped as Canary strips it) and ``mask``.
    """
    if isinstance(cut, MixedCut):
        cut = cut._first_non_padding_cut
    custom = cut.custom or {}
    slots = {"mode": custom.get("mode"), **({"pnc": custom["pnc"]} if "pnc" in custom else {})}
    text = " ".join(s.text for s in cut.supervisions if s.text is not None)
    ans = prompt.encode_dialog([{"role": "user", "slots": slots}, {"role": "assistant", "slots": {"text": text}}])
    ans["answer_ids"] = ans["answer_ids"][:-1]
    return ans
