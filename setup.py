"""Package discovery that pyproject.toml cannot express (everything else is in pyproject.toml).

`spade_async.configs` is the top-level configs/ folder mapped into the package, and
`spade_async_tui` the top-level tui/ folder (see [tool.setuptools.package-dir]); automatic
discovery only finds folders under spade_async/, so they are added here. Namespace discovery also picks up data-only folders (envs/seeds/easy)
without warnings, and new subpackages need no edit.
"""

import atexit
import shutil
import tempfile

from setuptools import find_namespace_packages, setup  # type: ignore[import-untyped]

# `pip install /path/to/checkout` and `pip wheel` build in the checkout itself; setuptools would
# leave build/ and spade_async.egg-info/ there. Both go to a scratch folder of this build
# process instead (removed when it exits), so building never writes into the checkout.
_scratch = tempfile.mkdtemp(prefix="spade-async-build-")
atexit.register(shutil.rmtree, _scratch, True)

setup(
    options={"build": {"build_base": f"{_scratch}/build"}, "egg_info": {"egg_base": _scratch}},
    packages=[
        *find_namespace_packages(include=["spade_async", "spade_async.*"], exclude=["*.__pycache__"]),
        "spade_async.configs",
        *(
            f"spade_async_tui{name[3:]}"
            for name in find_namespace_packages(include=["tui", "tui.*"], exclude=["*.__pycache__"])
        ),
    ],
)
