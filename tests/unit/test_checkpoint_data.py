"""Checkpoints as data: the curriculum and learner state round-trip through ``state.json`` +
``tensors.safetensors`` exactly, loading never unpickles, a newer format is refused, and the
legacy ``state.pt`` loader builds only allow-listed classes."""

from __future__ import annotations

import json
import pickle
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from spade_async.admission.validate import Promise, ValidationResult
from spade_async.config import SelfPlayConfig
from spade_async.engine.base import Completion
from spade_async.memory.records import EnvRecord
from spade_async.memory.retrieval import Example
from spade_async.run import checkpoint
from spade_async.run.checkpoint import CheckpointError, read_checkpoint, write_checkpoint
from spade_async.selfplay.curriculum import Curriculum, LiveEnv
from spade_async.selfplay.curriculum_data import (
    curriculum_state_from_data,
    curriculum_state_to_data,
)
from spade_async.selfplay.design.corpus import Document
from spade_async.selfplay.design.designer import Design, DesignJob

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "pre_layout_run"


def a_design(skill: str, *, admitted: bool = True) -> Design:
    parent = EnvRecord(
        code="class G: ...",
        domain="games",
        skill=skill,
        origin="fresh",
        created_step=1,
        reasons=["warn"],
        win_rate=0.5,
        n_plays=3,
        run_id=1,
    )
    job = DesignJob(
        skill=skill,
        doc=Document("d1", "Title", "text"),
        origin="mutation",
        parent=parent,
        examples=[Example(parent, "saturated")],
        change="add a rule",
    )
    validation = ValidationResult(
        admitted,
        ["r1"],
        {"reset": True, "step": False},
        True,
        None,
        "G",
        {"HINT": "h"},
        Promise(7, ("a", "b"), (("obs", 0.0, False, False), ("o2", 1.0, True, False))),
    )
    return Design(
        job=job,
        prompt_ids=[1, 2, 3],
        completion=Completion([1, 2, 3], [4, 5], [-0.25, -1.5], "xy", "stop", 2),
        code="code",
        hint="hint",
        admitted=admitted,
        reasons=["because"],
        validation=validation,
        attempts=2,
        origin="repair",
        copied=False,
    )


def a_curriculum() -> Curriculum:
    cur = Curriculum(SelfPlayConfig(), seed=3, designer_temperature=0.7, n_agent_samples_per_env=4)
    cur.next_skills()
    env = LiveEnv(
        "e1",
        "code",
        "hint",
        "Optimization",
        "fresh",
        2,
        design=a_design("Optimization"),
        plain={2: [1.0, 0.0], 3: [0.5]},
        hinted={2: [1.0]},
        errors=1,
    )
    cur.live = [env, LiveEnv("e2", "c2", None, "Logic", "memory", 0)]
    cur.rejected = [a_design("Logic", admitted=False)]
    cur.expelled = [LiveEnv("e3", "c3", None, "Logic", "fresh", 2, expelled="cheated")]
    cur.retired_early = [LiveEnv("e4", "c4", "h", "Logic", "fresh", 2, design=a_design("Logic"))]
    cur.joining = [LiveEnv("e5", "c5", None, "Logic", "injected", 4)]
    cur.pinned, cur.retired_by_hand, cur.design_share, cur.generation = {"e2"}, {"e4"}, 0.5, 3
    cur.set_band(0.2, 0.9)
    return cur


def test_the_curriculum_state_round_trips_through_json() -> None:
    state = a_curriculum().state()
    data = json.loads(json.dumps(curriculum_state_to_data(state)))
    assert curriculum_state_from_data(data) == state
    again = Curriculum(SelfPlayConfig(), seed=0, designer_temperature=0.7, n_agent_samples_per_env=4)
    again.load_state(curriculum_state_from_data(data))
    assert again.state() == state


