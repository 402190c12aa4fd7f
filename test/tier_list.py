"""The sanitizers' tier list (test/sanitizers/asan-tier.txt), read by lit (test/lit_piper.py) and by
its check (test/tools/Inputs/check_tier.py); no lit import, so the check runs on its own."""


def read_tier(path):
    """(folders, tests) of a tier list: its `folders:` line names the folders it filters, every
    other line (comments aside) one test path relative to test/."""
    folders, tests = (), []
    with open(path) as f:
        for line in f:
            line = line.split("#")[0].strip()
            if line.startswith("folders:"):
                folders = tuple(line[len("folders:"):].split())
            elif line:
                tests.append(line)
    return folders, tests
