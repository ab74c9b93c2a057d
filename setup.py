"""Build hook: installs ``nemo_pc-allowlist.pth`` at the top of site-packages, by every install path.

Python runs that file at interpreter start. It imports ``nemo_pc`` (which imports no NeMo), and that registers the
``nemo_pc.`` prefix in NeMo 3.0's config-target allowlist the moment NeMo loads it. NeMo's own scripts that
restore a ``.nemo`` directly (e.g. ``speech_to_text_cache_aware_streaming_infer.py``) then accept nemo_pc models
without importing nemo_pc themselves. NeMo 3.0 builds that allowlist from a fixed list (no entry points), so a
startup hook is the one way in. Everything else is in ``setup.cfg``.
"""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

PTH = "nemo_pc-allowlist.pth"


class BuildPyWithStartupHook(build_py):
    """``build_py`` that also writes the startup hook to the root of the wheel, i.e. of site-packages.

    A wheel (``pip install .``, ``pip wheel .``) packs ``build_lib``. An editable install (PEP 660) packs only
    setuptools' finder and what is written straight into its unpacked wheel (``install``'s ``install_lib``, where
    setuptools writes scripts and data too), so there the hook goes into that folder. Its name sorts after
    setuptools' ``__editable__.*.pth``, so the finder is in place when the hook looks for ``nemo_pc``.
    """

    def run(self) -> None:
        super().run()
        self.copy_file(str(Path(__file__).parent / PTH), self._hook_path())

    def get_outputs(self, include_bytecode: bool = True) -> list[str]:
        return [*super().get_outputs(include_bytecode), self._hook_path()]

    def _hook_path(self) -> str:
        root = self.get_finalized_command("install").install_lib if self.editable_mode else self.build_lib
        return str(Path(root) / PTH)


setup(cmdclass={"build_py": BuildPyWithStartupHook})
