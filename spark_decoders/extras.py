"""The optional dependencies (pip extras) some commands need, checked before the work starts so that a
missing one is said in one line naming the extra to install, not shown as an ImportError traceback.
"""

from __future__ import annotations

import importlib.util


def missing_extra(what: str, extra: str, *modules: str) -> str | None:
    """None when every module of ``modules`` is installed; else the line that says which extra
    installs them, e.g. ``decode --spark needs pyspark: pip install 'kraftwire[spark]'``."""
    missing = [module for module in modules if not _installed(module)]
    if not missing:
        return None
    return f"{what} needs {' and '.join(missing)}: pip install 'kraftwire[{extra}]'"


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent package that is missing or broken
        return False
