"""The compiled builds of the records' JSON view modules, each used only when it can be trusted.

``kraftwire codegen --native`` also compiles this package's ``_v2_view.py``, ``_logrecords.py``,
``_records_json.py`` and ``_v2_text.py`` with mypyc, each into the extension module
``_native_<module>`` beside it, which records the SHA-256 of the source it was compiled from.
:func:`compiled_build` hands such a module out only when it is truly an extension module (never a
source file of that name), imports, and was compiled from the module's source as it is now: a build
left over from an older generation is ignored rather than run. Otherwise, and with
``KRAFTWIRE_PURE=1``, the pure module serves. Both give the same views and the same errors
(tests/records/test_compiled_views.py compares them).

This module chooses the batch reader (``read_batch_views``) and the metadata-log value views
(``metadata_value_view``) that ``_records_json`` calls; ``records`` chooses ``batches_to_json``
and ``write_batches_json_text`` itself, which ``_records_json`` and ``_v2_text`` (importing this
module) cannot do.
"""

from __future__ import annotations

import hashlib
import importlib
from types import ModuleType

from . import _logrecords, _v2_view
from ._native_loader import compiled_spec, forced_pure

__all__ = ["IMPLEMENTATION", "compiled_build", "metadata_value_view", "read_batch_views"]

_PACKAGE = __name__.rpartition(".")[0]


def compiled_build(pure: ModuleType) -> ModuleType | None:
    """The compiled build of the runtime module ``pure`` when it can be used, else None."""
    module = pure.__name__.rpartition(".")[2]
    if forced_pure() or compiled_spec(_PACKAGE, module) is None:
        return None
    try:
        native = importlib.import_module(f"{_PACKAGE}._native_{module}")
        with open(pure.__file__ or "", "rb") as source:
            digest = hashlib.sha256(source.read()).hexdigest()
    except (ImportError, OSError):  # built for another Python; a package without its source files
        return None
    return native if getattr(native, "PURE_SOURCE_SHA256", None) == digest else None


_reader = compiled_build(_v2_view)
_values = compiled_build(_logrecords)
# "native" when both the batch reader and the value views are compiled (they are built together).
IMPLEMENTATION = "pure" if _reader is None or _values is None else "native"
read_batch_views = (_reader or _v2_view).read_batch_views
metadata_value_view = (_values or _logrecords).metadata_value_view
