import functools
import random

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from nemo_pc.parts.ngram_lm import estimate, write_arpa
from nemo_pc.parts.ngram_lm_subset import SubsetNgramLM, arc_index

VOCAB = 40


@functools.cache
def language_model():
    """An order-4 NGPU-LM over 40 tokens, from text where a few patterns repeat (long contexts) among noise."""
    import tempfile

    from nemo.collections.asr.parts.submodules.ngram_lm import NGramGPULanguageModel

    draw = random.Random(3)
    patterns = [[draw.randrange(VOCAB) for _ in range(6)] for _ in range(5)]
    sentences = [
        [token for _ in range(draw.randrange(1, 4)) for token in draw.choice([*patterns, [draw.randrange(VOCAB)]])]
        for _ in range(300)
    ]
    with tempfile.NamedTemporaryFile("w", suffix=".arpa", delete=False) as handle:
        write_arpa(estimate(sentences, vocab_size=VOCAB, order=4), handle)
    return NGramGPULanguageModel.from_file(lm_path=handle.name, vocab_size=VOCAB), patterns


@settings(max_examples=40, deadline=None)
@given(
    tokens=st.lists(st.integers(0, VOCAB - 1), min_size=1, max_size=12, unique=True),
    walk=st.lists(st.integers(0, VOCAB - 1), min_size=0, max_size=8),
    use_pattern=st.booleans(),
)
def test_scores_and_next_states_are_the_lms_own_for_the_chosen_tokens(tokens, walk, use_pattern):
    """From states reached by a random walk (or through a pattern the LM has seen, so the chain starts deep), each
    step's scores and next states equal the NGPU-LM's full-vocabulary ``advance`` read at the chosen tokens."""
    lm, patterns = language_model()
    subset = SubsetNgramLM(lm, torch.tensor(sorted(tokens)))
    path = [*patterns[0], *walk] if use_pattern else walk
    states = lm.get_init_states(batch_size=2, bos=True)
    with torch.no_grad():
        for token in [*path, None]:
            full_scores, full_states = lm.advance(states)
            scores, next_states = subset.advance(states)
            assert torch.allclose(scores, full_scores[:, subset.tokens], atol=1e-6)
            assert torch.equal(next_states, full_states[:, subset.tokens])
            if token is not None:
                states = full_states[:, token]
        assert torch.equal(subset.get_final(states), lm.get_final(states))


def test_the_arc_index_is_built_once_per_lm_and_bad_tokens_are_refused():
    lm, _ = language_model()
    assert arc_index(lm) is arc_index(lm)
    assert SubsetNgramLM(lm, torch.tensor([1, 2])).vocab_size == 2
    with pytest.raises(ValueError, match="ids below the LM's 40"):
        SubsetNgramLM(lm, torch.tensor([3, VOCAB]))
    with pytest.raises(ValueError, match="get_final's"):
        SubsetNgramLM(lm, torch.tensor([1])).advance(lm.get_init_states(batch_size=1), eos_id=0)
