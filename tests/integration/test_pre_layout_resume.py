"""A run folder written before the layout move (pickled ``state.pt`` checkpoints, classes
under their old module paths) resumes through the real CLI, and its next checkpoints are in
the data format (``state.json`` + ``tensors.safetensors``, no pickle).

The fixture (tests/fixtures/pre_layout_run, see its README) was killed at
``checkpoint_commit:3``: steps 1-3 are in the database, checkpoints step_1 and step_2 are
committed. Its config names absolute paths of the machine it was written on; the copy here
points them at this test's folder (so the config hash changes: ``--force``).
"""

from __future__ import annotations

from pathlib import Path

from tests.integration.saved_runs import ROOT, assert_finished_from_step_3, copy_saved_run, query, resume_to_the_end

FIXTURE = ROOT / "tests" / "fixtures" / "pre_layout_run"
OLD_RUN_DIR = "/tmp/fx/lottery"


def test_a_pre_layout_run_resumes_to_the_end_and_checkpoints_as_data(tmp_path: Path, tiny_model_dir: Path) -> None:
    run_dir = copy_saved_run(FIXTURE, OLD_RUN_DIR, tmp_path, tiny_model_dir)
    assert [s for (s,) in query(run_dir / "run.sqlite", "SELECT step FROM checkpoints ORDER BY step")] == [0, 1]
    assert (run_dir / "checkpoints" / "step_2" / "state.pt").is_file()
    assert_finished_from_step_3(run_dir, resume_to_the_end(run_dir))
