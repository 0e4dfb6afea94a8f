"""The package build's native step: compile the C programs of ``benchlang.native`` (the trial
launcher, an executable; the bootstrap's kernels, a shared library loaded with ctypes) so that
an installed benchlang needs no compiler at first use.

A hatchling build hook rather than setuptools ``Extension``s or meson-python/scikit-build-core:
neither program is a Python extension module, and the latter two rebuild on import in an
editable install, needing the compiler at run time. Here a wheel carries the builds in
``benchlang/_native/`` (tagged ``py3-none-PLATFORM``: machine code, no Python ABI); an editable
install (``pip install -e .``) builds them into the source tree's ``benchlang/_native/``
(git-ignored), where the package imported from the tree finds them. Without a working compiler
(``$BENCHLANG_CC``, else ``cc``) the build goes on with a one-line note and a pure-Python wheel:
first use compiles, and without a compiler there either the numpy forms and the process-group
launcher run (docs/measures.md).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface


def _native(root: Path):
    """benchlang/native.py loaded by path: standard library only, no benchlang dependencies."""
    spec = importlib.util.spec_from_file_location("_benchlang_native", root / "benchlang/native.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses looks its module up while decorating
    spec.loader.exec_module(module)
    return module


def _platform_tag() -> str:
    """This platform's wheel tag without the manylinux/musllinux claims (not audited)."""
    from packaging.tags import sys_tags

    return next(
        t.platform
        for t in sys_tags()
        if "manylinux" not in t.platform and "musllinux" not in t.platform
    )


class NativeBuildHook(BuildHookInterface):
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel":
            return
        native = _native(Path(self.root))
        cc = os.environ.get(native.CC_ENV) or "cc"
        editable = version == "editable"
        if editable:
            directory = Path(self.root) / "benchlang" / "_native"
        else:
            self._scratch = tempfile.mkdtemp(prefix="benchlang-native-")
            directory = Path(self._scratch)
        complaints = native.ship(directory, cc, Path(self.root) / "benchlang")
        for name, complaint in complaints.items():
            if complaint:
                self.app.display_warning(
                    f"benchlang: {name} not built ({complaint}); it is compiled on first use, "
                    "else its fallback runs"
                )
            else:
                self.app.display_info(f"benchlang: built {name} with {cc}")
        if editable:
            return
        built = list(directory.iterdir())
        for path in built:
            build_data["force_include"][str(path)] = f"benchlang/_native/{path.name}"
        if built:
            build_data["pure_python"] = False
            build_data["tag"] = f"py3-none-{_platform_tag()}"

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        scratch = getattr(self, "_scratch", None)
        if scratch:
            shutil.rmtree(scratch, ignore_errors=True)
