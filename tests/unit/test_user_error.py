"""Every error meant for a person derives from one base, and is caught once: in the CLI's
command group and in the headless run's console (``launch_run``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

import spade_async.run.assemble as assemble
from spade_async.cli import cli
from spade_async.cluster.errors import ClusterError
from spade_async.config import ConfigError, load_config
from spade_async.engine.embedded import EmbeddedModelError
from spade_async.eval.models import ModelSpecError
from spade_async.eval.suites import SuiteError
from spade_async.export.adapter import ExportError
from spade_async.hardware.placement import PlacementError
from spade_async.memory.embed import EmbedError
from spade_async.memory.steering import SteerError
from spade_async.memory.store import StoreError
from spade_async.run.assemble import RunError
from spade_async.sandbox.errors import IsolationTooLow
from spade_async.selfplay.design.corpus import CorpusError
from spade_async.selfplay.design.designer import PromptTooLong
from spade_async.selfplay.prompts import PromptError
from spade_async.tracking.sinks import TrackingError
from spade_async.util.errors import UserError

CONFIGS = Path(__file__).resolve().parents[2] / "configs"

PERSON_FACING = [
    ClusterError,
    ConfigError,
    EmbeddedModelError,
    ModelSpecError,
    SuiteError,
    ExportError,
    PlacementError,
    EmbedError,
    SteerError,
    StoreError,
    RunError,
    IsolationTooLow,
    CorpusError,
    PromptTooLong,
    PromptError,
    TrackingError,
]


@pytest.mark.parametrize("error", PERSON_FACING, ids=lambda e: e.__name__)
def test_every_person_facing_error_is_a_user_error(error: type[Exception]) -> None:
    assert issubclass(error, UserError)


def test_bad_input_exits_2_and_a_failed_start_exits_1() -> None:
    assert ConfigError(["x"]).exit_code == ModelSpecError().exit_code == SuiteError().exit_code == 2
    assert RunError().exit_code == ClusterError().exit_code == 1


def test_a_user_error_from_any_command_is_one_line_with_its_exit_status(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_gpu(cfg: object) -> None:
        raise PlacementError("model.qlora needs a CUDA GPU; none is visible")

    monkeypatch.setattr(assemble, "preflight", no_gpu)
    result = CliRunner().invoke(cli, ["run", str(CONFIGS / "tiny.toml"), "--headless"])
    assert result.exit_code == 1, result.output
    assert result.output.strip() == "error: model.qlora needs a CUDA GPU; none is visible"
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_the_headless_console_prints_a_user_error_without_a_traceback(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    async def bad_config(*args: object, **kwargs: object) -> int:
        raise ConfigError(["run.max_steps: must be > 0"])

    monkeypatch.setattr(assemble, "run_pipeline", bad_config)
    cfg = load_config(CONFIGS / "tiny.toml", [f'run.run_dir="{tmp_path / "run"}"'])
    assert assemble.launch_run(cfg, sync=True, resume=False, force=False) == 2
    err = capsys.readouterr().err
    assert err.strip() == "error: run.max_steps: must be > 0"
    assert not (tmp_path / "run").exists()  # no crash log written for a person's mistake
