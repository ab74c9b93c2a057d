"""nemo_pc: punctuated and cased speech recognition for NVIDIA NeMo.

Importing this package is cheap: it does not import NeMo. It makes sure that NeMo 3.0's config-target
allowlist (``nemo.core.classes.common.ALLOWED_TARGET_PREFIXES``) accepts ``nemo_pc.`` targets, either at once
when NeMo is already imported or, through a small import hook, the moment NeMo imports that module.

The Hydra configs of every model family ship inside the package: ``CONFIG_DIR / "rnnt"``, ``"ctc"``,
``"formatter"`` and ``"evaluate"`` (``hydra.initialize_config_dir(str(nemo_pc.CONFIG_DIR / "rnnt"))``).
"""

from pathlib import Path

from nemo_pc._registration import NEMO_PC_TARGET_PREFIX, register_target_prefix

__version__ = "0.1.0"

CONFIG_DIR = Path(__file__).resolve().parent / "configs"
"""The packaged Hydra configs (``rnnt/rnnt_pc.yaml``, ``ctc/ctc_pc.yaml``, ``formatter/*.yaml``, ...)."""

__all__ = ["CONFIG_DIR", "NEMO_PC_TARGET_PREFIX", "register_target_prefix", "__version__"]

register_target_prefix()