class AdamLearner:
    """A learner with the Trainer's state layout over a real AdamW (moments, 0-dim step tensors)."""

    def __init__(self, seed: int = 0) -> None:
        torch.manual_seed(seed)
        self.model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Linear(3, 2))
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=1e-3, betas=(0.8, 0.99))
        self.version = 0

    def train_step(self, samples: list[Any]) -> dict[str, float]:
        self.optimizer.zero_grad()
        self.model(torch.randn(5, 4)).pow(2).sum().backward()
        self.optimizer.step()
        self.version += 1
        return {"loss": 0.0}

    def save_adapter(self, path: str | Path) -> None:
        Path(path).mkdir(parents=True, exist_ok=True)

    def state_dict(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "adapter": {k: v.detach().clone() for k, v in self.model.state_dict().items()},
            "optimizer": self.optimizer.state_dict(),
            "torch_rng": torch.get_rng_state(),
            "tis_cap": 2.0,
            "cuda_rng": [torch.get_rng_state()],
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.model.load_state_dict(state["adapter"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.version = int(state["version"])


def snapshot() -> dict[str, Any]:
    return {
        "curriculum": a_curriculum().state(),
        "corpus": {"seed": 1, "epoch": 0, "position": 3, "size": 9, "fingerprint": "f"},
        "engine_rng": {"python": [3, list(range(625)), None]},
        "stale_dropped": 2,
        "env_stats": {"e1": {"win_rate": 0.5, "status": "active", "updated_step": None}},
    }


def trained() -> AdamLearner:
    learner = AdamLearner()
    learner.train_step([])
    learner.train_step([])
    return learner


def written(tmp_path: Path) -> tuple[Path, AdamLearner]:
    learner = trained()
    return write_checkpoint(tmp_path, 4, learner=learner, snapshot=snapshot(), config_hash="abc"), learner


def test_a_checkpoint_is_json_and_safetensors_and_round_trips(tmp_path: Path) -> None:
    learner = trained()
    random.seed(11)
    np.random.seed(12)
    torch.manual_seed(13)
    before = checkpoint.rng_states()
    path = write_checkpoint(tmp_path, 4, learner=learner, snapshot=snapshot(), config_hash="abc")
    assert sorted(p.name for p in path.iterdir()) == ["adapter", "adapter_version", "state.json", "tensors.safetensors"]
    document = json.loads((path / "state.json").read_text())
    assert (document["format"], document["version"], document["step"]) == ("spade-async-checkpoint", 1, 4)
    state = read_checkpoint(path)
    assert state["step"] == 4 and state["config_hash"] == "abc"
    assert state["snapshot"] == snapshot()
    assert state["rng"]["python"] == before["python"]
    assert state["rng"]["numpy"][0] == before["numpy"][0] and np.array_equal(
        state["rng"]["numpy"][1], before["numpy"][1]
    )
    assert state["rng"]["numpy"][2:] == before["numpy"][2:] and torch.equal(state["rng"]["torch"], before["torch"])
    saved, now = state["learner"], learner.state_dict()
    assert saved["version"] == 2 and saved["tis_cap"] == 2.0 and torch.equal(saved["cuda_rng"][0], now["cuda_rng"][0])
    assert all(torch.equal(saved["adapter"][k], v) for k, v in now["adapter"].items())
    assert saved["optimizer"]["param_groups"] == now["optimizer"]["param_groups"]  # betas stay a tuple
    assert saved["optimizer"]["state"].keys() == now["optimizer"]["state"].keys()
    for key, moments in now["optimizer"]["state"].items():
        assert moments.keys() == saved["optimizer"]["state"][key].keys()
        assert all(
            torch.equal(saved["optimizer"]["state"][key][n], t) and saved["optimizer"]["state"][key][n].dtype == t.dtype
            for n, t in moments.items()
        )
    # A fresh learner loaded from it continues exactly like the original.
    fresh = AdamLearner(seed=5)
    fresh.load_state_dict(saved)
    torch.manual_seed(0)
    learner.train_step([])
    torch.manual_seed(0)
    fresh.train_step([])
    assert all(torch.equal(a, b) for a, b in zip(learner.model.parameters(), fresh.model.parameters(), strict=True))


def test_loading_a_checkpoint_never_unpickles(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path, _ = written(tmp_path)

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a data-format checkpoint must not be unpickled")

    for name in ("load", "loads", "Unpickler"):
        monkeypatch.setattr(pickle, name, refuse)
    monkeypatch.setattr(torch, "load", refuse)
    assert read_checkpoint(path)["learner"]["version"] == 2


def test_a_newer_format_version_is_refused(tmp_path: Path) -> None:
    path, _ = written(tmp_path)
    document = json.loads((path / "state.json").read_text())
    (path / "state.json").write_text(json.dumps({**document, "version": 2}))
    with pytest.raises(CheckpointError, match="newer spade-async"):
        read_checkpoint(path)


def test_the_legacy_fixture_loads_into_current_classes() -> None:
    state = read_checkpoint(FIXTURE / "checkpoints" / "step_2")
    assert state["step"] == 1
    curriculum = state["snapshot"]["curriculum"]
    assert curriculum["live"] and all(isinstance(e, LiveEnv) for e in curriculum["live"])
    assert all(isinstance(d, Design) and isinstance(d.job.doc, Document) for d in curriculum["rejected"])
    assert set(state["snapshot"]["engine_rng"]) == {"generator"}  # the HF generator's tensor, now base64 text
    assert isinstance(state["rng"]["python"], tuple) and isinstance(state["rng"]["torch"], torch.Tensor)
    assert isinstance(state["learner"]["optimizer"]["param_groups"][0]["betas"], tuple)
    # It predates the design prompts' own RNG: a resume starts that stream from the run seed.
    assert "design_rng" not in curriculum
    resumed = Curriculum(SelfPlayConfig(), seed=5, designer_temperature=0.7, n_agent_samples_per_env=4)
    resumed.load_state(curriculum)
    fresh = Curriculum(SelfPlayConfig(), seed=5, designer_temperature=0.7, n_agent_samples_per_env=4)
    assert resumed.design_rng.getstate() == fresh.design_rng.getstate()
    assert resumed.rng.getstate() == curriculum["rng"]
    # ... and what it converted to is storable in the data format.
    document, _tensors = checkpoint.encode_state(state)
    json.dumps(document)


class NotAllowed:
    pass


def test_the_legacy_loader_refuses_classes_outside_its_allow_list(tmp_path: Path) -> None:
    folder = tmp_path / "step_1"
    folder.mkdir()
    torch.save({"step": 0, "snapshot": {"x": NotAllowed()}}, folder / "state.pt")
    with pytest.raises(CheckpointError, match="NotAllowed"):
        read_checkpoint(folder)
    torch.save({"step": 0, "snapshot": {"x": print}}, folder / "state.pt")  # a callable by name
    with pytest.raises(CheckpointError, match="print"):
        read_checkpoint(folder)
