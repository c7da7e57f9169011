"""kill -9 the real run at several points, resume it, and compare with an uninterrupted run.

The run is the real CLI in a subprocess (tiny random model, HF engine, GRPO trainer,
sandbox, SQLite). Its memory pool is a "lottery" game whose outcome depends only on the
episode seed, so every step has GRPO signal and the episodes of a resumed run must equal
those of an uninterrupted run exactly.
"""

from __future__ import annotations

import itertools
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from spade_async.testing import LOTTERY_ENV

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]

LOTTERY = LOTTERY_ENV


def overrides(run_dir: Path, pool: Path, model: Path) -> list[str]:
    values = {
        "model.name": f'"{model}"',
        "run.run_dir": f'"{run_dir}"',
        "run.max_steps": "4",
        "run.checkpoint_every": "1",
        "run.keep_checkpoints": "10",
        "selfplay.fixed_pool": f'"{pool}"',
        "selfplay.plays": "4",
        "selfplay.hinted_plays": "2",
        "selfplay.max_turns": "2",
        "selfplay.repair_turns": "0",
        "selfplay.separate_hint_call": "false",
        "engine.designer.max_new_tokens": "24",
        "engine.hint.max_new_tokens": "8",
        "engine.agent.max_new_tokens": "4",
        "corpus.max_chars": "200",
        "memory.embed_model": '"hashing"',
        "warmstart.enabled": "false",  # the shipped warm start is the embedded model's, not the tiny model's
    }
    return [arg for k, v in values.items() for arg in ("--set", f"{k}={v}")]


def spade(
    run_dir: Path, pool: Path, model: Path, *, resume: bool = False, kill_at: str | None = None
) -> subprocess.CompletedProcess[str]:
    cmd = [
        sys.executable,
        "-m",
        "spade_async.cli",
        "run",
        str(ROOT / "configs" / "tiny.toml"),
        "--headless",
        *overrides(run_dir, pool, model),
        *(["--resume"] if resume else []),
    ]
    env = {k: v for k, v in os.environ.items() if k != "SPADE_ASYNC_KILL_AT"}
    if kill_at:
        env["SPADE_ASYNC_KILL_AT"] = kill_at
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600, cwd=ROOT)


def query(db: Path, sql: str) -> list[tuple]:
    with sqlite3.connect(db) as conn:
        return conn.execute(sql).fetchall()


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory, tiny_model_dir: Path) -> tuple[Path, Path, Path]:
    root = tmp_path_factory.mktemp("killres")
    pool = root / "pool"
    pool.mkdir()
    (pool / "lottery.py").write_text(LOTTERY)
    reference = root / "reference"
    done = spade(reference, pool, tiny_model_dir)
    assert done.returncode == 0, done.stderr[-2000:]
    return root, pool, tiny_model_dir


EPISODES = "SELECT step, env_id, hinted, outcome FROM episodes ORDER BY step, env_id, hinted, outcome"


