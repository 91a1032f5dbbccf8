"""The reader of record batch views that ``_records_json`` uses: ``_v2_view`` compiled, or pure.

``kraftwire codegen --native`` also compiles this package's ``_v2_view.py`` with mypyc, into the
extension module ``_native__v2_view`` beside it, which records the SHA-256 of the source it was
compiled from. That module is used only when it is truly an extension module (never a source file
of that name), imports, and was compiled from ``_v2_view.py`` as it is now: a build left over from
an older generation is ignored rather than run. Otherwise, and with ``KRAFTWIRE_PURE=1``, the pure
module reads. Both make the same views and hand back the same records
(tests/records/test_view_fast_path.py compares them on the same buffers).
"""

from __future__ import annotations

import hashlib
import importlib
from types import ModuleType

from . import _v2_view
from ._native_loader import compiled_spec, forced_pure

__all__ = ["IMPLEMENTATION", "read_batch_views"]

_PACKAGE = __name__.rpartition(".")[0]
_MODULE = "_v2_view"


def _current_build() -> ModuleType | None:
    """The compiled ``_v2_view`` when it can be used, else None."""
    if forced_pure() or compiled_spec(_PACKAGE, _MODULE) is None:
        return None
    try:
        native = importlib.import_module(f"{_PACKAGE}._native_{_MODULE}")
        with open(_v2_view.__file__, "rb") as source:
            digest = hashlib.sha256(source.read()).hexdigest()
    except (ImportError, OSError):  # built for another Python; a package without its source files
        return None
    return native if getattr(native, "PURE_SOURCE_SHA256", None) == digest else None


_compiled = _current_build()
IMPLEMENTATION = "pure" if _compiled is None else "native"
read_batch_views = _v2_view.read_batch_views if _compiled is None else _compiled.read_batch_views
