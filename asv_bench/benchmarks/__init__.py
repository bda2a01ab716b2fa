"""asv benchmarks of cproducer's hot paths, one file per area.

The benchmarks import the modules by the package layout's paths (``cproducer.utils.crc32c``, ...).
To record the history of the commits made before that layout, asv runs these same benchmarks
against those commits' builds: there the modules had flat names, which stand in under the new
names when the new ones cannot be imported.
"""

from __future__ import annotations

import importlib
import sys
import types

#: the layout's module paths and the names their contents had before, newest first
_BEFORE_LAYOUT = {
    "cproducer.utils.crc32c": ("cproducer._crc32c",),
    "cproducer.utils.murmur2": ("cproducer._murmur2",),
    "cproducer.record.record_batch_builder": ("cproducer._records",),
    "cproducer.record.compression": ("cproducer.compression",),
    "cproducer.producer.internals.buffer_pool": ("cproducer._buffer_pool",),
    "cproducer.producer.internals.built_in_partitioner": ("cproducer._partitioner",),
    "cproducer.producer.internals.record_accumulator": ("cproducer._accumulator",),
    # split out of the accumulator after the layout
    "cproducer.producer.internals.producer_batch": (
        "cproducer.producer.internals.record_accumulator",
        "cproducer._accumulator",
    ),
    "cproducer.producer.internals.produce_request_result": (
        "cproducer.producer.internals.record_accumulator",
        "cproducer._accumulator",
    ),
}


def _stand_in(new: str, module: types.ModuleType) -> None:
    """Register ``module`` as ``new``, with empty packages for the parents that do not exist, so
    that both ``from a.b.c import x`` and ``from a.b import c`` find it."""
    sys.modules[new] = module
    parent, _, child = new.rpartition(".")
    if parent not in sys.modules:
        try:
            importlib.import_module(parent)  # e.g. cproducer.producer was a module before
        except ImportError:
            _stand_in(parent, types.ModuleType(parent))
    setattr(sys.modules[parent], child, module)


def _first_importable(names: tuple) -> types.ModuleType | None:
    for name in names:
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    return None  # none exists in this commit: its benchmarks fail to import, asv records that


for _new, _olds in _BEFORE_LAYOUT.items():
    try:
        importlib.import_module(_new)
    except ImportError:
        _module = _first_importable(_olds)
        if _module is not None:
            _stand_in(_new, _module)
