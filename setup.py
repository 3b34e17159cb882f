"""The build of daifugo-arena: setuptools reads pyproject.toml; this file adds the compiled
engine when it is asked for (docs/engine.md, "Two builds").

    pip install .                                   # pure Python: the default, no compiler
    ARENA_ENGINE_BUILD=compiled pip install .       # the engine compiled with mypyc
    bash infra/build_engine.sh                      # the same, in place in a checkout

The compiled build needs a C compiler and the Python headers; mypy (which ships mypyc) is added
to the build's requirements by the build backend (infra/build_backend.py). It compiles the
modules of ``engine._build.NATIVE_MODULES`` and ``engine/_compiled.py``, written here with the
digest of the sources compiled (``engine._build`` loads the compiled modules only while the
sources beside them still have that digest).
"""

from __future__ import annotations

import importlib.util
import os
import sys
from typing import Any

from setuptools import setup

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD_VAR = "ARENA_ENGINE_BUILD"


def _engine_build_module() -> Any:
    """engine/_build.py, loaded on its own (the engine package is not imported by the build)."""
    spec = importlib.util.spec_from_file_location("_arena_engine_build", os.path.join(HERE, "engine", "_build.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def compiled_engine() -> list[Any]:
    """The extension modules of the compiled engine (mypyc), its digest module written first."""
    from mypyc.build import mypycify  # mypy: added to the build requirements by infra/build_backend.py

    info = _engine_build_module()
    folder = os.path.join(HERE, "engine")
    for path in info.stray_extensions(folder):  # an older in-place build's: it would shadow its .py
        os.remove(path)
    with open(os.path.join(folder, info.DIGEST_MODULE + ".py"), "w") as f:
        f.write(
            '"""Written by setup.py for the compiled build: the digest of the sources compiled."""\n\n'
            f'DIGEST = "{info.digest(folder)}"\n'
        )
    paths = [os.path.join("engine", name + ".py") for name in (*info.NATIVE_MODULES, info.DIGEST_MODULE)]
    return list(mypycify(paths, opt_level="3", group_name="engine." + info.SHARED_LIBRARY.removesuffix("__mypyc")))


mode = os.environ.get(BUILD_VAR) or "pure"
if mode not in ("pure", "compiled"):
    sys.exit(f"setup.py: {BUILD_VAR}={mode!r}: expected pure or compiled")
setup(ext_modules=compiled_engine() if mode == "compiled" else [])
