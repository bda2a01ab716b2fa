"""What every generator in ``tools/`` does with the files it makes: write the ones that differ,
or, with ``--check``, only name them and exit 1 (the tests and CI call the check)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Dict, List, Optional


def main(description: str, outputs: Dict[Path, str], root: Path, argv: Optional[List[str]]) -> int:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--check", action="store_true", help="only compare, write nothing")
    args = parser.parse_args(argv)
    stale = []
    for path, text in outputs.items():
        old = path.read_text() if path.exists() else None
        if old != text:
            stale.append(path)
            if not args.check:
                path.write_text(text)
    for path in stale:
        print(f"{'stale' if args.check else 'wrote'}: {path.relative_to(root)}")
    return 1 if args.check and stale else 0
