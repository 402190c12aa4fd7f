"""Runs the command blocks of the README and docs/ that are marked for it, as a new user would
copy them, and checks what the text says they print (test/tools/docs-blocks.test).

A command block is a fenced block opened with ```sh. The line right before its fence is the
end of a marker, an HTML comment (invisible on the rendered page):

  <!-- doc-test: NAME -->                       run the block as written
  <!-- doc-test: NAME
    sub: OLD => NEW       before running, replace the text OLD of the block by NEW (a size too
                          large for the test's time budget; NEW may be empty); OLD must occur,
                          so a sub cannot rot
    setup: COMMAND        run first, hidden (files the block expects that another page made)
    expect: REGEX         a line of the block's output (stdout and stderr) matches REGEX
    check: COMMAND        run after the block; must exit 0 (a file the block writes)
    exit: N               the block's exit status (default 0)
    requires: PATH        skip the block where PATH (relative to the work folder) is missing
    timeout: SECONDS      (default 600: a guard against a hang, not a speed check; under
                          ASan on a loaded 2-core machine piper-tune's search block took
                          over 120 s)
  -->
  <!-- doc-test-skip: REASON -->                  not run here, and why

Every ```sh block must carry one of them (--check-marked). The blocks of one file run in its
order, in one work folder per file holding links `build`, `test` and `bench` to the tree, with
bash -e, build/bin on PATH and Open MPI's run-as-root variables removed (a bare `mpirun` as root
fails as it does for a user).

  doc_blocks.py --check-marked FILE...
  doc_blocks.py --run --src SRC --build BUILD --work DIR FILE...
"""
import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import time

FENCE = re.compile(r"^(\s*)```(\S*)\s*$")
MARK = re.compile(r"<!--\s*doc-test(-skip)?:\s*(.*?)\s*(-->)?$")
KEYS = ("sub", "setup", "expect", "check", "exit", "requires", "timeout")


class Block:
    def __init__(self, path, line, indent, body):
        self.path, self.line, self.body = path, line, body
        self.indent = indent
        self.name = None      # the marker's NAME; None for an unmarked block
        self.skip = None      # the reason of a doc-test-skip marker
        self.opts = {k: [] for k in KEYS}


def parse(path):
    """Every ```sh block of PATH, with its marker's name and options."""
    lines = open(path, encoding="utf-8").read().split("\n")
    blocks, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        lang, start, indent = m.group(2), i, m.group(1)
        i += 1
        body = []
        while i < len(lines) and not FENCE.match(lines[i]):
            body.append(lines[i][len(indent):] if lines[i].startswith(indent) else lines[i])
            i += 1
        i += 1
        if lang != "sh":
            continue
        b = Block(path, start + 1, indent, "\n".join(body) + "\n")
        marker = marker_before(lines, start)
        if marker is not None:
            read_marker(b, marker)
        blocks.append(b)
    return blocks


def marker_before(lines, fence):
    """The marker comment ending on the line before the fence, as its lines, or None."""
    end = fence - 1
    if end < 0 or not lines[end].rstrip().endswith("-->"):
        return None
    start = end
    while start >= 0 and "<!--" not in lines[start]:
        start -= 1
    if start < 0 or not MARK.search(lines[start].strip()):
        return None
    return [l.strip() for l in lines[start:end + 1]]


def read_marker(b, marker):
    head = MARK.search(marker[0])
    text = head.group(2)
    if head.group(1):
        b.skip = text or "no reason given"
        return
    b.name = text
    for l in marker[1:]:
        l = l[:-3].strip() if l.endswith("-->") else l
        if not l:
            continue
        key, sep, value = l.partition(":")
        if not sep or key.strip() not in KEYS:
            raise SystemExit(f"{b.path}:{b.line}: doc-test {b.name}: unknown marker line "
                             f"'{l}' (keys: {', '.join(KEYS)})")
        b.opts[key.strip()].append(value.strip())


# The first line of a plain fence that reads as a command a user would copy (a shell, a build
# tool, an MPI launcher, one of Piper's tools): such a block belongs in a ```sh fence, where
# the documentation test sees it. Diagrams (non-ASCII arrows) and output are not commands.
COMMAND = re.compile(r"^(\$ )?(bash|sh|make|mpirun|mpiexec|piper-[a-z]+|build/bin/\S+|\./\S+|"
                     r"python3|/usr/bin/python3|cd|sbatch|srun|cmake|apt-get|env)(\s|$)")


def plain_commands(path):
    """(line, text) of each plain fence of PATH whose first line (comments aside) is a command."""
    lines = open(path, encoding="utf-8").read().split("\n")
    found, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        lang, start = m.group(2), i
        i += 1
        body = []
        while i < len(lines) and not FENCE.match(lines[i]):
            body.append(lines[i].strip())
            i += 1
        i += 1
        first = [l for l in body if l and not l.startswith("#")]
        if not lang and first and first[0].isascii() and COMMAND.match(first[0]):
            found.append((start + 1, first[0]))
    return found


