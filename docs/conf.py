"""Sphinx configuration of the documentation site (``./dev.sh docs`` builds it, warnings are
errors). The reference pages are generated from the code at build time by ``_ext/cproducer_docs``:
the configuration table from ``cproducer.producer.config``, the error tables from
``cproducer.errors``, the perf CLI's flags from its argument parser."""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "_ext"))
sys.path.insert(0, os.path.dirname(HERE))  # the source tree, built in place (./dev.sh setup)

from cproducer import __version__  # noqa: E402

project = "cproducer"
author = "the cproducer authors"
copyright = "the cproducer authors"
version = release = __version__

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.viewcode",
    "cproducer_docs",
]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build"]
myst_enable_extensions = ["colon_fence", "deflist", "substitution"]
myst_substitutions = {"release": release}
myst_heading_anchors = 3
# the reference tables show code-like text (quotes, --flags) exactly as the code has it
smartquotes = False

autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_typehints_description_target = "documented"
autodoc_default_options = {"members": True, "undoc-members": False}

html_theme = "furo"
html_title = f"cproducer {release}"
html_static_path = ["_static"]
html_css_files = ["cproducer.css"]
# the asv site (``asv publish``), copied under asv/ by ./dev.sh docs
html_extra_path = [p for p in [os.environ.get("CPRODUCER_DOCS_EXTRA")] if p]
