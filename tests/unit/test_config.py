"""Config: every shipped TOML parses; every bad-config fixture gives its expected message."""

from __future__ import annotations

from pathlib import Path

import pytest

from spade_async.config import (
    Config,
    ConfigError,
    config_to_toml,
    load_config,
    parse_override,
    validate_config,
)
from spade_async.run.assemble import RunError, check_eval_suite

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = sorted((ROOT / "configs").glob("*.toml"))
BAD = sorted((ROOT / "tests" / "fixtures" / "configs").glob("*.toml"))


def test_configs_are_shipped() -> None:
    names = {p.name for p in SHIPPED}
    assert {"tiny.toml", "games.toml", "tool_use.toml", "games_qwen3_4b.toml", "games_qwen3_8b.toml"} <= names


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_shipped_config_parses(path: Path) -> None:
    cfg = load_config(path)
    assert isinstance(cfg, Config)
    # The resolved TOML round-trips to the same config.
    assert validate_config(__import__("tomllib").loads(config_to_toml(cfg))) == cfg


def test_games_is_the_paper_recipe() -> None:
    cfg = load_config(ROOT / "configs" / "games.toml")
    sp = cfg.selfplay
    assert (sp.plays, sp.hinted_plays, sp.envs_per_step, sp.regen_every) == (16, 16, 24, 4)
    assert cfg.run.max_steps == 400
    assert cfg.engine.hint.temperature == 0.3
    assert (sp.regret_scale, sp.plateau_low, sp.plateau_high, sp.plateau_ramp) == (0.15, 0.4, 0.6, 0.25)
    assert (sp.regret_weight, sp.plateau_weight, sp.invalid_penalty, sp.tis_cap) == (0.4, 0.6, -0.5, 2.0)
    assert load_config(ROOT / "configs" / "tool_use.toml").selfplay.regen_every == 8


def test_tool_use_configs() -> None:
    gpu = load_config(ROOT / "configs" / "tool_use.toml")
    assert (gpu.selfplay.domain, gpu.selfplay.regen_every, gpu.learner.kl_coef) == ("tool_use", 8, 0.005)
    assert (gpu.selfplay.plays, gpu.selfplay.hinted_plays, gpu.run.device) == (16, 16, "cuda")
    cpu = load_config(ROOT / "configs" / "tool_use_tiny.toml")
    assert (cpu.selfplay.domain, cpu.run.device, cpu.memory.seed_tier) == ("tool_use", "cpu", "easy")
    assert cpu.engine.agent.stop == ["</tool_call>"] and cpu.selfplay.action_prefill


@pytest.mark.parametrize("path", BAD, ids=lambda p: p.name)
def test_bad_config_message(path: Path) -> None:
    expected = path.read_text().splitlines()[0].removeprefix("# expect: ")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert any(expected in line for line in info.value.problems), info.value.problems


def test_every_problem_is_reported_once_per_line(tmp_path: Path) -> None:
    bad = tmp_path / "two.toml"
    bad.write_text("[run]\nmax_step = 1\n[selfplay]\nplays = -1\n")
    with pytest.raises(ConfigError) as info:
        load_config(bad)
    assert len(info.value.problems) == 2


def test_missing_file() -> None:
    with pytest.raises(ConfigError, match="no such config file"):
        load_config("does/not/exist.toml")


@pytest.mark.parametrize(
    ("text", "key", "value"),
    [
        ("run.max_steps=3", ["run", "max_steps"], 3),
        ('run.run_dir="runs/a"', ["run", "run_dir"], "runs/a"),
        ("run.name=plain words", ["run", "name"], "plain words"),
        ("model.lora_targets=['q_proj']", ["model", "lora_targets"], ["q_proj"]),
        ("learner.lr=1e-4", ["learner", "lr"], 1e-4),
    ],
)
def test_override_values_are_toml_or_plain_strings(text: str, key: list[str], value: object) -> None:
    assert parse_override(text) == (key, value)