def check_marked(paths):
    bad = 0
    for p in paths:
        for line, text in plain_commands(p):
            print(f"{p}:{line}: a command in a plain fence ({text[:60]}): open it with ```sh "
                  f"and mark it")
            bad += 1
        for b in parse(p):
            if b.name is None and b.skip is None:
                print(f"{b.path}:{b.line}: a ```sh block without a doc-test or "
                      f"doc-test-skip marker on the line before it")
                bad += 1
    names = {}
    for p in paths:
        for b in parse(p):
            if b.name:
                if b.name in names:
                    print(f"{b.path}:{b.line}: doc-test name '{b.name}' used twice "
                          f"(first at {names[b.name]})")
                    bad += 1
                names[b.name] = f"{b.path}:{b.line}"
    print(f"marked blocks: {len(names)}; unmarked or duplicate: {bad}")
    return 1 if bad else 0


def script_of(b):
    """The block's text with its subs applied; an error if a sub's OLD is not in it."""
    text = b.body
    for s in b.opts["sub"]:
        old, sep, new = s.partition(" =>")
        new = new[1:] if new.startswith(" ") else new  # "OLD =>" replaces OLD by nothing
        if not sep:
            raise ValueError(f"sub '{s}' is not 'OLD => NEW'")
        if old not in text:
            raise ValueError(f"sub: '{old}' does not occur in the block")
        text = text.replace(old, new)
    return text


def run_shell(cmd, cwd, env, timeout):
    """(exit status, output) of bash -e running CMD; the whole process group ends on timeout."""
    p = subprocess.Popen(["bash", "-e", "-c", cmd], cwd=cwd, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, start_new_session=True)
    try:
        out, _ = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, _ = p.communicate()
        return None, out.decode("utf-8", "replace")
    return p.returncode, out.decode("utf-8", "replace")


def run_block(b, work, env):
    """None if the block did what its marker says, else why not."""
    timeout = float(b.opts["timeout"][-1]) if b.opts["timeout"] else 600.0
    try:
        script = script_of(b)
    except ValueError as e:
        return str(e), ""
    for cmd in b.opts["setup"]:
        rc, out = run_shell(cmd, work, env, timeout)
        if rc != 0:
            return f"setup '{cmd}' exited {rc}", out
    rc, out = run_shell(script, work, env, timeout)
    want = int(b.opts["exit"][-1]) if b.opts["exit"] else 0
    if rc is None:
        return f"timed out after {timeout:.0f} s", out
    if rc != want:
        return f"exited {rc}, expected {want}", out
    for rx in b.opts["expect"]:
        if not re.search(rx, out, re.MULTILINE):
            return f"no output line matches expect: {rx}", out
    for cmd in b.opts["check"]:
        crc, cout = run_shell(cmd, work, env, timeout)
        if crc != 0:
            return f"check '{cmd}' exited {crc}", out + cout
    return None, out


def run(paths, src, build, work_root):
    env = {k: v for k, v in os.environ.items() if not k.startswith("OMPI_ALLOW_RUN_AS_ROOT")}
    env["PATH"] = os.pathsep.join([os.path.join(build, "bin"), env.get("PATH", "")])
    passed = failed = skipped = 0
    total = time.monotonic()
    for p in paths:
        blocks = [b for b in parse(p) if b.name]
        if not blocks:
            continue
        work = os.path.join(work_root, os.path.basename(p).replace(".md", ""))
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(work)
        os.symlink(build, os.path.join(work, "build"))
        for d in ("test", "bench"):
            os.symlink(os.path.join(src, d), os.path.join(work, d))
        for b in blocks:
            missing = [r for r in b.opts["requires"] if not os.path.exists(os.path.join(work, r))]
            if missing:
                print(f"SKIP {b.name} ({b.path}:{b.line}): {missing[0]} is missing")
                skipped += 1
                continue
            t0 = time.monotonic()
            why, out = run_block(b, work, env)
            secs = time.monotonic() - t0
            if why is None:
                print(f"PASS {b.name} ({b.path}:{b.line}) {secs:.1f} s")
                passed += 1
            else:
                print(f"FAIL {b.name} ({b.path}:{b.line}) {secs:.1f} s: {why}")
                for l in out.splitlines()[-25:]:
                    print("  | " + l)
                failed += 1
    print(f"{passed} passed, {failed} failed, {skipped} skipped "
          f"({time.monotonic() - total:.0f} s)")
    return 1 if failed else 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("files", nargs="+")
    ap.add_argument("--check-marked", action="store_true")
    ap.add_argument("--run", action="store_true")
    ap.add_argument("--src")
    ap.add_argument("--build")
    ap.add_argument("--work")
    a = ap.parse_args()
    if a.check_marked:
        return check_marked(a.files)
    if not (a.run and a.src and a.build and a.work):
        ap.error("--run needs --src, --build and --work")
    return run(a.files, os.path.abspath(a.src), os.path.abspath(a.build),
               os.path.abspath(a.work))


if __name__ == "__main__":
    sys.exit(main())
