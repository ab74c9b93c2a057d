"""An estimated n-gram model (:class:`~nemo_pc.parts.ngram_lm.NGramModel`) as NeMo's NGPU-LM, without ARPA text.

``NGramGPULanguageModel.from_arpa`` parses an ARPA file line by line into a suffix tree (NeMo's
``SuffixTreeStorage``): a state per n-gram that is not the highest order, an arc per n-gram, each state's back-off
state and weight. For the demo's 6-gram LMs (4 to 7 million n-grams) writing the ARPA text and reading it back
takes about a minute per LM. :func:`suffix_tree` fills the same arrays from the model's levels at once, state for
state and arc for arc as ``from_arpa`` numbers them, with every weight rounded to the 7 decimals that
:func:`~nemo_pc.parts.ngram_lm.write_arpa` writes: the checkpoint equals the one the ARPA route gives
(``tests/parts/test_ngram_lm.py`` compares them tensor for tensor).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # ngram_lm imports this module to write a .nemo
    from nemo_pc.parts.ngram_lm import NGramModel

EOS_ID = -2  # the id of </s> in an NGramLevel's ``last`` (nemo_pc.parts.ngram_lm.EOS_ID; NeMo's _EOS_ID too)
LOG10_E = np.log10(np.e)  # NeMo's ARPA reader turns log10 into natural logs by this division


def arpa_natural_log(log10_values: np.ndarray) -> np.ndarray:
    """``log10_values`` as NeMo reads them from an ARPA file: printed with 7 decimals, parsed, divided by
    ``log10(e)``, stored as float32 (NaN stays NaN)."""
    printed = np.array([float(f"{value:.7f}") for value in log10_values.tolist()], dtype=np.float64)
    return (printed / LOG10_E).astype(np.float32)


def suffix_tree(model: NGramModel):
    """NeMo's ``SuffixTreeStorage`` of ``model``, as ``NGramGPULanguageModel.from_arpa`` builds it from the
    model's ARPA file: state 0 is the start (unigram context), state 1 follows ``<s>``, state ``2 + t`` follows
    piece ``t``; the n-grams of orders 2 .. ``order - 1`` that do not end in ``</s>`` get the next states in their
    ARPA order; an n-gram ending in ``</s>`` is its context's final weight; the highest order's arcs go to their
    suffix's state and are sorted by source state and label."""
    from nemo.collections.asr.parts.submodules.ngram_lm.ngram_lm_batched import SuffixTreeStorage
    from nemo.collections.common.parts import NEG_INF

    vocab, order = model.vocab_size, model.order
    weights = [arpa_natural_log(level.log10_prob) for level in model.levels]
    backoffs = [np.nan_to_num(arpa_natural_log(level.log10_backoff), nan=0.0) for level in model.levels]
    ending = [level.last == EOS_ID for level in model.levels]
    num_states = 2 + vocab + sum(int((~ends).sum()) for ends in ending[1:-1])
    num_arcs = vocab + sum(int((~ends).sum()) for ends in ending[1:])
    tree = SuffixTreeStorage(
        num_states_max=num_states, num_arcs_max=num_arcs + vocab, vocab_size=vocab, max_order=order
    )
    arcs, states = tree.arcs, tree.states
    pieces = np.arange(vocab)
    arcs["from"][:vocab], arcs["to"][:vocab], arcs["ilabel"][:vocab] = 0, 2 + pieces, pieces
    arcs["weight"][:vocab] = weights[0][2:]
    states[0] = (0, vocab, 1, 0, 0.0, weights[0][0])  # the start state; its final weight is p(</s>)
    states[1] = (0, 0, 2, 0, backoffs[0][1], NEG_INF)  # after <s>
    states["order"][2 : 2 + vocab] = 2
    states["backoff_w"][2 : 2 + vocab] = backoffs[0][2:]
    state_of = np.concatenate([[-1, 1], 2 + pieces])  # the state each unigram leads to (</s> none)
    tree.num_states, tree.num_arcs = 2 + vocab, vocab
    for n in range(2, order + 1):
        level, keep = model.levels[n - 1], ~ending[n - 1]
        source = state_of[level.prefix]
        states["final"][source[ending[n - 1]]] = weights[n - 1][ending[n - 1]]
        count = int(keep.sum())
        source, label, weight = source[keep], level.last[keep], weights[n - 1][keep]
        if n < order:
            target = tree.num_states + np.arange(count)
            states["order"][target] = n + 1
            states["backoff_to"][target] = state_of[level.suffix[keep]]
            states["backoff_w"][target] = backoffs[n - 1][keep]
            state_of = np.full(len(level), -1)
            state_of[keep] = target
            tree.num_states += count
        else:
            target = state_of[level.suffix[keep]]
            by_source = np.lexsort((label, source))
            source, label, weight, target = source[by_source], label[by_source], weight[by_source], target[by_source]
        arc_ids = tree.num_arcs + np.arange(count)
        arcs["from"][arc_ids], arcs["to"][arc_ids], arcs["ilabel"][arc_ids] = source, target, label
        arcs["weight"][arc_ids] = weight
        firsts = np.flatnonzero(np.r_[True, source[1:] != source[:-1]]) if count else np.zeros(0, dtype=np.int64)
        states["arcs_start"][source[firsts]] = arc_ids[firsts]
        states["arcs_end"][source[firsts]] = np.r_[arc_ids[firsts[1:]], tree.num_arcs + count]
        tree.num_arcs += count
    tree.sanity_check()
    return tree


def write_nemo_lm(model: NGramModel, output: Path) -> Path:
    """Writes the model as an ``NGramGPULanguageModel`` ``.nemo`` checkpoint (atomically): NeMo's decoding loads it
    in a fraction of a second. ``NGramGPULanguageModel.from_file`` reads it, or an ARPA file, from the same decoding
    key (``ngram_lm_model``)."""
    from nemo.collections.asr.parts.submodules.ngram_lm import NGramGPULanguageModel

    output.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=output.parent, prefix=f".{output.name}.") as tmp:
        staged = Path(tmp) / "lm.nemo"
        NGramGPULanguageModel.from_suffix_tree(suffix_tree(model)).save_to(str(staged))
        os.replace(staged, output)
    return output
