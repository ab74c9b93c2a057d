"""Multi-process training for real: two CPU processes (gloo) through the Hydra scripts, from manifests and from lhotse
shar, and the cross-rank pieces (batch split, what NeMo's lhotse loader gives each rank, loss normalization, WER sums)
checked in two spawned processes."""

import os
import socket
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from nemo_pc.parts.manifest import read_manifest
from nemo_pc.testing.asr import SCRIPT_VARIANTS, script_overrides

ROOT = Path(__file__).resolve().parents[1]
WORLD = 2


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _init(rank: int, port: int) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=WORLD)


def _batches_worker(rank: int, port: int, out: str) -> None:
    from nemo_pc.data.datasets.pc_dataset import DurationBucketSampler

    _init(rank, port)
    sampler = DurationBucketSampler([float(k % 7) + 1.0 for k in range(50)], batch_size=4, window=3, seed=5)
    sampler.set_epoch(1)
    torch.save([list(batch) for batch in sampler], f"{out}/batches_{rank}.pt")
    dist.destroy_process_group()


def _loss_worker(rank: int, port: int, out: str) -> None:
    from nemo_pc.losses import ModeWeightedRNNTLoss

    _init(rank, port)
    values, modes, active = _loss_rows()
    mine = slice(rank * 3, rank * 3 + 3)
    loss = ModeWeightedRNNTLoss(num_classes=4, mode_weights={0: 0.3, 1: 0.7}, loss_name="pytorch")
    loss.rnnt = _PerRow()
    part = values[mine].clone().requires_grad_(True)
    total, _ = loss(part, None, None, None, modes=modes[mine], active=active[mine])
    total.backward()
    grad = part.grad / WORLD  # DDP averages parameter gradients over processes: each row's share is 1 / WORLD

    from nemo_pc.models.rnnt_pc import EncDecRNNTPCBPEModel

    counts = {"": (1.0 + 2 * rank, 4.0), "_normalized": (float(rank), 2.0), "_punctuated": (1.0 + rank, 2.0)}
    outputs = [{}]
    for suffix, (errors, words) in counts.items():
        outputs[0][f"val_wer_num{suffix}"], outputs[0][f"val_wer_denom{suffix}"] = torch.tensor([errors, words])
    logs = EncDecRNNTPCBPEModel._epoch_end(SimpleNamespace(head_modes=[0, 1]), outputs, "val", {"log": {}})["log"]
    torch.save({"grad": grad, "logs": {k: float(v) for k, v in logs.items()}}, f"{out}/loss_{rank}.pt")
    dist.destroy_process_group()


def _lhotse_cuts_worker(rank: int, port: int, out: str, configs: dict) -> None:
    from nemo.collections.common.data.lhotse import get_lhotse_dataloader_from_config

    _init(rank, port)
    seen = {}
    for name, config in configs.items():
        loader = get_lhotse_dataloader_from_config(config, global_rank=rank, world_size=WORLD, dataset=_UttIds())
        seen[name] = list(loader)
    torch.save(seen, f"{out}/cuts_{rank}.pt")
    dist.destroy_process_group()


class _UttIds(torch.utils.data.Dataset):
    """A lhotse dataset whose batch is the ``utt_id`` list of its cuts."""

    def __getitem__(self, cuts) -> list[str]:
        return [cut.custom["utt_id"] for cut in cuts]


class _PerRow(torch.nn.Module):
    """Stands in for the RNN-T loss: each row's loss is its value."""

    def forward(self, log_probs, targets, input_lengths, target_lengths):
        return log_probs


def _loss_rows():
    values = torch.tensor([1.0, 2.0, 4.0, 8.0, 16.0, 32.0])
    return values, torch.tensor([0, 1, 1, 0, 1, 1]), torch.tensor([True, True, False, True, True, True])


def test_ranks_get_disjoint_batches_of_equal_count(tmp_path):
    mp.spawn(_batches_worker, args=(_free_port(), str(tmp_path)), nprocs=WORLD, join=True)
    ranks = [torch.load(tmp_path / f"batches_{rank}.pt") for rank in range(WORLD)]
    seen = [{index for batch in batches for index in batch} for batches in ranks]
    assert len(ranks[0]) == len(ranks[1]) > 0
    assert not seen[0] & seen[1]  # different data on each rank
    assert len(seen[0] | seen[1]) >= 50 - 2 * 4  # at most one batch per rank left out to even the counts


