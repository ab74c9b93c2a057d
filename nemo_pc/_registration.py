"""Registers ``nemo_pc.`` in NeMo 3.0's allowlist of Hydra ``_target_`` prefixes without importing NeMo.

NeMo 3.0 refuses to instantiate config targets whose dotted path does not start with a prefix from
``nemo.core.classes.common.ALLOWED_TARGET_PREFIXES``. Importing that module costs seconds (it pulls in torch and
Lightning), so instead of importing it here we append the prefix right after NeMo itself imports it.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys

NEMO_PC_TARGET_PREFIX = "nemo_pc."
_NEMO_COMMON = "nemo.core.classes.common"


def _append_prefix(module) -> None:
    prefixes = getattr(module, "ALLOWED_TARGET_PREFIXES", None)
    if prefixes is not None and NEMO_PC_TARGET_PREFIX not in prefixes:
        prefixes.append(NEMO_PC_TARGET_PREFIX)


class _RegisteringLoader(importlib.abc.Loader):
    """Wraps NeMo's own loader and appends the prefix after the module body has run."""

    def __init__(self, wrapped: importlib.abc.Loader) -> None:
        self._wrapped = wrapped

    def create_module(self, spec):
        return self._wrapped.create_module(spec)

    def exec_module(self, module) -> None:
        self._wrapped.exec_module(module)
        _append_prefix(module)


class _NemoCommonFinder(importlib.abc.MetaPathFinder):
    """Finds ``nemo.core.classes.common`` through the other finders and wraps its loader."""

    def find_spec(self, fullname, path, target=None):
        if fullname != _NEMO_COMMON:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return None
        spec.loader = _RegisteringLoader(spec.loader)
        return spec


def register_target_prefix() -> None:
    """Makes NeMo accept ``nemo_pc.`` config targets, now if NeMo is loaded, otherwise when it loads."""
    module = sys.modules.get(_NEMO_COMMON)
    if module is not None:
        _append_prefix(module)
        return
    if not any(isinstance(finder, _NemoCommonFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, _NemoCommonFinder())
