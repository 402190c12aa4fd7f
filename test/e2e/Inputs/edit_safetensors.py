#!/usr/bin/python3
"""Writes a damaged copy of a safetensors file, for the checkpoint reader's tests.

  edit_safetensors.py MODE IN OUT [N]

MODE:
  junk     N extra "optim.junk.<k>" F32 [1] entries, all at data_offsets [0, 4] (overlapping)
  many     N extra "optim.junk.<k>" F32 [0] entries, empty, at the end of the data (valid)
  overlap  the second tensor (by offset) starts 4 bytes early: it overlaps the first
  hole     every tensor moves 4 bytes later, leaving bytes [0, 4) to no tensor
  hlen     the header length says one byte more than the file holds after it
"""
import json
import struct
import sys


def main():
    mode, src, dst = sys.argv[1:4]
    n = int(sys.argv[4]) if len(sys.argv) > 4 else 0
    raw = open(src, "rb").read()
    (hlen,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + hlen])
    data = raw[8 + hlen:]
    names = sorted((k for k in header if k != "__metadata__"),
                   key=lambda k: header[k]["data_offsets"][0])
    if mode == "junk":
        for k in range(n):
            header[f"optim.junk.{k:06d}"] = {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}
    elif mode == "many":
        end = len(data)
        for k in range(n):
            header[f"optim.junk.{k:06d}"] = {"dtype": "F32", "shape": [0],
                                             "data_offsets": [end, end]}
    elif mode == "overlap":
        b, e = header[names[1]]["data_offsets"]
        header[names[1]]["data_offsets"] = [b - 4, e - 4]
    elif mode == "hole":
        for k in names:
            b, e = header[k]["data_offsets"]
            header[k]["data_offsets"] = [b + 4, e + 4]
        data = bytes(4) + data
    elif mode != "hlen":
        sys.exit(f"unknown mode {mode}")
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-(8 + len(text)) % 8)
    size = len(text) + len(data) + 1 if mode == "hlen" else len(text)
    with open(dst, "wb") as f:
        f.write(struct.pack("<Q", size) + text + data)


if __name__ == "__main__":
    main()