def test_loss_and_wer_are_reduced_across_ranks(tmp_path):
    from nemo_pc.losses import ModeWeightedRNNTLoss

    mp.spawn(_loss_worker, args=(_free_port(), str(tmp_path)), nprocs=WORLD, join=True)
    results = [torch.load(tmp_path / f"loss_{rank}.pt") for rank in range(WORLD)]
    values, modes, active = _loss_rows()
    whole = values.clone().requires_grad_(True)
    loss = ModeWeightedRNNTLoss(num_classes=4, mode_weights={0: 0.3, 1: 0.7}, loss_name="pytorch")
    loss.rnnt = _PerRow()
    loss(whole, None, None, None, modes=modes, active=active)[0].backward()
    averaged = torch.cat([results[rank]["grad"] for rank in range(WORLD)])
    assert torch.allclose(averaged, whole.grad)  # the DDP gradient is the one-process gradient of the whole batch
    for result in results:  # both ranks log the WER of all words: (1 + 3) / 8, per mode (0 + 1) / 4 and (1 + 2) / 4
        logs = result["logs"]
        assert logs["val_wer"] == pytest.approx(0.5)
        assert logs["val_wer_normalized"] == pytest.approx(0.25)
        assert logs["val_wer_punctuated"] == pytest.approx(0.75)


def _lhotse_configs(manifest: Path, shar: Path) -> dict:
    common = {"batch_size": 2, "shuffle": True, "seed": 3, "sample_rate": 16000, "num_workers": 0}
    shar_once = {**common, "shar_path": str(shar), "force_finite": True}  # one pass, so that the loader ends
    return {
        "manifest": {**common, "manifest_filepath": str(manifest), "shard_seed": 11},
        "shar_trng": {**shar_once, "shard_seed": "trng"},
        "shar_randomized": {**shar_once, "shard_seed": "randomized"},
        "shar_randomized_worker": {**shar_once, "shard_seed": "randomized", "num_workers": 1},
    }


def test_lhotse_ranks_see_different_cuts(tmp_path):
    """What NeMo's lhotse loader promises each rank (``global_rank``, ``world_size=2``), in two gloo processes.

    A plain manifest (a map-style sampler) is split: the ranks' batches are disjoint, equal in number, and together
    hold every utterance one process sees (when the ranks shuffle with the same integer ``shard_seed``). Shar
    (iterable, repeated without end in training) is not split: every rank reads all of it, in its own order:
    ``trng`` gives each rank its own order; ``randomized`` does so only in loader workers (``num_workers >= 1``).
    """
    from nemo.collections.common.data.lhotse import get_lhotse_dataloader_from_config

    from nemo_pc.data.recipes.shar import export_shar
    from nemo_pc.testing.asr import write_pc_manifest

    utterances = [(f"Word number {k}, said once.", "book") for k in range(12)]
    manifest = write_pc_manifest(tmp_path / "data", utterances, duration=0.3)
    export_shar(manifest, tmp_path / "shar", shard_size=2)
    configs = _lhotse_configs(manifest, tmp_path / "shar")
    mp.spawn(_lhotse_cuts_worker, args=(_free_port(), str(tmp_path), configs), nprocs=WORLD, join=True)
    ranks = [torch.load(tmp_path / f"cuts_{rank}.pt") for rank in range(WORLD)]
    every = {entry["utt_id"] for entry in read_manifest(manifest)}

    one = get_lhotse_dataloader_from_config(configs["manifest"], global_rank=0, world_size=1, dataset=_UttIds())
    one_process = {utt for batch in one for utt in batch}
    assert one_process == every
    split = [[utt for batch in seen["manifest"] for utt in batch] for seen in ranks]
    assert len(ranks[0]["manifest"]) == len(ranks[1]["manifest"]) > 0
    assert not set(split[0]) & set(split[1])  # different cuts on each rank
    assert sorted(split[0] + split[1]) == sorted(one_process)  # together: what one process sees, each once

    def order(seen: dict, name: str) -> list[str]:
        return [utt for batch in seen[name] for utt in batch]

    for name in ("shar_trng", "shar_randomized", "shar_randomized_worker"):
        for seen in ranks:  # a pass over shar reads every cut once on every rank
            assert sorted(order(seen, name)) == sorted(every), name
    assert order(ranks[0], "shar_trng") != order(ranks[1], "shar_trng")
    assert order(ranks[0], "shar_randomized_worker") != order(ranks[1], "shar_randomized_worker")
    # without loader workers "randomized" falls back to a value of Python's global random state, the same on every
    # rank: the ranks read the same order (docs/scale.md)
    assert order(ranks[0], "shar_randomized") == order(ranks[1], "shar_randomized")


