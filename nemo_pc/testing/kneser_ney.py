"""A plain-dict interpolated modified Kneser-Ney estimator, the test oracle of ``nemo_pc.parts.ngram_lm.estimate``.

One n-gram at a time, with tuples and Counters, as the formulas of that module's docstring read; slow, so only for
the tiny corpora of the tests. Returns ``{ngram: (log10 p, log10 back-off or None)}`` with ``-1``/``-2`` for
``<s>``/``</s>``.
"""

from __future__ import annotations

import math
from collections import Counter

BOS, EOS = -1, -2
FALLBACK = (0.5, 1.0, 1.5)


def _discounts(adjusted: Counter) -> tuple[float, float, float]:
    t = Counter(count for gram, count in adjusted.items() if gram != (BOS,) and 0 < count <= 4)
    if any(t[k] == 0 for k in (1, 2, 3, 4)):
        return FALLBACK
    y = t[1] / (t[1] + 2 * t[2])
    d = tuple(k - (k + 1) * y * t[k + 1] / t[k] for k in (1, 2, 3))
    return d if all(0.0 < x <= k for k, x in zip((1, 2, 3), d, strict=True)) else FALLBACK


def reference_model(sentences, vocab_size: int, order: int) -> tuple[dict, list]:
    raw = [Counter() for _ in range(order)]
    for sentence in sentences:
        tokens = (BOS, *sentence, EOS)
        for n in range(1, order + 1):
            for start in range(len(tokens) - n + 1):
                raw[n - 1][tokens[start : start + n]] += 1
    adjusted = [Counter() for _ in raw]
    adjusted[-1] = Counter(raw[-1])
    for n in range(order - 1):
        for gram in raw[n + 1]:
            adjusted[n][gram[1:]] += 1
        for gram, count in raw[n].items():
            if gram[0] == BOS:
                adjusted[n][gram] = count
    for token in range(vocab_size):
        adjusted[0].setdefault((token,), 0)
    probs, gammas, discounts = [], [], []
    for n, level in enumerate(adjusted):
        d = _discounts(level)
        discounts.append(d)
        totals = {}
        for gram, count in level.items():
            if gram != (BOS,) and count:
                total = totals.setdefault(gram[:-1], [0.0, 0.0])
                total[0] += count
                total[1] += d[min(count, 3) - 1]
        gammas.append({context: removed / total for context, (total, removed) in totals.items()})
        level_probs = {}
        for gram, count in level.items():
            if gram == (BOS,):
                continue
            total = totals[gram[:-1]][0]
            kept = count - d[min(count, 3) - 1] if count else 0.0
            lower = probs[n - 1][gram[1:]] if n else 1.0 / (vocab_size + 1)
            level_probs[gram] = kept / total + gammas[n][gram[:-1]] * lower
        probs.append(level_probs)
    table = {}
    for n in range(order):
        contexts = gammas[n + 1] if n + 1 < order else {}
        for gram, prob in probs[n].items():
            gamma = contexts.get(gram)
            table[gram] = (math.log10(prob), math.log10(gamma) if gamma else None)
    gamma = gammas[1].get((BOS,)) if order > 1 else None
    table[(BOS,)] = (-99.0, math.log10(gamma) if gamma else None)
    return table, discounts
