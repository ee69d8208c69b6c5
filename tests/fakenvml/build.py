"""Build the fake NVIDIA driver library (``libnvidia-ml.so.1``) from ``fakenvml.c``.

With it the real ``nvidia-ml-py`` binding, and so gpuwatch's real NVML backend, runs on
a machine without a GPU. Point ``LD_LIBRARY_PATH`` of a *new* process at the folder this
returns: the dynamic loader reads that variable when a process starts, and ``pynvml``
loads the library at ``nvmlInit``. Configuration (``FAKENVML_GPUS``, ``FAKENVML_PIDS``,
``FAKENVML_FAIL``, ``FAKENVML_TIME``, …) is described at the top of ``fakenvml.c``.

    python tests/fakenvml/build.py [FOLDER]      # prints the folder holding the library

Needs a C compiler (``$CC``, else ``gcc`` or ``cc``) and the C library headers
(Debian: ``apt install gcc libc6-dev``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

SOURCE = Path(__file__).resolve().with_name("fakenvml.c")
LIBRARY = "libnvidia-ml.so.1"
FLAGS = ["-O2", "-g", "-Wall", "-Wextra", "-std=gnu11", "-shared", "-fPIC",
         "-fvisibility=hidden", "-Wl,-soname,libnvidia-ml.so.1", "-Wl,-Bsymbolic"]
LIBS = ["-lm", "-lpthread"]


class NoCompiler(RuntimeError):
    """No C compiler on this machine: the fake driver cannot be built."""


class BuildFailed(RuntimeError):
    """The compiler ran and failed; the message holds its output."""


def compiler() -> str | None:
    """The C compiler to use: ``$CC`` if set and found, else gcc, else cc."""
    for name in (os.environ.get("CC"), "gcc", "cc"):
        if name and shutil.which(name):
            return name
    return None


def build(folder: str | os.PathLike[str]) -> Path:
    """Compile the library into ``folder`` (created if missing) and return the folder.

    An up-to-date library (newer than the source) is kept as it is."""
    out = Path(folder)
    lib = out / LIBRARY
    if lib.is_file() and lib.stat().st_mtime >= SOURCE.stat().st_mtime:
        return out
    cc = compiler()
    if cc is None:
        raise NoCompiler("no C compiler (gcc or cc) found to build the fake NVIDIA driver "
                         "library; install one, e.g. `apt install gcc libc6-dev`")
    out.mkdir(parents=True, exist_ok=True)
    # Build beside the target and rename, so a reader never sees half a library.
    fd, tmp = tempfile.mkstemp(prefix=".fakenvml-", suffix=".so", dir=out)
    os.close(fd)
    try:
        result = subprocess.run([cc, *FLAGS, "-o", tmp, str(SOURCE), *LIBS],
                                capture_output=True, text=True, check=False)
        if result.returncode != 0:
            raise BuildFailed(f"{cc} could not build {SOURCE.name} "
                              f"(exit {result.returncode}):\n{result.stderr.strip()}")
        os.chmod(tmp, 0o755)
        os.replace(tmp, lib)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    link = out / "libnvidia-ml.so"
    if not link.is_symlink():
        link.symlink_to(LIBRARY)
    return out


def main(argv: list[str]) -> int:
    folder = argv[1] if len(argv) > 1 else os.path.join("build", "fakenvml")
    try:
        print(build(folder))
    except (NoCompiler, BuildFailed) as exc:
        print(f"build.py: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
