"""Several token n-gram LMs built side by side.

:func:`~nemo_pc.parts.ngram_lm.build_token_lm` counts and estimates on one core (NumPy). The demo's three 6-gram
LMs (128 and 512 pieces) built in 29 s over two processes in the run of ``benchmarks/results/demo_clean_f87e5b1``,
a spawned process spending part of it importing NeMo. :func:`build_lms` runs a list of :class:`LMJob` over
``workers`` processes (this one and ``workers - 1`` spawned ones), the largest vocabulary first, each process taking
the next job when it is done with one. A job writes the same file whichever process runs it.
"""

from __future__ import annotations

import json
import multiprocessing
import threading
from collections import deque
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from nemo_pc.parts.manifest import write_text_atomic


@dataclass(frozen=True)
class LMJob:
    """One LM: ``field_name`` of the manifest ``text`` over the pieces of ``tokenizer`` (a tokenizer folder, its
    ``tokenizer.model`` or a ``.nemo``), written to ``target`` (``.nemo`` or ARPA) with its build report as
    ``target.with_suffix('.json')``."""

    text: Path
    tokenizer: Path
    target: Path
    order: int
    field_name: str

    def run(self) -> Path:
        from nemo_pc.data.tokenizers.token_encoder import load_token_encoder
        from nemo_pc.parts.ngram_lm import build_token_lm

        built = build_token_lm(
            self.text,
            load_token_encoder(self.tokenizer),
            self.target,
            self.order,
            field_name=self.field_name,
            progress=False,
        )
        write_text_atomic(self.target.with_suffix(".json"), json.dumps(built.as_dict(), indent=2) + "\n")
        return self.target

    def vocab_size(self) -> int:
        """The tokenizer's pieces: the larger vocabulary has more n-grams, so its LM takes longer."""
        from nemo_pc.data.tokenizers.token_encoder import load_token_encoder

        return load_token_encoder(self.tokenizer).get_piece_size()


def _run_in_worker(job: LMJob) -> Path:
    import torch

    torch.set_num_threads(1)  # one core per LM: the other processes have theirs
    return job.run()


def build_lms(jobs: Sequence[LMJob], workers: int = 1) -> list[Path]:
    """Builds every job's LM with ``workers`` processes at most; returns the targets in the order of ``jobs``.

    Raises:
        ValueError: ``workers`` below 1, or two jobs with one target.
        Whatever a job raises (:func:`~nemo_pc.parts.ngram_lm.build_token_lm`'s errors name the file and line).
    """
    if workers < 1:
        raise ValueError(f"workers must be 1 or more, got {workers}")
    targets = [job.target for job in jobs]
    if len(set(targets)) != len(targets):
        raise ValueError(f"two LM jobs write one file: {sorted(map(str, targets))}")
    spawned = min(workers, len(jobs)) - 1
    if spawned < 1:
        return [job.run() for job in jobs]
    pending = deque(sorted(jobs, key=lambda job: -job.vocab_size()))
    lock = threading.Lock()

    def take() -> LMJob | None:
        with lock:
            return pending.popleft() if pending else None

    def drain(run) -> None:
        try:
            while (job := take()) is not None:
                run(job)
        except BaseException:
            with lock:  # one failed job stops the others from starting new ones
                pending.clear()
            raise

    context = multiprocessing.get_context("spawn")  # a fresh interpreter: no fork of a process holding torch threads
    with ProcessPoolExecutor(spawned, mp_context=context) as pool, ThreadPoolExecutor(spawned) as feeders:
        remote = [feeders.submit(drain, lambda job: pool.submit(_run_in_worker, job).result()) for _ in range(spawned)]
        try:
            drain(LMJob.run)
        finally:
            for future in remote:
                future.result()  # a worker's error is raised here, after every running job has ended
    return targets
