"""Build script: every ``.pyx`` under ``cproducer/`` becomes an extension module of that name
(``cproducer/utils/crc32c.pyx`` is ``cproducer.utils.crc32c``).

``CPRODUCER_EXT=crc32c,record_batch_builder python setup.py build_ext --inplace`` builds only the
named modules (handy while working on one of them).
"""

import glob
import os
import sys

import numpy
from Cython.Build import cythonize
from setuptools import Extension, setup

only = {name for name in os.environ.get("CPRODUCER_EXT", "").split(",") if name}
extra_compile_args = [] if sys.platform == "win32" else ["-O3", "-fno-strict-aliasing"]

extensions = []
for path in sorted(glob.glob(os.path.join("cproducer", "**", "*.pyx"), recursive=True)):
    module = os.path.splitext(path)[0].replace(os.sep, ".")
    if only and module.rsplit(".", 1)[1] not in only:
        continue
    extensions.append(
        Extension(
            module,
            [path],
            include_dirs=[numpy.get_include(), os.path.join("cproducer", "utils")],
            define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
            extra_compile_args=extra_compile_args,
        )
    )

setup(
    ext_modules=cythonize(
        extensions,
        language_level=3,
        compiler_directives={
            "boundscheck": False,
            "wraparound": False,
            "cdivision": True,
            "embedsignature": True,
        },
    ),
)
