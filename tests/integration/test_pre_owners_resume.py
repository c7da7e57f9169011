"""A run folder written before the run folder got its owners (``run/checkpointer.py``,
``memory/run_dir.py`` everywhere, ``Store`` split by record family) resumes through the real
CLI: the newest committed checkpoint is restored by the ``Checkpointer`` and the run finishes.

The fixture (tests/fixtures/pre_owners_run, see its README) was written at main a76d29e and
killed at ``checkpoint_commit:3``: steps 0-2 are in the database, checkpoints step_1 and step_2
are committed, step_3 is on disk uncommitted. Its config names absolute paths of the machine it
was written on; the copy here points them at this test's folder (so the config hash changes:
``--force``).
"""

from __future__ import annotations

from pathlib import Path

from tests.integration.saved_runs import ROOT, assert_finished_from_step_3, copy_saved_run, query, resume_to_the_end

FIXTURE = ROOT / "tests" / "fixtures" / "pre_owners_run"
OLD_RUN_DIR = "/tmp/fx2/lottery"


def test_a_run_from_before_the_owners_resumes_to_the_end(tmp_path: Path, tiny_model_dir: Path) -> None:
    run_dir = copy_saved_run(FIXTURE, OLD_RUN_DIR, tmp_path, tiny_model_dir)
    assert [s for (s,) in query(run_dir / "run.sqlite", "SELECT step FROM checkpoints ORDER BY step")] == [0, 1]
    assert (run_dir / "checkpoints" / "step_2" / "state.json").is_file()
    assert_finished_from_step_3(run_dir, resume_to_the_end(run_dir))
