"""An installed package works outside the checkout: the wheel holds the Hydra configs and trains, and every install
path (``pip install .``, ``pip install -e .``) puts the startup hook into site-packages, so NeMo restores a nemo_pc
model in a process that never imports nemo_pc."""

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

TRAIN = """
import json, sys
from pathlib import Path
import nemo_pc
assert Path(nemo_pc.__file__).resolve().is_relative_to(Path(sys.argv[1]).resolve()), nemo_pc.__file__
from nemo_pc.pipelines.train import train_model
from nemo_pc.testing.asr import train_tokenizer, write_pc_manifest
manifest = write_pc_manifest(Path("data"))
tokenizer = train_tokenizer(manifest, Path("tokenizer"))
tiny = ["model.encoder.d_model=32", "model.encoder.n_heads=2", "model.encoder.n_layers=2",
        "model.encoder.subsampling_conv_channels=32", "model.encoder.ff_expansion_factor=2",
        "model.train_ds.batch_size=4", f"model.tokenizer.dir={tokenizer}",
        f"model.train_ds.manifest_filepath={manifest}", "model.validation_ds.manifest_filepath=null"]
stats = train_model("rnnt", ["variant=conditioned", *tiny, "model.model_defaults.pred_hidden=32"], "rnnt.nemo", 2)
print(json.dumps({"config_dir": str(nemo_pc.CONFIG_DIR), "steps": stats["steps"]}))
"""


RESTORE = """
import sys
from nemo.collections.asr.models import ASRModel
model = ASRModel.restore_from(sys.argv[1], map_location="cpu")
print(type(model).__module__, type(model).__name__)
"""


def _source_copy(folder: Path) -> Path:
    """What the package is built from, copied: building writes build/ and *.egg-info next to setup.cfg."""
    source = folder / "source"
    source.mkdir()
    for name in ("setup.cfg", "setup.py", "nemo_pc-allowlist.pth", "pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    shutil.copytree(ROOT / "nemo_pc", source / "nemo_pc", ignore=shutil.ignore_patterns("__pycache__"))
    return source


def _fresh_venv(folder: Path) -> tuple[Path, Path]:
    """A new venv (its interpreter and site-packages) that sees this environment's packages (torch, NeMo, pip,
    setuptools) as a plain path: their ``.pth`` files, this checkout's editable finder and startup hook among them,
    do not run there."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True)
    python = folder / "bin" / "python"
    code = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    site = Path(subprocess.run([python, "-c", code], check=True, capture_output=True, text=True).stdout.strip())
    (site / "base_packages.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return python, site


@pytest.fixture(scope="module")
def tiny_nemo(tmp_path_factory) -> Path:
    from omegaconf import OmegaConf

    from nemo_pc.models import EncDecRNNTPCBPEModel
    from nemo_pc.testing.asr import tiny_model_config, train_tokenizer, write_pc_manifest

    folder = tmp_path_factory.mktemp("tiny_nemo")
    manifest = write_pc_manifest(folder / "data")
    model = EncDecRNNTPCBPEModel(OmegaConf.create(tiny_model_config(train_tokenizer(manifest, folder / "tok"))))
    model.save_to(str(folder / "tiny.nemo"))
    return folder / "tiny.nemo"


@pytest.mark.parametrize("editable", [False, True], ids=["pip install .", "pip install -e ."])
def test_every_install_path_lets_nemo_restore_a_nemo_pc_model(tmp_path, tiny_nemo, editable):
    source = _source_copy(tmp_path)
    python, site = _fresh_venv(tmp_path / "venv")
    # --ignore-installed: this environment's nemo_pc, visible through the path, is neither used nor uninstalled
    install = [
        python,
        "-m",
        "pip",
        "--disable-pip-version-check",
        "-q",
        "install",
        "--no-deps",
        "--no-build-isolation",
        "--ignore-installed",
        *(["-e"] if editable else []),
        str(source),
    ]
    subprocess.run(install, check=True, cwd=tmp_path)
    assert (site / "nemo_pc-allowlist.pth").read_text() == (ROOT / "nemo_pc-allowlist.pth").read_text()
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"} | {"OMP_NUM_THREADS": "1"}
    probe = "import nemo_pc; print(nemo_pc.__file__)"
    where = subprocess.run([python, "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True, check=True)
    assert Path(where.stdout.strip()).is_relative_to(source if editable else site)
    done = subprocess.run(
        [python, "-c", RESTORE, str(tiny_nemo)], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == "nemo_pc.models.rnnt_pc EncDecRNNTPCBPEModel"


def test_wheel_holds_the_configs_and_trains_outside_the_checkout(tmp_path):
    source = _source_copy(tmp_path)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run(
        [*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", str(tmp_path / "dist"), str(source)],
        check=True,
        cwd=tmp_path,
    )
    wheel = next((tmp_path / "dist").glob("nemo_pc-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    for config in (
        "rnnt/rnnt_pc.yaml",
        "rnnt/variant/dual.yaml",
        "rnnt/predictor/stateless/dual.yaml",
        "ctc/ctc_pc.yaml",
        "ctc/variant/inter.yaml",
        "formatter/tagger.yaml",
        "formatter/rewriter.yaml",
        "evaluate/evaluate_pc.yaml",
    ):
        assert f"nemo_pc/configs/{config}" in names, config
    # the startup hook that lets NeMo's own scripts restore nemo_pc models, at the top of site-packages
    assert "nemo_pc-allowlist.pth" in names
    # the package only, the demo application (what examples/demo_pc.py runs) included
    assert {name.split("/")[0] for name in names if name.endswith(".py")} == {"nemo_pc"}
    assert {"nemo_pc/pipelines/demo/pipeline.py", "nemo_pc/pipelines/demo/command.py"} <= set(names)
    target = tmp_path / "site"
    subprocess.run([*pip, "install", "--no-deps", "--target", str(target), str(wheel)], check=True, cwd=tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    env = {**os.environ, "PYTHONPATH": str(target), "OMP_NUM_THREADS": "1"}  # the wheel's copy comes first
    done = subprocess.run(
        [sys.executable, "-c", TRAIN, str(target)], cwd=work, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert Path(result["config_dir"]).is_relative_to(target) and result["steps"] == 2
    assert (work / "rnnt.nemo").stat().st_size > 0
