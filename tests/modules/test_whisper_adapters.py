"""NeMo adapters on the Whisper encoder and decoder blocks, and the row-offset adapter of the token embedding."""

import pytest
import torch
from nemo.collections.asr.parts.submodules.adapters.multi_head_attention_adapter_module import (
    MultiHeadAttentionAdapterConfig,
)
from nemo.collections.common.parts.adapter_modules import LinearAdapterConfig
from nemo.core.classes.mixins import adapter_mixins
from torch import nn

from nemo_pc.modules import (
    RowOffsetAdapterConfig,
    WhisperEncoder,
    WhisperEncoderAdapter,
    WhisperTransformerDecoderNM,
    WhisperTransformerDecoderNMAdapter,
)

ENCODER = {"feat_in": 16, "d_model": 32, "n_layers": 2, "n_heads": 2, "ff_dim": 64, "n_positions": 100}
DECODER = {
    "vocab_size": 64,
    "hidden_size": 32,
    "num_layers": 2,
    "inner_size": 64,
    "num_attention_heads": 2,
    "max_sequence_length": 32,
}


def _perturb_adapters(module: nn.Module) -> None:
    """Moves every adapter parameter off its start (a zero output layer, zero row offsets)."""
    with torch.no_grad():
        for name, param in module.named_parameters():
            if "adapter_layer" in name:
                param.add_(0.5 * torch.randn_like(param))


def test_the_whisper_modules_are_registered_with_nemos_adapter_registry():
    for base, adapter in (
        (WhisperEncoder, WhisperEncoderAdapter),
        (WhisperTransformerDecoderNM, WhisperTransformerDecoderNMAdapter),
    ):
        for name in (f"nemo_pc.modules.{base.__name__}", base, adapter):
            info = adapter_mixins.get_registered_adapter(name)
            assert info.base_class is base and info.adapter_class is adapter


def _encode(encoder, features, lengths):
    with torch.no_grad():
        out, out_lengths = encoder.eval()(audio_signal=features, length=lengths)
    return out, out_lengths


def test_an_encoder_adapter_starts_as_the_identity_and_keeps_a_padded_batch_exact():
    torch.manual_seed(0)
    encoder = WhisperEncoderAdapter(**ENCODER)
    features, lengths = torch.randn(2, 16, 60), torch.tensor([60, 40])
    plain, _ = _encode(encoder, features, lengths)
    encoder.add_adapter("a", LinearAdapterConfig(in_features=1, dim=8))  # in_features is set to d_model
    assert encoder.get_enabled_adapters() == ["a"]
    assert all(layer.get_adapter_module("a").module[0].normalized_shape == (32,) for layer in encoder.layers)
    assert torch.equal(_encode(encoder, features, lengths)[0], plain)
    _perturb_adapters(encoder)
    adapted, out_lengths = _encode(encoder, features, lengths)
    assert not torch.allclose(adapted, plain)
    alone, _ = _encode(encoder, features[1:, :, :40], lengths[1:])
    torch.testing.assert_close(adapted[1:, :, : out_lengths[1]], alone)
    encoder.set_enabled_adapters(enabled=False)
    assert encoder.get_enabled_adapters() == []
    assert torch.equal(_encode(encoder, features, lengths)[0], plain)


def test_the_encoder_refuses_an_adapter_its_blocks_cannot_run():
    encoder = WhisperEncoderAdapter(**ENCODER)
    with pytest.raises(ValueError, match="not in the list of accepted adapter types"):
        encoder.add_adapter("mha", MultiHeadAttentionAdapterConfig(n_head=2, n_feat=32))


def _adapted_decoder() -> WhisperTransformerDecoderNMAdapter:
    torch.manual_seed(0)
    decoder = WhisperTransformerDecoderNMAdapter(**DECODER).eval()
    decoder.add_adapter("blocks", LinearAdapterConfig(in_features=32, dim=8))
    decoder.add_adapter("rows", RowOffsetAdapterConfig(in_features=32, rows=[5, 6]))
    return decoder


def test_decoder_adapters_apply_alike_in_a_full_pass_and_in_cached_steps():
    """The calls of NeMo's greedy and beam search (embedding, then the blocks with the cached memories of the
    earlier steps) give what one teacher-forced pass gives, with non-zero adapters."""
    decoder = _adapted_decoder()
    ids = torch.tensor([[1, 5, 9, 6, 12, 3], [1, 6, 4, 4, 5, 8]])
    encoder_states, encoder_mask = torch.randn(2, 7, 32), torch.ones(2, 7)
    encoder_mask[1, 5:] = 0
    mask = torch.ones_like(ids, dtype=torch.float)
    with torch.no_grad():
        plain = decoder(input_ids=ids, decoder_mask=mask, encoder_embeddings=encoder_states, encoder_mask=encoder_mask)
        _perturb_adapters(decoder)
        full = decoder(input_ids=ids, decoder_mask=mask, encoder_embeddings=encoder_states, encoder_mask=encoder_mask)
        mems, steps = None, []
        for pos in range(ids.shape[1]):
            embedded = decoder.embedding(ids[:, pos : pos + 1], start_pos=pos)
            mems, _ = decoder.decoder(
                embedded, mask[:, pos : pos + 1], encoder_states, encoder_mask, mems, return_mems=True
            )
            steps.append(mems[-1][:, -1])
    assert not torch.allclose(full, plain)
    torch.testing.assert_close(torch.stack(steps, dim=1), full)


def test_row_offsets_change_only_their_rows_and_keep_a_tied_head_tied():
    torch.manual_seed(0)
    decoder = WhisperTransformerDecoderNMAdapter(**DECODER).eval()
    head = nn.Linear(32, 64)
    head.weight = decoder.embedding.token_embedding.weight
    ids = torch.arange(64)[None, :]
    with torch.no_grad():
        before = decoder.embedding.token_embedding(ids)
        decoder.add_adapter("rows", RowOffsetAdapterConfig(in_features=32, rows=[5, 6]))
        assert torch.equal(decoder.embedding.token_embedding(ids), before)
        _perturb_adapters(decoder)
        after = decoder.embedding.token_embedding(ids)
    assert head.weight is decoder.embedding.token_embedding.weight
    moved = (after != before).any(dim=-1)[0]
    assert moved.nonzero().squeeze(1).tolist() == [5, 6]
    assert decoder.get_enabled_adapters() == ["rows"]
    decoder.set_enabled_adapters("rows", enabled=False)
    with torch.no_grad():
        assert torch.equal(decoder.embedding.token_embedding(ids), before)
