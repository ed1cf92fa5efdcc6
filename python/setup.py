"""Builds the taskledger Python package: CMake builds the extension module
taskledger._core (pybind11) from this repository's C++ sources for the
interpreter running this script, and setuptools packages it with the
pure-Python files, the type stubs and py.typed.

    python -m venv --system-site-packages venv   # Debian's setuptools/wheel
    venv/bin/pip install --no-build-isolation ./python

Environment:
  TASKLEDGER_PREBUILT_DIR  a CMake build folder of this repository configured
                           with -DTASKLEDGER_PYTHON=ON for this same
                           interpreter: its module is brought up to date
                           (cmake --build --target taskledger_python) and
                           packaged instead of configuring a fresh build. The
                           module's file name must carry this interpreter's
                           extension suffix, or the build stops.
  TASKLEDGER_BUILD_JOBS    parallel build jobs (default: CPU count).
Runs one build at a time; not meant to be imported.
"""

import os
import pathlib
import shutil
import subprocess
import sys
import sysconfig

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent


class CMakeBuild(build_ext):
    """build_ext that runs CMake instead of compiling sources itself."""

    def build_extension(self, ext):
        suffix = sysconfig.get_config_var("EXT_SUFFIX")
        prebuilt = os.environ.get("TASKLEDGER_PREBUILT_DIR")
        jobs = os.environ.get("TASKLEDGER_BUILD_JOBS", str(os.cpu_count() or 2))
        if prebuilt:
            build_dir = pathlib.Path(prebuilt).resolve()
            if not (build_dir / "CMakeCache.txt").is_file():
                sys.exit(f"setup.py: TASKLEDGER_PREBUILT_DIR={build_dir} is not a CMake build folder")
        else:
            build_dir = pathlib.Path(self.build_temp).resolve() / "cmake"
            build_dir.mkdir(parents=True, exist_ok=True)
            generator = ["-G", "Ninja"] if shutil.which("ninja") else []
            subprocess.run(
                ["cmake", "-S", str(ROOT), "-B", str(build_dir), *generator,
                 "-DCMAKE_BUILD_TYPE=Release", "-DTASKLEDGER_PYTHON=ON",
                 "-DTASKLEDGER_TESTS=OFF", "-DTASKLEDGER_BENCH=OFF",
                 # Release -O3 trips GCC 12's false -Wrestrict (bug 105329).
                 "-DCMAKE_CXX_FLAGS=-Wno-error=restrict",
                 f"-DPython3_EXECUTABLE={sys.executable}"],
                check=True)
        subprocess.run(["cmake", "--build", str(build_dir), "--target", "taskledger_python",
                        "-j", jobs], check=True)
        built = build_dir / "python" / "taskledger" / f"_core{suffix}"
        if not built.is_file():
            found = sorted(p.name for p in (build_dir / "python" / "taskledger").glob("_core*"))
            sys.exit(f"setup.py: no {built.name} in {built.parent} (found {found}): that build "
                     f"is for another interpreter than {sys.executable}")
        target = pathlib.Path(self.get_ext_fullpath(ext.name))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(built, target)
        # A RelWithDebInfo build's module carries ~70 MB of debug info: not for a wheel.
        if shutil.which("strip"):
            subprocess.run(["strip", "--strip-debug", str(target)], check=True)


setup(
    name="taskledger",
    version="0.1.0",
    description="Task state, a Lua policy gate and a crash-safe command ledger for "
                "tool-calling AI agents",
    long_description=(ROOT / "docs" / "python.md").read_text(encoding="utf-8")
    if (ROOT / "docs" / "python.md").is_file() else "",
    long_description_content_type="text/markdown",
    python_requires=">=3.9",
    packages=["taskledger"],
    package_data={"taskledger": ["py.typed", "*.pyi"]},
    ext_modules=[Extension("taskledger._core", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    zip_safe=False,
)
