"""Scoring NeMo prediction manifests: ``evaluate_manifest`` (one system) and ``evaluate`` (with ``compare``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from tqdm import tqdm

from nemo_pc.metrics.accumulator import PCMetrics
from nemo_pc.parts.manifest import DropCounter, ManifestError, iter_manifest, require_text
from nemo_pc.parts.text import DEFAULT_MARKS, SEGMENT_MARKS, parse_marks


@dataclass
class EvalConfig:
    """What to read from the manifest and how to score it.

    Attributes:
        pred_field: hypothesis field (NeMo's ``transcribe_speech.py`` writes ``pred_text``).
        ref_field: punctuated, cased reference field.
        spoken_field: spoken form of the reference, for I-WER (``text_normalized`` in LibriSpeech-PC manifests);
            an empty string disables I-WER.
        key_field: field that identifies an utterance when two manifests are compared; ``audio_filepath`` and
            then the line number are used when it is absent.
        marks: the mark set (:func:`nemo_pc.parts.text.parse_marks`); each mark gets its own row in the per-mark
            tables, and a mark outside the set is not scored.
        segment_marks: marks mapped to one segmentation mark.
        on_bad: ``"error"`` stops at the first bad line; ``"skip"`` drops it and counts it by reason.
        progress: show a progress bar.
    """

    pred_field: str = "pred_text"
    ref_field: str = "text"
    spoken_field: str = "text_normalized"
    key_field: str = "utt_id"
    marks: str = DEFAULT_MARKS
    segment_marks: str = SEGMENT_MARKS
    on_bad: str = "error"
    progress: bool = True


@dataclass
class Evaluation:
    """Scored utterances of one manifest and the lines that were dropped."""

    path: Path
    metrics: PCMetrics
    dropped: DropCounter = field(default_factory=DropCounter)


class NothingScoredError(ValueError):
    """A manifest in which no utterance could be scored (empty, or every line dropped)."""


def _key(entry: dict, config: EvalConfig, line: int) -> str:
    value = entry.get(config.key_field)
    if value not in (None, ""):
        return str(value)
    value = entry.get("audio_filepath")
    if value not in (None, ""):
        # a segmented manifest holds several utterances of one file, told apart by their offsets
        offset = entry.get("offset")
        return f"{value}@{offset}" if offset not in (None, 0, 0.0, "") else str(value)
    return f"line:{line}"


def _count_lines(path: Path) -> int:
    with path.open("rb") as handle:
        return sum(1 for _ in handle)


def evaluate_manifest(path: str | Path, config: EvalConfig | None = None) -> Evaluation:
    """Scores every line of a prediction manifest.

    Raises:
        FileNotFoundError: no such manifest.
        ValueError: a bad ``marks`` or ``segment_marks`` (naming it and the bad character).
        ManifestError: with ``on_bad="error"``, the first bad line (bad JSON, not UTF-8, a missing or non-string
            field, an empty reference or spoken form, a duplicate utterance key), naming the file and line.
        NothingScoredError: no utterance was scored (an empty manifest, or every line dropped).
    """
    config = config or EvalConfig()
    if config.on_bad not in ("error", "skip"):
        raise ValueError(f"on_bad must be 'error' or 'skip', got {config.on_bad!r}")
    marks, segment_marks = parse_marks(config.marks, "marks"), parse_marks(config.segment_marks, "segment_marks")
    path = Path(path)
    result = Evaluation(path, PCMetrics(marks, segment_marks))
    seen: dict[str, int] = {}

    def drop(err: ManifestError) -> None:
        if config.on_bad == "error":
            raise err
        result.dropped.add(err.kind, f"{path}:{err.line}")

    lines = iter_manifest(path, on_error=drop)
    if config.progress:
        lines = tqdm(lines, total=_count_lines(path), desc=f"scoring {path.name}", unit="utt", leave=False)
    for line, entry in lines:
        try:
            ref = require_text(entry, config.ref_field, path, line, allow_empty=False)
            hyp = require_text(entry, config.pred_field, path, line)
            spoken = None
            if config.spoken_field and config.spoken_field in entry:
                # an empty spoken form would count every written ITN word as an error
                spoken = require_text(entry, config.spoken_field, path, line, allow_empty=False)
            key = _key(entry, config, line)
            if key in seen:
                raise ManifestError(
                    path, line, f"duplicate utterance {key!r} (first on line {seen[key]})", "duplicate"
                )
        except ManifestError as err:
            drop(err)
            continue
        seen[key] = line
        result.metrics.update(ref, hyp, spoken, utt_id=key)
    if not result.metrics.ids:
        reasons = ", ".join(f"{n} {kind}" for kind, n in result.dropped.counts.items())
        why = f"every line was dropped ({reasons})" if reasons else "the manifest has no utterances"
        raise NothingScoredError(f"{path}: no utterance scored: {why}")
    return result


def _reorder(other: Evaluation, ids: list[str]) -> PCMetrics:
    position = {key: index for index, key in enumerate(other.metrics.ids)}
    missing = [key for key in ids if key not in position]
    extra = len(position) - (len(ids) - len(missing))
    if missing or extra:
        raise ValueError(
            f"{other.path} does not hold the same utterances: {len(missing)} missing (e.g. {missing[:3]}), "
            f"{extra} extra; utterances are matched by utt_id, else audio_filepath"
        )
    return other.metrics.select(ids)


def evaluate(
    path: str | Path,
    config: EvalConfig | None = None,
    compare: str | Path | None = None,
    num_resamples: int = 1000,
    seed: int = 0,
) -> dict:
    """The full report of a manifest, optionally compared with a second system's manifest on the same utterances.

    Returns:
        The :meth:`PCMetrics.compute` report plus ``manifest``, ``fields``, ``dropped`` and, with ``compare``,
        ``compare`` (both systems' values, delta, 95% CI, bootstrap p and MAPSSWE p for each metric).
    """
    from nemo_pc.metrics.significance import compare_systems, wer0_intersection

    config = config or EvalConfig()
    main = evaluate_manifest(path, config)
    report = main.metrics.compute()
    report["manifest"] = str(path)
    report["fields"] = {"pred": config.pred_field, "ref": config.ref_field, "spoken": config.spoken_field}
    report["dropped"] = main.dropped.as_dict()
    if compare is not None:
        other = evaluate_manifest(compare, config)
        ordered = _reorder(other, main.metrics.ids)
        report["compare"] = {
            "manifest": str(compare),
            "dropped": other.dropped.as_dict(),
            "num_resamples": num_resamples,
            "seed": seed,
            "metrics": compare_systems(main.metrics, ordered, num_resamples, seed),
            "wer0_intersection": wer0_intersection(main.metrics, ordered),
        }
    return report