@pytest.mark.parametrize(
    "kill_at",
    ["generate:15", "learn:3", "checkpoint_files:2", "checkpoint_commit:3"],
    ids=["during-generation", "during-learner-step", "during-checkpoint-write", "before-checkpoint-commit"],
)
def test_kill_9_then_resume_loses_nothing(setup: tuple[Path, Path, Path], kill_at: str) -> None:
    root, pool, model = setup
    run_dir = root / kill_at.replace(":", "-")
    killed = spade(run_dir, pool, model, kill_at=kill_at)
    assert killed.returncode == -9, killed.stderr[-2000:]
    db = run_dir / "run.sqlite"
    assert query(db, "PRAGMA integrity_check") == [("ok",)]
    ckpt = query(db, "SELECT max(step) FROM checkpoints")[0][0]
    # The producer runs a step ahead, so an early kill point can land before the first
    # checkpoint commits; both cases must resume to the same end state.
    assert ckpt is None or ckpt < 3
    # Every committed checkpoint row points at a complete folder.
    for (path,) in query(db, "SELECT path FROM checkpoints"):
        assert (Path(path) / "state.json").is_file() and (Path(path) / "adapter").is_dir()

    resumed = spade(run_dir, pool, model, resume=True)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    if ckpt is None:
        assert "no complete checkpoint yet: starting the run again from step 1" in resumed.stdout
    else:
        assert f"resuming at step {ckpt + 2}" in resumed.stdout
    assert query(db, "PRAGMA integrity_check") == [("ok",)]
    steps = query(db, "SELECT step, adapter_version FROM steps ORDER BY step")
    assert [s for s, _ in steps] == [0, 1, 2, 3]
    versions = [v for _, v in steps]
    assert all(b - a in (0, 1) for a, b in itertools.pairwise(versions))
    # Nothing lost, nothing doubled: the episodes equal those of the uninterrupted run.
    assert query(db, EPISODES) == query(root / "reference" / "run.sqlite", EPISODES)
    assert versions == [
        v for _, v in query(root / "reference" / "run.sqlite", "SELECT step, adapter_version FROM steps ORDER BY step")
    ]
    assert query(db, "SELECT count(*) FROM events WHERE kind = 'resume'") == [(0 if ckpt is None else 1,)]
    assert query(db, "SELECT status FROM runs") == [("finished",)]


@pytest.mark.anyio
async def test_resume_restores_the_saved_rng_and_cursor_state(setup: tuple[Path, Path, Path]) -> None:
    from spade_async.run.assemble import load_run_config, open_run
    from spade_async.run.checkpoint import read_checkpoint, rng_states

    root, pool, model = setup
    run_dir = root / "rng"
    assert spade(run_dir, pool, model, kill_at="learn:3").returncode == -9
    step, path = query(run_dir / "run.sqlite", "SELECT step, path FROM checkpoints ORDER BY step DESC LIMIT 1")[0]
    saved = read_checkpoint(Path(path))
    cfg = load_run_config(run_dir)
    async with open_run(cfg, resume=True, report=lambda s: None) as pipeline:
        assert pipeline.start_step == step + 1
        now = pipeline.snapshot()
        assert now["corpus"] == saved["snapshot"]["corpus"]
        assert now["curriculum"]["rng"] == saved["snapshot"]["curriculum"]["rng"]
        assert now["curriculum"]["design_rng"] == saved["snapshot"]["curriculum"]["design_rng"]
        assert now["curriculum"]["skill_cycle"] == saved["snapshot"]["curriculum"]["skill_cycle"]
        assert now["engine_rng"] == saved["snapshot"]["engine_rng"]
        assert rng_states()["python"] == saved["rng"]["python"]
        assert pipeline.learner.version == saved["learner"]["version"] == pipeline.engine.adapter_version
        # The learner's weights and optimizer are the checkpoint's, not only its version number.
        import torch

        now_learner = pipeline.learner.state_dict()
        assert now_learner["adapter"].keys() == saved["learner"]["adapter"].keys()
        assert all(
            torch.equal(now_learner["adapter"][k], saved["learner"]["adapter"][k]) for k in now_learner["adapter"]
        )
        assert any(float(v.abs().max()) > 0 for k, v in saved["learner"]["adapter"].items() if "lora_B" in k)  # trained
        now_opt, saved_opt = now_learner["optimizer"], saved["learner"]["optimizer"]
        assert now_opt["param_groups"] == saved_opt["param_groups"] and saved_opt["state"]
        assert now_opt["state"].keys() == saved_opt["state"].keys()
        for key, moments in saved_opt["state"].items():
            assert all(torch.equal(now_opt["state"][key][name], value) for name, value in moments.items())


