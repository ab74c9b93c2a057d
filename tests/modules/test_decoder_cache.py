"""The decoder cache of the batched greedy transducer decoding: each utterance's prefix at its own length, the
utterances that write a token stepping together, every output equal to the whole prefix through the decoder."""

import pytest
import torch

from nemo_pc.modules.decoder_cache import DecoderCache
from nemo_pc.modules.whisper_decoder import WhisperTransformerDecoderNM


def _whole_prefix(decoder, prefix, states, length):
    ids = torch.tensor([prefix])
    out = decoder(
        input_ids=ids,
        decoder_mask=torch.ones(1, len(prefix)),
        encoder_embeddings=states[None, :length],
        encoder_mask=torch.ones(1, length),
    )
    return out[0, -1]


@pytest.mark.parametrize("pre_ln", [True, False])
def test_steps_on_subsets_of_rows_equal_each_whole_prefix(pre_ln):
    torch.manual_seed(0)
    decoder = WhisperTransformerDecoderNM(
        vocab_size=20,
        hidden_size=16,
        num_layers=2,
        inner_size=32,
        num_attention_heads=2,
        max_sequence_length=32,
        pre_ln=pre_ln,
    ).eval()
    states, lengths = torch.randn(3, 7, 16), [7, 3, 5]
    mask = torch.zeros(3, 7)
    for row, length in enumerate(lengths):
        mask[row, :length] = 1
    prompt = [1, 2]
    cache = DecoderCache(decoder, prompt, states, mask)
    prefixes = [list(prompt) for _ in range(3)]
    for row in range(3):
        torch.testing.assert_close(cache.output[row], _whole_prefix(decoder, prompt, states[row], lengths[row]))
    # rows write at different steps, so their prefixes (and the cache's padding) differ in length; the buffer grows
    schedule = [[0, 1, 2], [0], [0, 2], [1], [0, 1, 2], [0], [0], [2]]
    for step, rows in enumerate(schedule):
        tokens = [(3 + 5 * step + row) % 20 for row in rows]
        out = cache.step(torch.tensor(rows), torch.tensor(tokens))
        for k, (row, token) in enumerate(zip(rows, tokens, strict=True)):
            prefixes[row].append(token)
            expected = _whole_prefix(decoder, prefixes[row], states[row], lengths[row])
            torch.testing.assert_close(out[k], expected, atol=1e-5, rtol=1e-5)
            torch.testing.assert_close(cache.output[row], expected, atol=1e-5, rtol=1e-5)
    assert cache.lengths.tolist() == [len(prefix) for prefix in prefixes] == [8, 5, 6]
    assert cache.buffer.shape[2] >= 8 and cache.buffer.shape[1] == 2  # one buffer per block
    for layer in decoder._decoder.layers:  # the cross-attention's projections are the class's again after a step
        attention = layer.second_sub_layer
        assert "forward" not in vars(attention.key_net) and "forward" not in vars(attention.value_net)
