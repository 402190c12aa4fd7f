"""What the e2e checker scripts share: named checks printed as lit's FileCheck expects.

Each check prints "@name", then "ok" or one "FAIL: ..." line with its first three problems;
`exit_code()` is 1 if any check failed, so a failing checker cannot exit 0."""

_failed = 0


def section(name, problems):
    """Reports check `name`; `problems` is a list of strings, empty when the check passed."""
    global _failed
    print("@" + name)
    print("FAIL: " + "; ".join(problems[:3]) if problems else "ok")
    _failed += bool(problems)


def exit_code():
    return 1 if _failed else 0
