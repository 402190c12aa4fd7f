"""Piper's lit test format (test/lit.cfg.py uses it), in a module so lit's workers can load it.

Tests are lit's shell tests. Under the sanitizers (make check-asan) a test of a folder the tier
list filters (test/sanitizers/asan-tier.txt: e2e/, gpu/, frontend/) that the list does not name
is reported UNSUPPORTED, with the reason, instead of run: docs/testing.md says which tests run where and why. `lit -Dasan_tier=all` runs them all.
"""
import os
import shutil
import tempfile

import lit.formats
import lit.Test

from tier_list import read_tier


def asan_tier(cfg, lit_config):
    """(the folders the tier filters, the tests of theirs make check-asan runs) from
    test/sanitizers/asan-tier.txt, or None where every test runs: a build without the
    sanitizers, or `lit -Dasan_tier=all`."""
    if getattr(cfg, "piper_sanitize", "OFF").upper() not in ("ON", "1", "TRUE", "YES"):
        return None
    if lit_config.params.get("asan_tier", "") == "all":
        return None
    folders, tests = read_tier(os.path.join(os.path.dirname(__file__), "sanitizers",
                                            "asan-tier.txt"))
    return folders, set(tests)


class PiperTest(lit.formats.ShTest):
    """lit's shell tests; under the sanitizers, a test of a folder the tier filters outside the
    tier is reported UNSUPPORTED with the reason, so the run still lists it. `unsupported`: a
    reason why no test of this folder can run on this machine (a lit.local.cfg's probe found
    it: e2e/hosts/ without network namespaces); each is then reported UNSUPPORTED with it."""

    def __init__(self, tier, unsupported=None):
        super().__init__(execute_external=True)
        self.tier = tier
        self.unsupported = unsupported

    def execute(self, test, lit_config):
        if self.unsupported:
            return lit.Test.Result(lit.Test.UNSUPPORTED, self.unsupported)
        rel = "/".join(test.path_in_suite)
        if self.tier is not None and rel.split("/")[0] in self.tier[0] and rel not in self.tier[1]:
            return lit.Test.Result(lit.Test.UNSUPPORTED,
                                   "not in the sanitizers' tier (test/sanitizers/asan-tier.txt)")
        # A temporary folder of the test's own: Open MPI 4.1 makes its session folder
        # $TMPDIR/ompi.<host>.<uid> with a check-then-mkdir, and removes it when it empties, so
        # two tests' mpiruns sharing lit's one TMPDIR can meet "orte_session_dir failed ...
        # File exists" (seen in make check under load: e2e/strategies/bf16-cp2.test).
        base = test.config.environment.get("TMPDIR") or tempfile.gettempdir()
        own = tempfile.mkdtemp(prefix="t", dir=base)
        test.config.environment["TMPDIR"] = own
        try:
            return super().execute(test, lit_config)
        finally:
            test.config.environment["TMPDIR"] = base
            shutil.rmtree(own, ignore_errors=True)


