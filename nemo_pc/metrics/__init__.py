"""Metrics of the five papers: the WER family, PER, PuncER / CaseER / PC-WER, F1 views, truecasing, I-WER /
M-WER, TER and segmentation F1, plus paired significance tests. Importing this package does not import NeMo ASR.
"""

from nemo_pc.metrics.accumulator import Metric, PCMetrics, Totals, build_metrics, utterance_counts
from nemo_pc.metrics.casing import case_f1_counts, cer_counts, mwer_counts
from nemo_pc.metrics.itn import ITN_KINDS, itn_kind, itn_outcomes, itn_positions, iwer_counts
from nemo_pc.metrics.punctuation import mark_f1_counts, per_counts, segmentation_counts, wer0_counts
from nemo_pc.metrics.wer import ter_counts, text_variants, wer_counts

__all__ = [
    "ITN_KINDS",
    "Metric",
    "PCMetrics",
    "Totals",
    "build_metrics",
    "case_f1_counts",
    "cer_counts",
    "itn_kind",
    "itn_outcomes",
    "itn_positions",
    "iwer_counts",
    "mark_f1_counts",
    "mwer_counts",
    "per_counts",
    "segmentation_counts",
    "ter_counts",
    "text_variants",
    "utterance_counts",
    "wer0_counts",
    "wer_counts",
]