def test_ctrl_c_checkpoints_the_last_step_and_exits_0(setup: tuple[Path, Path, Path]) -> None:
    import signal
    import time

    root, pool, model = setup
    run_dir = root / "ctrl-c"
    cmd = [
        sys.executable,
        "-m",
        "spade_async.cli",
        "run",
        str(ROOT / "configs" / "tiny.toml"),
        "--headless",
        *overrides(run_dir, pool, model),
        "--set",
        "run.max_steps=50",
        "--set",
        "run.checkpoint_every=100",
    ]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.pop("SPADE_ASYNC_KILL_AT", None)
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    assert proc.stdout is not None
    deadline = time.monotonic() + 300
    for line in proc.stdout:
        if line.startswith("step    1 |") or time.monotonic() > deadline:
            break
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err[-2000:]
    assert "stopping after the current step" in out
    db = run_dir / "run.sqlite"
    last = query(db, "SELECT max(step) FROM steps")[0][0]
    assert query(db, "SELECT max(step) FROM checkpoints")[0][0] == last  # nothing to redo
    assert query(db, "SELECT status FROM runs") == [("interrupted",)]


def test_unexpected_error_is_one_clear_line_and_resumable(setup: tuple[Path, Path, Path]) -> None:
    root, pool, model = setup
    run_dir = root / "error"
    env_var = {"SPADE_ASYNC_RAISE_AT": "learn:3"}
    cmd = [
        sys.executable,
        "-m",
        "spade_async.cli",
        "run",
        str(ROOT / "configs" / "tiny.toml"),
        "--headless",
        *overrides(run_dir, pool, model),
    ]
    failed = subprocess.run(cmd, env={**os.environ, **env_var}, capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert failed.returncode == 1
    assert "error: InjectedFailure: injected failure at learn" in failed.stderr
    assert "Traceback" not in failed.stderr and "Traceback" in (run_dir / "error.log").read_text()
    assert query(run_dir / "run.sqlite", "SELECT status FROM runs") == [("failed",)]
    resumed = spade(run_dir, pool, model, resume=True)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert query(run_dir / "run.sqlite", "SELECT count(*) FROM steps") == [(4,)]


def test_a_run_killed_before_its_first_checkpoint_starts_over_in_the_same_folder(
    setup: tuple[Path, Path, Path],
) -> None:
    root, pool, model = setup
    run_dir = root / "first-step"
    killed = spade(run_dir, pool, model, kill_at="generate:3")  # inside step 1, no checkpoint yet
    assert killed.returncode == -9
    again = spade(run_dir, pool, model)
    assert again.returncode == 2  # a usage problem: the folder holds a run and --resume was not given
    assert "already holds a run; --resume continues it" in again.stderr and "from step 1" in again.stderr
    resumed = spade(run_dir, pool, model, resume=True)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert "no complete checkpoint yet: starting the run again from step 1 in the same folder" in resumed.stdout
    db = run_dir / "run.sqlite"
    assert query(db, "SELECT step FROM steps ORDER BY step") == [(0,), (1,), (2,), (3,)]
    assert query(db, EPISODES) == query(root / "reference" / "run.sqlite", EPISODES)
    assert query(db, "SELECT count(*), max(status) FROM runs") == [(1, "finished")]


def test_resuming_a_finished_run_has_nothing_to_do_and_stays_finished(setup: tuple[Path, Path, Path]) -> None:
    root, pool, model = setup
    db = root / "reference" / "run.sqlite"
    events_before = query(db, "SELECT count(*) FROM events")
    again = spade(root / "reference", pool, model, resume=True)
    assert again.returncode == 0, again.stderr[-2000:]
    assert "nothing to do" in again.stdout
    assert query(db, "SELECT status FROM runs") == [("finished",)]
    assert query(db, "SELECT count(*) FROM events") == events_before


def test_killed_at_random_moments_and_resumed_each_time_finishes_exactly_once(setup: tuple[Path, Path, Path]) -> None:
    """kill -9 from outside at random moments (the first step included), resume each time."""
    import random
    import signal
    import tempfile

    root, pool, model = setup
    run_dir = root / "random-kills"
    rng = random.Random(int(os.environ.get("SPADE_KILL_SEED", "20261130")))
    cmd = [
        sys.executable,
        "-m",
        "spade_async.cli",
        "run",
        str(ROOT / "configs" / "tiny.toml"),
        "--headless",
        *overrides(run_dir, pool, model),
    ]
    env = {k: v for k, v in os.environ.items() if k not in ("SPADE_ASYNC_KILL_AT", "SPADE_ASYNC_RAISE_AT")}
    env["PYTHONUNBUFFERED"] = "1"
    kills = 0
    for attempt in range(6):
        started = (run_dir / "config.toml").exists()  # killed before that: nothing to resume, start it
        with tempfile.TemporaryFile("w+") as errors:
            proc = subprocess.Popen(
                [*cmd, *(["--resume"] if started else [])],
                env=env,
                stdout=subprocess.PIPE,
                stderr=errors,
                text=True,
                cwd=ROOT,
            )
            assert proc.stdout is not None
            # A random moment, placed by the run's own progress (not by a timer, which load
            # would skew): after its k-th console line (start-up messages, "running steps",
            # one line per step) plus up to a second. The first attempt dies at start-up or
            # inside step 1: k <= 4 stops at the latest on "running steps".
            k = rng.randint(0, 4 if attempt == 0 else 8)
            for _ in range(k):
                if not proc.stdout.readline():
                    break
            time.sleep(rng.uniform(0.0, 1.0))
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
                proc.communicate()
                kills += 1
                db = run_dir / "run.sqlite"
                if db.exists():
                    assert query(db, "PRAGMA integrity_check") == [("ok",)]
                continue
            proc.communicate()
            errors.seek(0)
            assert proc.returncode == 0, errors.read()[-2000:]
        break
    else:  # past the kill budget: let it finish
        final = spade(run_dir, pool, model, resume=(run_dir / "config.toml").exists())
        assert final.returncode == 0, final.stderr[-2000:]
    assert kills >= 1
    db = run_dir / "run.sqlite"
    reference = root / "reference" / "run.sqlite"
    assert query(db, "PRAGMA integrity_check") == [("ok",)]
    assert query(db, "SELECT step FROM steps ORDER BY step") == [(0,), (1,), (2,), (3,)]  # every step once
    assert query(db, EPISODES) == query(reference, EPISODES)  # no duplicate or missing episode
    versions = [v for (v,) in query(db, "SELECT adapter_version FROM steps ORDER BY step")]
    assert versions == [v for (v,) in query(reference, "SELECT adapter_version FROM steps ORDER BY step")]
    assert all(b - a in (0, 1) for a, b in itertools.pairwise(versions))  # continuous
    assert query(db, "SELECT status FROM runs") == [("finished",)]


POLICY_GAME = """SKILL = "Pattern Recognition"
HINT = "Answers whose characters add up to an even number win."
DESCRIPTION = "The outcome depends on what the player writes."


class Parity(GameEnv):
    max_turns = 2

    def reset(self, seed=None):
        self.seed_rng(seed)
        return "Say anything in \\\\boxed{...}.", {}

    def step(self, action):
        self.turn += 1
        won = sum(map(ord, action)) % 2 == 0
        return ("You won." if won else "You lost."), (1.0 if won else 0.0), True, False, {}
"""


@pytest.mark.parametrize("adapters", ["shared", "per_role"])
def test_sync_resume_reproduces_the_run_on_a_game_the_policy_decides(
    tmp_path: Path, tiny_model_dir: Path, adapters: str
) -> None:
    """kill -9 inside step 3's learner step, resume: episodes (whose outcomes depend on the sampled
    text, so on the restored weights), per-step learner metrics and the final adapter equal the
    uninterrupted run's. ``--sync``: with overlap, which adapter generated a step depends on timing,
    so only a sequential run is reproducible step for step. Agent turns sample with their own
    seeds (``selfplay.seeded_sampling``); what remains is float noise from batch composition.
    With ``learner.adapters = "per_role"`` the designer's own weights (trained here by the warm
    start's replay) come back from the checkpoint too, and stay apart from the agent's."""
    import json

    from safetensors.torch import load_file

    pool = tmp_path / "pool"
    pool.mkdir()
    (pool / "parity.py").write_text(POLICY_GAME)

    def run(run_dir: Path, **kw: object) -> subprocess.CompletedProcess[str]:
        cmd = [
            sys.executable,
            "-m",
            "spade_async.cli",
            "run",
            str(ROOT / "configs" / "tiny.toml"),
            "--headless",
            "--sync",
            *overrides(run_dir, pool, tiny_model_dir),
            # float32 whatever the CPU: the bounds below are float32 batch-composition noise
            *("--set", 'model.dtype="float32"'),
            *("--set", f'learner.adapters="{adapters}"'),
            *(["--resume"] if kw.get("resume") else []),
        ]
        env = {k: v for k, v in os.environ.items() if k != "SPADE_ASYNC_KILL_AT"}
        if kw.get("kill_at"):
            env["SPADE_ASYNC_KILL_AT"] = str(kw["kill_at"])
        return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900, cwd=ROOT)

    reference, resumed = tmp_path / "reference", tmp_path / "resumed"
    assert run(reference).returncode == 0
    assert run(resumed, kill_at="learn:3").returncode == -9
    assert query(resumed / "run.sqlite", "SELECT max(step) FROM checkpoints") == [(1,)]
    done = run(resumed, resume=True)
    assert done.returncode == 0, done.stderr[-2000:]
    transcripts = (
        "SELECT step, env_id, hinted, outcome, transcript FROM episodes ORDER BY step, env_id, hinted, transcript"
    )
    episodes = query(reference / "run.sqlite", transcripts)
    assert {o for *_, o, _ in episodes} == {0.0, 1.0}  # the policy's text decides: both outcomes occur
    assert query(resumed / "run.sqlite", transcripts) == episodes

    def learner_metrics(run_dir: Path) -> list[dict[str, float]]:
        keys = ("loss", "grad_norm", "tokens", "n_samples", "ratio_mean", "clip_fraction")
        return [
            {k: json.loads(m)[k] for k in keys}
            for (m,) in query(run_dir / "run.sqlite", "SELECT metrics FROM steps ORDER BY step")
        ]

    ref_metrics, res_metrics = learner_metrics(reference), learner_metrics(resumed)
    assert len(ref_metrics) == len(res_metrics) == 4
    for a, b in zip(ref_metrics, res_metrics, strict=True):
        assert a["tokens"] == b["tokens"] and a["n_samples"] == b["n_samples"]
        for key in ("loss", "grad_norm", "ratio_mean", "clip_fraction"):
            assert b[key] == pytest.approx(a[key], rel=1e-4, abs=1e-5), (key, a, b)
    last = max(int(p.name[1:]) for p in (reference / "adapters").iterdir())
    ref_w = load_file(str(reference / "adapters" / f"v{last}" / "adapter_model.safetensors"))
    res_w = load_file(str(resumed / "adapters" / f"v{last}" / "adapter_model.safetensors"))
    assert ref_w.keys() == res_w.keys()
    # Float noise from batch composition only (measured up to ~1e-6 at lr 5e-4; tiny.toml has 1e-3, and
    # one warm-start replay step after each update, warmstart.replay: measured 1.4e-5); an adapter that
    # was not restored differs by orders of magnitude more.
    assert max(float((ref_w[k] - res_w[k]).abs().max()) for k in ref_w) < 5e-5
    designer = Path("adapters", f"v{last}", "designer", "adapter_model.safetensors")
    assert (reference / designer).exists() == (resumed / designer).exists() == (adapters == "per_role")
    if adapters == "per_role":
        ref_d, res_d = load_file(str(reference / designer)), load_file(str(resumed / designer))
        assert max(float((ref_d[k] - res_d[k]).abs().max()) for k in ref_d) < 5e-5
        assert max(float((ref_d[k] - ref_w[k]).abs().max()) for k in ref_d) > 1e-3  # two sets of weights