def test_override_applies_and_validates() -> None:
    cfg = load_config(ROOT / "configs" / "tiny.toml", ["run.max_steps=3", "selfplay.plays=2"])
    assert (cfg.run.max_steps, cfg.selfplay.plays) == (3, 2)
    with pytest.raises(ConfigError, match=r"selfplay\.playz: unknown key; did you mean 'plays'"):
        load_config(ROOT / "configs" / "tiny.toml", ["selfplay.playz=2"])
    with pytest.raises(ConfigError, match="expected KEY=VALUE"):
        load_config(ROOT / "configs" / "tiny.toml", ["selfplay.plays"])


def test_every_field_has_a_docstring() -> None:
    def walk(model: type) -> list[str]:
        missing = []
        for name, field in model.model_fields.items():
            if not field.description:
                missing.append(f"{model.__name__}.{name}")
            ann = field.annotation
            if isinstance(ann, type) and hasattr(ann, "model_fields"):
                missing += walk(ann)
        return missing

    assert walk(Config) == []


def test_kl_default_follows_the_domain_unless_set() -> None:
    from spade_async.config import validate_config

    assert validate_config({"selfplay": {"domain": "tool_use"}}).learner.kl_coef == 0.005
    assert validate_config({"selfplay": {"domain": "games"}}).learner.kl_coef == 0.0
    assert validate_config({}).learner.kl_coef == 0.0
    assert validate_config({"selfplay": {"domain": "tool_use"}, "learner": {"kl_coef": 0.0}}).learner.kl_coef == 0.0
    assert load_config(ROOT / "configs" / "tool_use.toml").learner.kl_coef == 0.005


def test_in_loop_eval_is_off_by_default_and_validated_only_when_on(tmp_path: Path) -> None:
    cfg = load_config(ROOT / "configs" / "tiny.toml")
    assert (cfg.eval.every, cfg.eval.suite, cfg.eval.split) == (0, "games:easy", "dev")
    assert (
        load_config(ROOT / "configs" / "tiny.toml", ['eval.suite="nonsense"']).eval.suite == "nonsense"
    )  # off: unused
    from spade_async.testing import COIN_ENV

    (tmp_path / "coin.py").write_text(COIN_ENV)
    on = load_config(ROOT / "configs" / "tiny.toml", ["eval.every=5", f'eval.suite="envs:{tmp_path}"'])
    assert on.eval.every == 5
    # The suite is built by the run's preflight (launch.check_eval_suite), not by config: configuration
    # imports no stage (tests/unit/test_layering.py).
    missing = load_config(ROOT / "configs" / "tiny.toml", ["eval.every=5", f'eval.suite="envs:{tmp_path / "missing"}"'])
    with pytest.raises(RunError, match=r"eval\.suite: suite envs: .*missing"):
        check_eval_suite(missing)
    check_eval_suite(on)
    with pytest.raises(ConfigError, match=r"eval\.every: Input should be greater than or equal to 0"):
        load_config(ROOT / "configs" / "tiny.toml", ["eval.every=-1"])


def test_in_loop_eval_is_on_in_the_gpu_presets_only() -> None:
    on = {p.name for p in SHIPPED if load_config(p).eval.every}
    assert on == {"games_qwen3_4b.toml", "games_qwen3_8b.toml", "games_qwen3_8b_4gpu.toml"}
    assert all(load_config(ROOT / "configs" / name).eval.split == "dev" for name in on)


def test_top_p_below_one_is_refused_for_trained_roles_only(tmp_path: Path) -> None:
    hint_only = tmp_path / "hint.toml"
    hint_only.write_text("[engine.hint]\ntop_p = 0.5\n")
    assert load_config(hint_only).engine.hint.top_p == 0.5  # hints are not trained on
    designer = tmp_path / "designer.toml"
    designer.write_text("[engine.designer]\ntop_p = 0.95\n")
    with pytest.raises(ConfigError) as info:
        load_config(designer)
    assert any(
        "engine.designer.top_p = 0.95" in line and "engine.designer.top_p = 1.0" in line for line in info.value.problems
    )
