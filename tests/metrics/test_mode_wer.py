"""MultiModeWER accumulates like a torchmetrics metric: compute and per_mode return everything since the last reset."""

import torch
from nemo.collections.asr.parts.submodules.ctc_decoding import CTCDecoding

from nemo_pc.metrics.mode_wer import MultiModeWER, text_errors

VOCABULARY = ["a", "b", "c", " "]


def _metric() -> MultiModeWER:
    decoding = {"strategy": "greedy"}
    decodings = {mode: CTCDecoding(decoding, vocabulary=VOCABULARY) for mode in (0, 1)}
    return MultiModeWER(decodings, log_prediction=False)


def _rows(hypotheses: list[str], references: list[str], modes: list[int]) -> dict:
    """CTC log-probabilities that greedy-decode to ``hypotheses`` (a blank between repeats) and the references'
    token ids, one row per text."""
    width = 2 * max(len(text) for text in hypotheses) + 1
    blank = len(VOCABULARY)
    predictions = torch.full((len(hypotheses), width, blank + 1), -10.0)
    predictions[:, :, blank] = 0.0
    for row, text in enumerate(hypotheses):
        for k, char in enumerate(text):
            predictions[row, 2 * k, blank] = -10.0
            predictions[row, 2 * k, VOCABULARY.index(char)] = 0.0
    targets = torch.zeros(len(references), max(len(text) for text in references), dtype=torch.long)
    for row, text in enumerate(references):
        targets[row, : len(text)] = torch.tensor([VOCABULARY.index(char) for char in text])
    return {
        "predictions": predictions,
        "predictions_lengths": torch.full((len(hypotheses),), width),
        "targets": targets,
        "targets_lengths": torch.tensor([len(text) for text in references]),
        "modes": torch.tensor(modes),
    }


FIRST = _rows(["ab c", "a b"], ["ab c", "a c"], [0, 1])  # mode 0: 0 of 2 words wrong; mode 1: 1 of 2
SECOND = _rows(["c", "b a c"], ["a b", "b a c"], [0, 0])  # mode 0: 2 of 2 + 0 of 3


def test_compute_returns_the_sum_of_every_update_since_reset():
    separate = []
    for rows in (FIRST, SECOND):
        metric = _metric()
        metric.update(**rows)
        separate.append((metric.compute(), metric.per_mode()))
    metric = _metric()
    metric.update(**FIRST)
    metric.update(**SECOND)
    _, scores, words = metric.compute()
    assert float(scores) == sum(float(result[1]) for result, _ in separate) == 3.0
    assert float(words) == sum(float(result[2]) for result, _ in separate) == 9.0
    per_mode = {mode: (float(e), float(w)) for mode, (e, w) in metric.per_mode().items()}
    assert per_mode == {0: (2.0, 7.0), 1: (1.0, 2.0)}
    metric.reset()
    assert [float(value) for value in metric.compute()[1:]] == [0.0, 0.0]
    assert {mode: (float(e), float(w)) for mode, (e, w) in metric.per_mode().items()} == {0: (0, 0), 1: (0, 0)}


def test_inactive_rows_are_not_scored():
    metric = _metric()
    metric.update(**FIRST, active=torch.tensor([True, False]))
    assert [float(value) for value in metric.compute()[1:]] == [0.0, 2.0]


def test_text_errors_counts_words_or_characters():
    assert text_errors(["a b c", "x"], ["a c", "x y"]) == (2, 4)
    assert text_errors(["ab"], ["abc"], use_cer=True) == (1, 3)
