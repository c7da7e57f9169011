"""Quiet hides the libraries' FutureWarnings, DeprecationWarnings and UserWarnings, and never
ours; verbose hides nothing. Checked in-process with warnings raised as if from inside the
libraries, so no library version decides whether there is a warning to hide."""

from __future__ import annotations

import os
import warnings

import pytest

from spade_async.util.quiet import QUIET_ENV, VERBOSE_ENV, quiet_libraries


def shown_after(verbose: bool) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        quiet_libraries(verbose)
        for category, module in (
            (FutureWarning, "transformers.modeling_utils"),
            (DeprecationWarning, "peft.tuners"),
            (UserWarning, "torch.nn.modules"),
            (UserWarning, "spade_async.run.assemble"),  # ours: never hidden
        ):
            warnings.warn_explicit(f"{category.__name__} from {module}", category, "x.py", 1, module=module)
    return [str(w.message) for w in caught]


@pytest.fixture(autouse=True)
def _restore_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (VERBOSE_ENV, *QUIET_ENV):  # quiet_libraries sets these; the test puts them back
        monkeypatch.setenv(name, os.environ.get(name, ""))
        monkeypatch.delenv(name)


def test_quiet_hides_the_libraries_warnings_and_not_ours() -> None:
    assert shown_after(verbose=False) == ["UserWarning from spade_async.run.assemble"]


def test_verbose_hides_nothing() -> None:
    assert shown_after(verbose=True) == [
        "FutureWarning from transformers.modeling_utils",
        "DeprecationWarning from peft.tuners",
        "UserWarning from torch.nn.modules",
        "UserWarning from spade_async.run.assemble",
    ]
