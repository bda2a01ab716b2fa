"""The local broker moved to :mod:`cproducer.tools.localbroker`; this path stays as its alias
(``python -m cproducer.localbroker`` runs it)."""

import sys

from cproducer.tools import localbroker as _moved
from cproducer.tools.localbroker import *  # noqa: F403  (what type checkers see through the old path)

if __name__ == "__main__":
    sys.exit(_moved.main())
sys.modules[__name__] = _moved
