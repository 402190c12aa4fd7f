#!/usr/bin/python3
"""doc_block.py FILE NAME [OLD=>NEW ...]: prints the ```sh block of FILE whose doc-test marker is
NAME, as written, with only the given replacements (each OLD must occur: a stale replacement
fails), so a test runs the documentation's own command on real hosts (test/e2e/hosts) rather
than the one-host variant its marker's subs make for the documentation test."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..",
                                "tools", "Inputs"))
import doc_blocks  # noqa: E402

path, name, subs = sys.argv[1], sys.argv[2], sys.argv[3:]
found = [b for b in doc_blocks.parse(path) if b.name == name]
if len(found) != 1:
    sys.exit(f"doc_block.py: {path} has {len(found)} blocks named {name}, expected 1")
text = found[0].body
for s in subs:
    old, sep, new = s.partition("=>")
    if not sep or old not in text:
        sys.exit(f"doc_block.py: '{old}' does not occur in the block {name} of {path}")
    text = text.replace(old, new)
sys.stdout.write(text)
