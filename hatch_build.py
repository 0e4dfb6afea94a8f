"""The package build's native step: the C programs of ``benchlang.native`` (the trial launcher,
an executable; the bootstrap's kernels, a shared library loaded with ctypes).

A wheel's tag must tell the truth about what it holds (docs/install.md):

- by default (``pip wheel .``, ``python -m build``, ``pip install .``) the wheel is pure,
  ``py3-none-any``, with no machine code: it installs on any platform, compiles the programs at
  first use where a C compiler is found, and otherwise runs their fallbacks (the numpy forms,
  the process-group launcher). This is the portable form, the one to publish.
- with ``BENCHLANG_PLATFORM_WHEEL=1`` the builds go in ``benchlang/_native/`` and the wheel is
  tagged ``py3-none-PLATFORM`` (machine code, no Python ABI), e.g. ``linux_x86_64``, which
  package indexes refuse: it is for this machine and its like, or to be repaired into a
  ``manylinux`` tag by ``auditwheel repair`` (on this Debian 12 build machine about
  ``manylinux_2_36``, which few machines accept) or built in the manylinux images by
  cibuildwheel, for broad tags (those images cannot run where this was written). A failed
  build there is an error, not a quietly pure wheel under a platform's name.
- an editable install (``pip install -e .``) builds into the source tree's ``benchlang/_native/``
  (git-ignored), where the package imported from the tree finds them; without a compiler it goes
  on with a one-line note.

A hatchling build hook rather than setuptools ``Extension``s or meson-python/scikit-build-core:
neither program is a Python extension module, and the latter two rebuild on import in an
editable install, needing the compiler at run time.
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


PLATFORM_ENV = "BENCHLANG_PLATFORM_WHEEL"


class NativeBuildHook(BuildHookInterface):
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel":
            return
        editable = version == "editable"
        platform = os.environ.get(PLATFORM_ENV) == "1"
        if not editable and not platform:
            self.app.display_info(
                "benchlang: a pure py3-none-any wheel; its C programs compile at first use "
                f"(else their fallbacks run); {PLATFORM_ENV}=1 builds a platform wheel"
            )
            return
        native = _native(Path(self.root))
        cc = os.environ.get(native.CC_ENV) or "cc"
        if editable:
            directory = Path(self.root) / "benchlang" / "_native"
        else:
            self._scratch = tempfile.mkdtemp(prefix="benchlang-native-")
            directory = Path(self._scratch)
        complaints = native.ship(directory, cc, Path(self.root) / "benchlang")
        for name, complaint in complaints.items():
            if complaint and platform and not editable:
                raise RuntimeError(f"benchlang: {name} not built for a platform wheel: {complaint}")
            if complaint:
                self.app.display_warning(
                    f"benchlang: {name} not built ({complaint}); it is compiled on first use, "
                    "else its fallback runs"
                )
            else:
                self.app.display_info(f"benchlang: built {name} with {cc}")
        if editable:
            return
        for path in directory.iterdir():
            build_data["force_include"][str(path)] = f"benchlang/_native/{path.name}"
        build_data["pure_python"] = False
        build_data["tag"] = f"py3-none-{_platform_tag()}"

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        scratch = getattr(self, "_scratch", None)
        if scratch:
            shutil.rmtree(scratch, ignore_errors=True)
