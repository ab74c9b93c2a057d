"""Cache-aware streaming of the P&C transducer (encoder=streaming, variant=conditioned predictor=stateless) on a
tiny untrained model: streaming equals offline in both modes, one encoder step per chunk, and NeMo's own stream step
returns the default mode."""

import pytest
import torch
from omegaconf import open_dict

from nemo_pc.models import EncDecRNNTPCBPEModel
from nemo_pc.parts.manifest import read_manifest
from nemo_pc.parts.streaming import stream_buffer, stream_modes, stream_transcribe, streaming_buffer
from nemo_pc.testing.asr import tiny_streaming_config, train_tokenizer, write_pc_manifest

# Lookaheads of one frame or more. With [70, 0] NeMo's buffer makes the first chunk a single feature frame, so the
# second chunk's subsampling cache is zero-padded where the offline pass has real frames (docs/streaming.md).
CONTEXTS = ([70, 13], [70, 6], [70, 1])


pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    folder = tmp_path_factory.mktemp("streaming")
    manifest = write_pc_manifest(folder, duration=2.0)  # 2 s: 26 encoder frames at 8x, 2 to 13 chunks
    return manifest, train_tokenizer(manifest, folder / "tokenizer")


@pytest.fixture
def model(corpus):
    manifest, tokenizer = corpus
    torch.manual_seed(0)
    return EncDecRNNTPCBPEModel(cfg=tiny_streaming_config(tokenizer, manifest)).eval()


def _audio(corpus) -> list[str]:
    return [entry["audio_filepath"] for entry in read_manifest(corpus[0])]


def _offline(model, audio, mode):
    return [getattr(hyp, "text", hyp) for hyp in model.transcribe(audio, batch_size=4, verbose=False, mode=mode)]


@pytest.mark.parametrize("context", CONTEXTS)
@pytest.mark.parametrize("batch_size", [1, 4])
def test_streaming_equals_offline_in_both_modes(corpus, model, context, batch_size):
    """NeMo's sense of equivalence, which is exact: the offline pass of a chunked_limited encoder attends within
    the same chunks and left context as the stream, and causal convolutions and subsampling see no later frame."""
    model.encoder.set_default_att_context_size(context)
    audio = _audio(corpus)
    streamed = stream_transcribe(model, audio, mode="both", batch_size=batch_size)
    for name in ("normalized", "punctuated"):
        offline = _offline(model, audio, name)
        assert streamed[name] == offline
        assert all(offline)  # an untrained model emits labels; empty texts would make the check vacuous
    assert streamed["normalized"] != streamed["punctuated"]  # each mode's own decoding, not one output twice


@pytest.mark.parametrize("context", [[140, 13], [140, 3]])
def test_the_4x_batch_norm_variant_streams_what_it_decodes_offline(corpus, context):
    """encoder=streaming_4x: batch norm in eval mode applies running statistics, so it is causal too."""
    manifest, tokenizer = corpus
    torch.manual_seed(0)
    model = EncDecRNNTPCBPEModel(cfg=tiny_streaming_config(tokenizer, manifest, encoder="streaming_4x")).eval()
    assert model.encoder.subsampling_factor == 4
    model.encoder.set_default_att_context_size(context)
    audio = _audio(corpus)
    streamed = stream_transcribe(model, audio, mode="both", batch_size=1)
    for name in ("normalized", "punctuated"):
        offline = _offline(model, audio, name)
        assert streamed[name] == offline and all(offline)


def test_the_encoder_runs_once_per_chunk_for_both_modes(corpus, model):
    model.encoder.set_default_att_context_size([70, 1])
    buffer = streaming_buffer(model)
    for path in _audio(corpus)[:2]:
        buffer.append_audio_file(path, stream_id=-1)
    chunks = sum(1 for _ in buffer)
    buffer.reset_buffer_pointer()
    calls = []
    handle = model.encoder.register_forward_hook(lambda *_: calls.append(1))
    try:
        texts = stream_buffer(model, buffer, modes=[0, 1])
    finally:
        handle.remove()
    assert chunks == 13  # 200 feature frames: a first chunk of 9 frames, then 16 per chunk
    assert len(calls) == chunks
    assert set(texts) == {0, 1} and all(len(batch) == 2 for batch in texts.values())


def _nemo_stream(model, audio):
    """The loop of NeMo's speech_to_text_cache_aware_streaming_infer.py (perform_streaming), one stream per file:
    conformer_stream_step over a CacheAwareStreamingAudioBuffer after the script's change_decoding_strategy."""
    decoding = model.cfg.decoding
    with open_dict(decoding):
        decoding.strategy = "greedy_batch"
        decoding.preserve_alignments = False
        decoding.greedy.max_symbols = 10
        decoding.greedy.use_cuda_graph_decoder = False
        decoding.fused_batch_size = -1
    model.change_decoding_strategy(decoding, verbose=False)
    buffer = streaming_buffer(model)
    texts = []
    for path in audio:
        buffer.reset_buffer()
        buffer.append_audio_file(path, stream_id=-1)
        channel, time, channel_len = model.encoder.get_initial_cache_state(batch_size=1)
        hyps, predictions = None, None
        for step, (chunk, lengths) in enumerate(buffer):
            with torch.inference_mode():
                predictions, hyps, channel, time, channel_len, hyps = model.conformer_stream_step(
                    processed_signal=chunk,
                    processed_signal_length=lengths,
                    cache_last_channel=channel,
                    cache_last_time=time,
                    cache_last_channel_len=channel_len,
                    keep_all_outputs=buffer.is_buffer_empty(),
                    previous_hypotheses=hyps,
                    previous_pred_out=predictions,
                    drop_extra_pre_encoded=0 if step == 0 else model.encoder.streaming_cfg.drop_extra_pre_encoded,
                    return_transcription=True,
                )
        texts.append(hyps[0].text)
    return texts


@pytest.mark.parametrize("default_mode", ["punctuated", "normalized"])
def test_nemo_stream_step_returns_the_default_mode(corpus, model, default_mode):
    with open_dict(model.cfg):
        model.cfg.pc.default_mode = default_mode
    model.encoder.set_default_att_context_size([70, 1])
    audio = _audio(corpus)
    texts = _nemo_stream(model, audio)
    assert texts == stream_transcribe(model, audio, mode=default_mode)
    assert texts == _offline(model, audio, default_mode)
    assert stream_transcribe(model, audio) == texts  # no mode: the default one


def test_stream_modes_reads_names_lists_and_the_default(model):
    assert stream_modes(model, "both") == [0, 1]
    assert stream_modes(model, ["punctuated", "normalized"]) == [1, 0]
    assert stream_modes(model, None) == [1]
    with pytest.raises(ValueError, match="mode must be one of"):
        stream_modes(model, "shouting")


def test_transcribe_leaves_every_module_in_eval_mode(corpus, model):
    """NeMo's RNN-T transcribe ends with encoder.unfreeze(), which calls train(): a multi-lookahead encoder left in
    training mode draws a random att_context_size per call, and a stream after a transcribe would differ."""
    model.transcribe(_audio(corpus)[:1], verbose=False)
    assert not [name for name, module in model.named_modules() if module.training]
