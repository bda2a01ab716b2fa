"""Module paths users imported before a re-layout keep working, with a warning naming the new
home; the top-level names load on first use."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import cproducer


@pytest.mark.parametrize("old, new", sorted(cproducer.MOVED_MODULES.items()))
def test_an_old_module_path_is_the_module_at_its_new_home(old: str, new: str) -> None:
    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=f"{old} moved to {new}"):
        moved = importlib.import_module(old)
    assert moved is importlib.import_module(new)


def test_from_import_of_an_old_path_warns_at_the_importing_line() -> None:
    code = (
        "import warnings\n"
        "warnings.simplefilter('always')\n"
        "from cproducer.partitioners import RoundRobinPartitioner\n"
        "from cproducer.producer.partitioners import RoundRobinPartitioner as R\n"
        "assert RoundRobinPartitioner is R\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert "<string>:3: DeprecationWarning: cproducer.partitioners moved to " in out.stderr


def test_an_unknown_path_still_fails() -> None:
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("cproducer.no_such_module")


def test_import_cproducer_loads_no_network_stack() -> None:
    code = (
        "import sys, cproducer\n"
        "assert 'cproducer.network.network_client' not in sys.modules\n"
        "assert cproducer.KafkaProducer.__name__ == 'KafkaProducer'\n"
        "assert 'cproducer.network.network_client' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_every_lazy_name_is_exported_and_loads() -> None:
    assert set(cproducer.__all__) == {"errors", "__version__", *cproducer._LAZY}
    for name in cproducer._LAZY:
        assert getattr(cproducer, name).__name__ == name
