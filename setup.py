"""Build script: every ``cproducer/*.pyx`` becomes an extension module.

``CPRODUCER_EXT=_crc32c,_records python setup.py build_ext --inplace`` builds only the named modules
(handy while working on one of them).
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
for path in sorted(glob.glob(os.path.join("cproducer", "*.pyx"))):
    name = os.path.splitext(os.path.basename(path))[0]
    if only and name not in only:
        continue
    extensions.append(
        Extension(
            "cproducer." + name,
            [path],
            include_dirs=[numpy.get_include(), "cproducer"],
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