@pytest.mark.parametrize("script", sorted(SCRIPT_VARIANTS))
def test_hydra_script_trains_on_two_cpu_processes_and_the_checkpoint_restores(tiny_script_data, script, tmp_path):
    """``trainer.devices=2 trainer.strategy=ddp`` on CPU (gloo), with duration-bucketed batches."""
    manifest, tokenizer = tiny_script_data
    overrides = script_overrides(
        script,
        manifest,
        tokenizer,
        tmp_path / "exp",
        "ddp",
        "model.train_ds.batch_size=1",
        "model.train_ds.bucketing_window=2",
        "model.validation_ds.batch_size=1",
        # No loader worker processes: a rank forked while its gloo and OpenMP threads run can hang in the child on
        # a busy machine; the distributed sampler and the bucketing are the same in the main process.
        "model.train_ds.num_workers=0",
        "model.validation_ds.num_workers=0",
        f"trainer.devices={WORLD}",
        "trainer.strategy=ddp",
    )
    _run_on_two_processes(script, overrides, tmp_path)
    _restores_and_transcribes(tmp_path / "exp" / "ddp", manifest)


@pytest.mark.parametrize("script", sorted(SCRIPT_VARIANTS))
def test_hydra_script_trains_from_shar_with_lhotse_on_two_cpu_processes(tiny_script_data, script, tmp_path):
    """``use_lhotse`` from shar under DDP, with the trainer keys of docs/scale.md and NeMo's duration buckets."""
    from nemo_pc.data.recipes.shar import export_shar

    manifest, tokenizer = tiny_script_data
    export_shar(manifest, tmp_path / "shar", shard_size=2)
    overrides = script_overrides(
        script,
        manifest,
        tokenizer,
        tmp_path / "exp",
        "lhotse_ddp",
        "model.train_ds.use_lhotse=true",
        "model.train_ds.manifest_filepath=null",
        f"+model.train_ds.shar_path={tmp_path / 'shar'}",
        "model.train_ds.batch_size=2",
        "model.train_ds.num_workers=0",
        "+model.train_ds.use_bucketing=true",
        "+model.train_ds.num_buckets=2",
        "+model.train_ds.bucket_duration_bins=[0.5]",
        "+model.train_ds.concurrent_bucketing=false",
        "+model.train_ds.bucket_buffer_size=16",
        "+model.train_ds.shuffle_buffer_size=16",
        "model.validation_ds.batch_size=1",
        "trainer.limit_train_batches=2",
        "trainer.use_distributed_sampler=false",
        f"trainer.devices={WORLD}",
        "trainer.strategy=ddp",
    )
    output = _run_on_two_processes(script, overrides, tmp_path)
    assert "Lhotse DataLoader" in output  # NeMo's log line: the lhotse loader, not the map-style one
    _restores_and_transcribes(tmp_path / "exp" / "lhotse_ddp", manifest)


def _run_on_two_processes(script: str, overrides: list[str], cwd: Path) -> str:
    """Runs an example script with ``overrides`` (which ask for two processes); returns its stdout and stderr."""
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    command = [sys.executable, str(ROOT / "examples" / script), *overrides]
    done = subprocess.run(command, capture_output=True, text=True, cwd=cwd, timeout=600, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "GLOBAL_RANK: 1" in done.stderr + done.stdout  # two processes ran
    return done.stdout + done.stderr


def _restores_and_transcribes(run_dir: Path, manifest: Path) -> None:
    saved = list(run_dir.rglob("*.nemo"))
    assert saved, "no .nemo written"
    from nemo.collections.asr.models import ASRModel

    import nemo_pc  # noqa: F401  (registers the nemo_pc. config targets)

    model = ASRModel.restore_from(str(saved[0]), map_location="cpu")
    assert type(model).__module__.startswith("nemo_pc.models")
    texts = model.transcribe(_audio(manifest)[:1], batch_size=1, verbose=False)
    assert len(texts) == 1


def _audio(manifest: Path) -> list[str]:
    return [entry["audio_filepath"] for entry in read_manifest(manifest)]
