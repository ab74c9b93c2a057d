"""nemo_pc: punctuated and cased speech recognition for NVIDIA NeMo.

Importing this package is cheap: it does not import NeMo. It makes sure that NeMo 3.0's config-target
allowlist (``nemo.core.classes.common.ALLOWED_TARGET_PREFIXES``) accepts ``nemo_pc.`` targets, either at once
when NeMo is already imported or, through a small import hook, the moment NeMo imports that module.

The Hydra configs of every model family ship inside the package: ``CONFIG_DIR / "rnnt"``, ``"ctc"``,
``"formatter"`` and ``"evaluate"``; :func:`nemo_pc.parts.configs.compose_config` composes a family's recipe.
"""

from nemo_pc._registration import NEMO_PC_TARGET_PREFIX, register_target_prefix
from nemo_pc.parts.configs import CONFIG_DIR

__version__ = "0.1.0"


__all__ = ["CONFIG_DIR", "NEMO_PC_TARGET_PREFIX", "register_target_prefix", "__version__"]

register_target_prefix()
