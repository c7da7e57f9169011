"""Package discovery that pyproject.toml cannot express (everything else is in pyproject.toml).

`spade_async.configs` is the top-level configs/ folder mapped into the package (see
[tool.setuptools.package-dir]); automatic discovery only finds folders under spade_async/,
so it is added here. Namespace discovery also picks up data-only folders (envs/seeds/easy)
without warnings, and new subpackages need no edit.
"""

from setuptools import find_namespace_packages, setup  # type: ignore[import-untyped]

setup(
    packages=[
        *find_namespace_packages(include=["spade_async*", "tui*"], exclude=["*.__pycache__"]),
        "spade_async.configs",
    ]
)
