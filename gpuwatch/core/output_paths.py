"""Checking a user-given output path before anything is written there (stdlib only).

The rules, shared by ``report -o``, ``record --out`` and ``gui --screenshot``:

- A new file may be written in a folder that exists. A missing folder is never created
  for the user: ``/nonexistent/r.html`` is refused, naming the folder.
- An existing *regular* file may be replaced.
- A symbolic link to a regular file is written *through*: the returned path is the
  link's target, so an atomic writer replaces the target and the link keeps pointing
  at it (as a shell's ``>`` would write through the link).
- Anything else already at the path is refused: a folder (unless the caller gives a
  ``default_name`` to write inside it), a named pipe, a device, a socket, a dangling
  link or a link loop. Replacing such an entry (``-o /dev/stdout`` as root) is how an
  export could destroy something that is not a file.
- A path ending in a separator (``out/``) names a folder: with a ``default_name`` the
  file goes inside it if it exists; a file called ``out`` is never made.

Errors are :class:`OutputPathError` (a ``ValueError``) with one sentence that names
the path; the command line turns them into exit code 2.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

__all__ = ["OutputPathError", "check_output_file", "still_safe_to_replace"]


class OutputPathError(ValueError):
    """A user-given output path that cannot or must not be written; names the path."""


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _ends_with_separator(text: str) -> bool:
    return text.endswith(os.sep) or bool(os.altsep and text.endswith(os.altsep))


def check_output_file(path: str | os.PathLike[str], what: str = "output",
                      default_name: str | None = None) -> Path:
    """The path to write ``what`` (e.g. "report", "screenshot") to, or OutputPathError.

    Nothing is created or changed. With ``default_name``, an existing folder (or a
    path ending in a separator) means "write ``default_name`` inside it"; without one a
    folder is refused. For a symbolic link to a regular file the link's target is
    returned (written through); for every other accepted path, the path as given.
    """
    text = os.fspath(path)
    if not text:
        raise OutputPathError(f"no file name given for the {what}")
    target = Path(text)
    if _ends_with_separator(text):
        if default_name is None:
            raise OutputPathError(f"{text} names a folder; give a file name for the {what}")
        if target.is_dir():
            return check_output_file(target / default_name, what)
        if os.path.lexists(target):
            raise OutputPathError(f"{text} ends with a separator but is not a folder")
        raise OutputPathError(f"the folder {text} does not exist, so the {what} cannot be "
                              "written into it (folders are not created)")
    try:
        info = os.lstat(target)
    except (FileNotFoundError, NotADirectoryError):
        _check_parent(target, what)
        return target
    except OSError as exc:
        raise OutputPathError(f"{text} cannot be checked for the {what} "
                              f"({exc.strerror or exc})") from None
    if stat.S_ISREG(info.st_mode):
        return target
    if stat.S_ISLNK(info.st_mode):
        return _through_link(target, what, default_name)
    if stat.S_ISDIR(info.st_mode) and default_name is not None:
        return check_output_file(target / default_name, what)
    if stat.S_ISDIR(info.st_mode):
        raise OutputPathError(f"{text} is a folder; give a file name for the {what}")
    raise OutputPathError(f"{text} is {_kind(info.st_mode)}, not a regular file; the "
                          f"{what} is only written to a new or regular file")


def _through_link(link: Path, what: str, default_name: str | None) -> Path:
    try:
        resolved = link.resolve(strict=True)
        info = os.stat(resolved)
    except RuntimeError:        # Python < 3.13 reports a loop this way
        raise OutputPathError(f"{link} is a symbolic link loop; the {what} is not "
                              "written there") from None
    except FileNotFoundError:
        raise OutputPathError(f"{link} is a symbolic link to nothing ({os.readlink(link)}); "
                              f"the {what} is not written there") from None
    except OSError as exc:
        reason = "a symbolic link loop" if "loop" in str(exc).lower() else \
            f"a symbolic link that cannot be followed ({exc.strerror or exc})"
        raise OutputPathError(f"{link} is {reason}; the {what} is not written there") from None
    if stat.S_ISREG(info.st_mode):
        return resolved
    if stat.S_ISDIR(info.st_mode) and default_name is not None:
        return check_output_file(resolved / default_name, what)
    raise OutputPathError(f"{link} links to {_kind(info.st_mode)} ({resolved}), not a "
                          f"regular file; the {what} is only written to a new or regular file")


def _check_parent(target: Path, what: str) -> None:
    parent = target.parent
    try:
        info = os.stat(parent)
    except FileNotFoundError:
        raise OutputPathError(f"the folder {parent} does not exist, so the {what} "
                              f"{target} cannot be written (folders are not created)") from None
    except OSError as exc:
        raise OutputPathError(f"the folder {parent} cannot be used for the {what} {target} "
                              f"({exc.strerror or exc})") from None
    if not stat.S_ISDIR(info.st_mode):
        raise OutputPathError(f"{parent} is not a folder, so the {what} {target} cannot be "
                              "written")


def still_safe_to_replace(target: Path) -> bool:
    """Just before an atomic rename: the path is still absent or a regular file.

    ``check_output_file`` runs before the (maybe long) work; this catches a FIFO, device
    or link put there in between."""
    try:
        mode = os.lstat(target).st_mode
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return stat.S_ISREG(mode)
