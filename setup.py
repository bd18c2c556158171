"""pip's way to build the Python package (offline: pip install --no-build-isolation --no-index .):
the project's CMake builds the _redbloom extension for the interpreter running pip."""

import os
import re
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))


def project_version():
    with open(os.path.join(ROOT, "CMakeLists.txt")) as cmake:
        return re.search(r"project\(redbloom VERSION ([0-9.]+)", cmake.read()).group(1)


class CMakeExtension(Extension):
    def __init__(self, name):
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        build = os.path.join(os.path.abspath(self.build_temp), "cmake")
        subprocess.run(["cmake", "-S", ROOT, "-B", build, "-DCMAKE_BUILD_TYPE=Release",
                        "-DREDBLOOM_BUILD_PYTHON=ON", "-DREDBLOOM_BUILD_TESTS=OFF",
                        "-DREDBLOOM_BUILD_BENCH=OFF", "-DREDBLOOM_BUILD_CLI=OFF",
                        "-DREDBLOOM_BUILD_KAFKA=OFF",
                        "-DREDBLOOM_BUILD_EXAMPLES=OFF", "-DPython_EXECUTABLE=" + sys.executable],
                       check=True)
        subprocess.run(["cmake", "--build", build, "--target", "_redbloom", "-j",
                        str(os.cpu_count() or 1)], check=True)
        built = os.path.join(build, "python", "redbloom", os.path.basename(
            self.get_ext_filename(ext.name)))
        target = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(built, target)
        # redbloom.__version__ (_version.py), written by the configure above.
        shutil.copyfile(os.path.join(build, "python", "redbloom", "_version.py"),
                        os.path.join(os.path.dirname(target), "_version.py"))


setup(
    name="redbloom",
    version=project_version(),
    description="Bloom filters for deduplication at scale: files, Redis, Redis Cluster",
    packages=["redbloom"],
    package_dir={"": "python"},
    ext_modules=[CMakeExtension("redbloom._redbloom")],
    cmdclass={"build_ext": CMakeBuild},
    python_requires=">=3.9",
    zip_safe=False,
)
