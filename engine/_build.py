"""Which build of the engine runs: its pure-Python modules or the same modules compiled.

The compiled build is this source compiled with mypyc (``setup.py``; asked for at install time
with ``ARENA_ENGINE_BUILD=compiled``, docs/engine.md "Two builds"): an extension module beside
each module of :data:`NATIVE_MODULES`, their shared library ``engine/_native__mypyc*.so`` and
``engine/_compiled`` (the digest of the sources they were compiled from). The ``.py`` files
stay; both builds import only the standard library.

``ARENA_ENGINE`` chooses when ``engine`` is first imported in a process:

* ``auto`` (or unset): the compiled modules when they are all there and were compiled from
  the sources beside them, else the pure ones (a ``RuntimeWarning`` says so when compiled
  modules are there but stale: rebuild them, ``bash infra/build_engine.sh``);
* ``pure``: the pure modules, even where compiled ones are present;
* ``compiled``: the compiled modules; ``ImportError`` when they are missing or stale.

This module is never compiled: it runs before any compiled module is loaded.
"""

from __future__ import annotations

import hashlib
import os
import sys
import warnings
from collections.abc import Callable
from importlib import import_module
from importlib.machinery import (
    BYTECODE_SUFFIXES,
    EXTENSION_SUFFIXES,
    SOURCE_SUFFIXES,
    FileFinder,
    SourceFileLoader,
    SourcelessFileLoader,
)
from typing import Any

#: The modules compiled by mypyc (``setup.py``), in ``engine/``.
NATIVE_MODULES: tuple[str, ...] = (
    "actions",
    "cards",
    "draws",
    "forms",
    "plays",
    "decisions",
    "results",
    "field",
    "state",
    "trick",
    "parsing",
    "game",
    "climbing",
    "million_doubt",
    "trump_millionaire",
    "jdf",
)
#: The generated module holding :data:`DIGEST` of the sources it was compiled with.
DIGEST_MODULE = "_compiled"
#: The shared library of the compiled modules (``mypycify(group_name=...)``).
SHARED_LIBRARY = "_native__mypyc"
#: The run-time choice (see the module docstring).
ENV = "ARENA_ENGINE"
#: False for every run; mypy reads it as the guard of the ``mypy_extensions`` import (below).
TYPING = False


def _same(cls: Any) -> Any:
    return cls


def mypyc_attr(*_args: Any, **_flags: Any) -> Callable[[Any], Any]:
    """The pure build's stand-in for ``mypy_extensions.mypyc_attr``: the class unchanged.

    The compiled build reads the flags at compile time (``allow_interpreted_subclasses``: a
    Python subclass of a rule set stays possible) and never calls it.
    """
    return _same


def digest(folder: str) -> str:
    """SHA-256 of the sources of :data:`NATIVE_MODULES` in ``folder`` (what was compiled)."""
    h = hashlib.sha256()
    for name in NATIVE_MODULES:
        with open(os.path.join(folder, name + ".py"), "rb") as f:
            data = f.read()
        h.update(name.encode() + b"\0" + len(data).to_bytes(8, "big") + data)
    return h.hexdigest()


def _extension(folder: str, name: str) -> str | None:
    for suffix in EXTENSION_SUFFIXES:
        path = os.path.join(folder, name + suffix)
        if os.path.isfile(path):
            return path
    return None


def stray_extensions(folder: str) -> list[str]:
    """Extension modules in ``folder`` that the compiled build does not make (left by an
    older build): they would shadow their ``.py`` files."""
    names = {SHARED_LIBRARY, DIGEST_MODULE, *NATIVE_MODULES}
    out = []
    for entry in sorted(os.listdir(folder)):
        for suffix in EXTENSION_SUFFIXES:  # the most specific first (.cpython-311-...so, .abi3.so, .so)
            if entry.endswith(suffix):
                if entry[: -len(suffix)] not in names:
                    out.append(os.path.join(folder, entry))
                break
    return out


def compiled_state(folder: str, package: str = "engine") -> str:
    """``"fresh"``, ``"missing"`` (no compiled module, or some missing) or ``"stale"`` (compiled
    from other sources than those in ``folder``, or an older build's module left beside)."""
    names = (SHARED_LIBRARY, DIGEST_MODULE, *NATIVE_MODULES)
    if any(_extension(folder, name) is None for name in names):
        return "missing"
    if stray_extensions(folder):
        return "stale"
    baked = getattr(import_module(f"{package}.{DIGEST_MODULE}"), "DIGEST", None)
    return "fresh" if baked == digest(folder) else "stale"


def _hide_compiled(folder: str) -> None:
    """Import the ``.py`` modules of ``folder`` even where compiled ones lie beside them."""
    sys.path_importer_cache[folder] = FileFinder(
        folder, (SourceFileLoader, SOURCE_SUFFIXES), (SourcelessFileLoader, BYTECODE_SUFFIXES)
    )


def select(folder: str, package: str = "engine") -> str:
    """Choose the build of ``package`` (its ``__path__[0]`` is ``folder``) by ``ARENA_ENGINE``;
    return ``"pure"`` or ``"compiled"``.

    Raises:
        ImportError: ``ARENA_ENGINE=compiled`` and the compiled modules are missing or stale,
            or ``ARENA_ENGINE`` has another value than ``auto``, ``pure`` or ``compiled``.
    """
    want = os.environ.get(ENV) or "auto"
    if want not in ("auto", "pure", "compiled"):
        raise ImportError(f"{ENV}={want!r}: expected auto, pure or compiled")
    if want == "pure":
        _hide_compiled(folder)
        return "pure"
    state = compiled_state(folder, package)
    if state == "fresh":
        return "compiled"
    if want == "compiled":
        raise ImportError(
            f"{ENV}=compiled asks for the compiled engine, but in {folder} it is {state}: build it with "
            "`bash infra/build_engine.sh` (a checkout) or `ARENA_ENGINE_BUILD=compiled pip install .`"
        )
    if state == "stale":
        warnings.warn(
            f"the compiled engine in {folder} was built from other sources: running the pure engine "
            "(rebuild it: bash infra/build_engine.sh)",
            RuntimeWarning,
            stacklevel=2,
        )
    _hide_compiled(folder)
    return "pure"


#: The build this process runs: ``"pure"`` or ``"compiled"`` (``engine.BUILD``).
BUILD: str = select(sys.modules["engine"].__path__[0]) if __name__ == "engine._build" else "pure"
