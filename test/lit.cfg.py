# lit configuration for every piper suite: dialects, passes, lowering, runtime, tools, e2e.
import os
import lit.formats

config.name = "Piper"


# The test format lives in a module of its own: lit's workers unpickle it by module name.
import sys
sys.path.insert(0, os.path.dirname(__file__))
from lit_piper import PiperTest, asan_tier  # noqa: E402

config.test_format = PiperTest(asan_tier(config, lit_config))
config.suffixes = [".mlir", ".test"]
config.excludes = ["lit.cfg.py", "lit.site.cfg.py", "Inputs", "oracle", "mutate_strategies.py",
                   "compare_runs.py", "corpus", "lit_piper.py", "tier_list.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.piper_obj_root, "test")

# Tools: piper's own, then LLVM's FileCheck/not/count; Debian's python3 has torch.
path = [config.piper_bin_dir, config.llvm_tools_dir, config.environment.get("PATH", "")]
config.environment["PATH"] = os.pathsep.join(path)
config.environment["OMP_NUM_THREADS"] = "1"
config.environment["OPENBLAS_NUM_THREADS"] = "1"
# OpenBLAS picks its GEMM kernel by the processor unless OPENBLAS_CORETYPE names one (Debian's
# build carries every x86-64 kernel). Passing it through lets `OPENBLAS_CORETYPE=Zen make check`
# test another processor's rounding on this one (make check-kernels does that); both runs inside
# one test still get the same kernel.
if "OPENBLAS_CORETYPE" in os.environ:
    config.environment["OPENBLAS_CORETYPE"] = os.environ["OPENBLAS_CORETYPE"]
# Open MPI refuses root unless told; CI and these machines run as root.
config.environment["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
config.environment["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
# make check-asan: the sanitizers' settings (suppression files, halt on error) reach every
# test and every rank mpirun starts.
for var in ("ASAN_OPTIONS", "LSAN_OPTIONS", "UBSAN_OPTIONS", "ASAN_SYMBOLIZER_PATH",
            "OMPI_MCA_mca_base_component_disable_dlclose",
            "PMIX_MCA_mca_base_component_disable_dlclose"):
    if var in os.environ:
        config.environment[var] = os.environ[var]
# "asan": the tree was built with -DPIPER_SANITIZE=ON. ASan reserves terabytes of shadow
# address space at start-up, so a test that runs a tool under `ulimit -v` cannot run there.
if getattr(config, "piper_sanitize", "OFF").upper() in ("ON", "1", "TRUE", "YES"):
    config.available_features.add("asan")
# "valgrind": memcheck is here. It sees reads inside MLIR's C API library, which the
# sanitizer build does not instrument (a pass reading an op it destroyed reads there).
# Not under ASan: the two do not run together.
import shutil
if shutil.which("valgrind") and "asan" not in config.available_features:
    config.available_features.add("valgrind")
config.substitutions.append(("%python", "/usr/bin/python3"))
config.substitutions.append(("%piper_src", config.piper_src_root))
config.substitutions.append(("%oracle", os.path.join(config.piper_src_root, "test", "oracle")))
config.substitutions.append(("%piper_bin", config.piper_bin_dir))
config.substitutions.append(("%piper_lib", os.path.join(config.piper_obj_root, "lib")))

# "fake-cuda": libpiper_fakecuda was built (test/gpu/fake_cuda.c: the GPU target's host side
# over a fake CUDA runtime; the toolkit's headers only), in the release tree and, unlike
# libpiper_rt_cuda, in the sanitized one.
if getattr(config, "piper_fakecuda", "OFF") == "ON":
    config.available_features.add("fake-cuda")
# CUDA (runtime/device/cuda.c). "cuda-toolkit": libpiper_rt_cuda and prt-cuda-test were built
# (the CUDA toolkit was found at configure time). "cuda-gpu": prt-cuda-test can open cuda:0
# here (cudaGetDeviceCount finds a GPU), so the tests that need a real device run.
if getattr(config, "piper_cuda", "OFF") == "ON":
    config.available_features.add("cuda-toolkit")
    import subprocess
    probe = os.path.join(config.piper_bin_dir, "prt-cuda-test")
    try:
        opened = subprocess.run([probe, "--open-only"], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, timeout=60).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        opened = False
    if opened:
        config.available_features.add("cuda-gpu")
        config.available_features.add("gpu")  # what the GPU end-to-end tests (test/gpu) ask

# "ptxas": NVIDIA's PTX assembler is here (it needs no GPU), so tests check that the PTX
# piper-compile --target cuda writes assembles. %ptxas names it.
import shutil
ptxas = shutil.which("ptxas") or ("/usr/local/cuda/bin/ptxas"
                                  if os.access("/usr/local/cuda/bin/ptxas", os.X_OK) else None)
if ptxas:
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", ptxas))
# "nvcc": the toolkit's CUDA compiler, for the tests that compile the nvcc kernels
# (runtime/kernels/*.cu) themselves to read ptxas's resource report. %nvcc names it.
nvcc = shutil.which("nvcc") or ("/usr/local/cuda/bin/nvcc"
                                if os.access("/usr/local/cuda/bin/nvcc", os.X_OK) else None)
if nvcc:
    config.available_features.add("nvcc")
    config.substitutions.append(("%nvcc", nvcc))
