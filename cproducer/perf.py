"""The perf test moved to :mod:`cproducer.tools.perf`; this path stays as its alias
(``python -m cproducer.perf`` runs it)."""

import sys

from cproducer.tools import perf as _moved
from cproducer.tools.perf import *  # noqa: F403  (what type checkers see through the old path)

if __name__ == "__main__":
    sys.exit(_moved.main())
sys.modules[__name__] = _moved
