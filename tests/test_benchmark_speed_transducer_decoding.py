"""benchmarks/speed_transducer_decoding.py: its per-utterance rounds step the decoder one row at a time, to the same
outputs, and only inside the block; a missing model is a clear error."""

import pytest
import torch
from benchmark_loader import load_benchmark

from nemo_pc.modules.decoder_cache import DecoderCache
from nemo_pc.testing.whisper import tiny_whisper_decoder


def _steps(decoder, states, mask):
    cache = DecoderCache(decoder, [1, 2], states, mask)
    first = cache.step(torch.tensor([0, 1, 2]), torch.tensor([3, 4, 5]))
    second = cache.step(torch.tensor([0, 2]), torch.tensor([6, 7]))
    return first, second, cache.lengths.tolist()


def test_per_utterance_rounds_step_one_row_at_a_time_to_the_same_outputs():
    torch.manual_seed(0)
    decoder, _ = tiny_whisper_decoder()
    decoder.eval()
    states, mask = torch.randn(3, 5, 16), torch.ones(3, 5)
    mask[1, 3:] = 0
    bench = load_benchmark("speed_transducer_decoding")
    batched = DecoderCache.step
    with bench.per_utterance_steps():
        assert DecoderCache.step is not batched
        alone = _steps(decoder, states, mask)
    assert DecoderCache.step is batched
    together = _steps(decoder, states, mask)
    for a, b in zip(alone[:2], together[:2], strict=True):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)
    assert alone[2] == together[2] == [4, 3, 4]


def test_a_missing_model_is_a_clear_error(tmp_path, capsys):
    bench = load_benchmark("speed_transducer_decoding")
    with pytest.raises(SystemExit) as stop:
        bench.main(["--model", str(tmp_path / "none.nemo"), "--manifest", str(tmp_path / "m.json")])
    assert stop.value.code == 2 and "none.nemo: no such file" in capsys.readouterr().err


def test_projecting_each_step_runs_the_key_projection_itself_to_the_same_outputs():
    torch.manual_seed(0)
    decoder, _ = tiny_whisper_decoder()
    decoder.eval()
    states, mask = torch.randn(3, 5, 16), torch.ones(3, 5)
    key_net = decoder._decoder.layers[0].second_sub_layer.key_net
    patched = []
    key_net.register_forward_hook(lambda module, inputs, output: patched.append("forward" in module.__dict__))
    bench = load_benchmark("speed_transducer_decoding")
    cached = _steps(decoder, states, mask)
    # the prompt's pass and the cache's projection of the states, then two steps that read the projected keys
    assert patched == [False, False, True, True]
    patched.clear()
    with bench.per_utterance_steps(), bench.projecting_each_step():
        projecting = _steps(decoder, states, mask)
    assert len(patched) == 2 + 5 and not any(patched)  # then the module's own projection per step and row
    for a, b in zip(cached[:2], projecting[:2], strict=True):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)
    from nemo_pc.modules import decoder_cache

    assert decoder_cache._projected.__name__ == "_projected"
