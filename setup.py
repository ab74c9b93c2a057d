"""Build hook: installs ``nemo_pc-allowlist.pth`` next to the package.

Python runs that file at interpreter start. It imports ``nemo_pc`` (which imports no NeMo), and that registers the
``nemo_pc.`` prefix in NeMo 3.0's config-target allowlist the moment NeMo loads it. NeMo's own scripts that
restore a ``.nemo`` directly (e.g. ``speech_to_text_cache_aware_streaming_infer.py``) then accept nemo_pc models
without importing nemo_pc themselves. Everything else is in ``setup.cfg``.
"""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

PTH = "nemo_pc-allowlist.pth"


class BuildPyWithStartupHook(build_py):
    def run(self) -> None:
        super().run()
        self.copy_file(str(Path(__file__).parent / PTH), str(Path(self.build_lib) / PTH))

    def get_outputs(self, include_bytecode: bool = True) -> list[str]:
        return [*super().get_outputs(include_bytecode), str(Path(self.build_lib) / PTH)]


setup(cmdclass={"build_py": BuildPyWithStartupHook})
