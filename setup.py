"""setup.py: the CMake step of `pip install .` (pyproject.toml holds the metadata).

Builds the target kl_c_api (libkernel_ladder_c.so) with only the libraries on (no benches, tests or
tools, so neither GoogleTest nor nlohmann-json is needed) and puts it into the package folder.
Environment: KL_ARCH (CMAKE_CUDA_ARCHITECTURES; default this machine's GPU, else "90a;120"),
KL_JOBS (build jobs; default the CPU count), KL_C_LIBRARY (an already built libkernel_ladder_c.so to
package instead of building one).
"""
import os
import shutil
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

ROOT = os.path.dirname(os.path.abspath(__file__))
LIB = "libkernel_ladder_c.so"


def gpu_arch():
    """The CUDA architecture of this machine's GPU ("90a" on sm_90), or "" without one."""
    try:
        cc = subprocess.run(["nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader"],
                            capture_output=True, text=True, timeout=30).stdout.split("\n")[0].strip()
    except (OSError, subprocess.SubprocessError):
        return ""
    return {"": "", "9.0": "90a"}.get(cc, cc.replace(".", ""))


class BuildWithCMake(build_py):
    def run(self):
        super().run()
        dest = os.path.join(self.build_lib, "kernel_ladder", LIB)
        prebuilt = os.environ.get("KL_C_LIBRARY")
        if prebuilt:
            self.announce("kernel_ladder: packaging %s" % prebuilt, level=3)
            shutil.copy2(prebuilt, dest)
            return
        build = os.path.join(os.path.abspath(self.get_finalized_command("build").build_temp), "kl-cmake")
        arch = os.environ.get("KL_ARCH") or gpu_arch() or "90a;120"
        cfg = ["cmake", "-S", ROOT, "-B", build, "-DCMAKE_BUILD_TYPE=Release", "-DCMAKE_CUDA_ARCHITECTURES=" + arch,
               "-DKL_BUILD_BENCHES=OFF", "-DKL_BUILD_TESTS=OFF", "-DKL_BUILD_TOOLS=OFF", "-DKL_BUILD_C_API=ON",
               "-DKL_INSTALL=OFF"]
        if shutil.which("ninja"):
            cfg += ["-G", "Ninja"]
        jobs = os.environ.get("KL_JOBS") or str(os.cpu_count() or 2)
        for cmd in (cfg, ["cmake", "--build", build, "--target", "kl_c_api", "-j", jobs]):
            self.announce(" ".join(cmd), level=3)
            subprocess.check_call(cmd)
        shutil.copy2(os.path.join(build, LIB), dest)


class BinaryDistribution(Distribution):
    def has_ext_modules(self):  # a platform wheel: it carries a shared library
        return True


setup(
    # setuptools' own build folder; build/ is the CMake build of scripts/test.sh.
    options={"build": {"build_base": "build-python"}},
    packages=["kernel_ladder"],
    package_dir={"": "python"},
    cmdclass={"build_py": BuildWithCMake},
    distclass=BinaryDistribution,
)
