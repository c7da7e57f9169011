"""Delete a folder tree written by untrusted code: without recursion, symlinks or path limits.

Why not ``shutil.rmtree``: in Python 3.11 it recurses once per level, so a 1500-level tree an
env builds in its workdir raises RecursionError (in the zygote's reap, the pool's close and
the stale-folder sweep at the next start); deep paths exceed PATH_MAX; folders created with
mode 000 cannot be listed. Here the walk holds one directory fd at a time (it climbs back
with ``..``, opened relative to the current fd), keeps a stack of pending *names* only,
never follows a symlink (``O_NOFOLLOW``; symlinks are unlinked as files), and makes an
unreadable folder readable before entering it. Errors never propagate: the function returns
how many entries it could not remove, so a cleanup can never crash its caller.
"""

from __future__ import annotations

import os
import stat

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _open_dir(name: str, dir_fd: int | None) -> int:
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    except PermissionError:
        os.chmod(name, 0o700, dir_fd=dir_fd)  # a mode-000 folder (the walk never follows symlinks)
        return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)


def _scan(fd: int) -> tuple[list[str], int]:
    """Unlink every non-folder entry of the open folder ``fd``; return its sub-folders and failures."""
    folders: list[str] = []
    failed = 0
    with os.scandir(fd) as entries:
        names = [(entry.name, entry.is_dir(follow_symlinks=False)) for entry in entries]
    for name, is_dir in names:
        if is_dir:
            folders.append(name)
            continue
        try:
            os.unlink(name, dir_fd=fd)
        except FileNotFoundError:
            pass
        except OSError:
            failed += 1
    return folders, failed


def remove_tree(path: str) -> int:
    """Remove ``path`` and everything below it; returns the number of entries left behind (0 = all gone)."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return 0
    except OSError:
        return 1
    if not stat.S_ISDIR(mode):
        try:
            os.unlink(path)
        except OSError:
            return 1
        return 0
    failed = 0
    try:
        fd = _open_dir(path, None)
    except OSError:
        return 1
    try:
        folders, failed = _scan(fd)
        stack: list[tuple[str, list[str]]] = [("", folders)]
        while stack:
            name, pending = stack[-1]
            if pending:
                sub = pending.pop()
                try:
                    child = _open_dir(sub, fd)
                except FileNotFoundError:
                    continue
                except OSError:
                    failed += 1
                    continue
                os.close(fd)
                fd = child
                sub_folders, sub_failed = _scan(fd)
                failed += sub_failed
                stack.append((sub, sub_folders))
                continue
            stack.pop()
            if not stack:
                break
            parent = os.open("..", _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = parent
            try:
                os.rmdir(name, dir_fd=fd)
            except FileNotFoundError:
                pass
            except OSError:
                failed += 1
    except OSError:
        failed += 1
    finally:
        os.close(fd)
    try:
        os.rmdir(path)
    except FileNotFoundError:
        pass
    except OSError:
        failed += 1
    return failed
