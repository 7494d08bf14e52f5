#!/usr/bin/env python3
"""Writes a vocabulary-only GGUF: the tokenizer.* keys (vocabulary, merges, special ids,
chat template) and general.architecture/general.name of a model's GGUF file, and no
tensors. `--tokenizer` and `tokenize` read nothing else, so it stands in for the model
where only its vocabulary is needed (the GPU bundle's dummy-weight runs): SmolLM2-135M's
is ~2 MB instead of 98.

Each kept key's bytes are copied as they are (GGUF v2/v3, little-endian), so the
vocabulary read back is the model's own. Standard library only.

Usage: make-vocab-gguf.py MODEL.gguf OUT.gguf
"""
import struct
import sys

# GGUF value types (gguf.h): the size of each fixed-size one; 8 is a string, 9 an array.
FIXED_BYTES = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
STRING, ARRAY = 8, 9
ALIGNMENT = 32  # GGUF's default: the (empty) data section starts at a multiple of it


def kept(key):
    return key.startswith("tokenizer.") or key in ("general.architecture", "general.name")


class Reader:
    def __init__(self, data, path):
        self.data, self.path, self.at = data, path, 0

    def take(self, num_bytes):
        if self.at + num_bytes > len(self.data):
            sys.exit(f"make-vocab-gguf: {self.path} is truncated at byte {self.at}")
        start, self.at = self.at, self.at + num_bytes
        return self.data[start:self.at]

    def u32(self):
        return struct.unpack("<I", self.take(4))[0]

    def u64(self):
        return struct.unpack("<Q", self.take(8))[0]

    def string(self):
        return self.take(self.u64())

    def skip_value(self, value_type):
        if value_type == STRING:
            self.string()
        elif value_type == ARRAY:
            element_type, count = self.u32(), self.u64()
            if element_type in FIXED_BYTES:
                self.take(FIXED_BYTES[element_type] * count)
            else:
                for _ in range(count):
                    self.skip_value(element_type)
        elif value_type in FIXED_BYTES:
            self.take(FIXED_BYTES[value_type])
        else:
            sys.exit(f"make-vocab-gguf: {self.path}: unknown value type {value_type} at byte {self.at}")


def vocabulary_pairs(path):
    """The raw bytes (key, type and value) of each kept metadata pair, in file order."""
    with open(path, "rb") as f:
        reader = Reader(f.read(), path)
    if reader.take(4) != b"GGUF":
        sys.exit(f"make-vocab-gguf: {path} is not a GGUF file")
    version = reader.u32()
    if version not in (2, 3):
        sys.exit(f"make-vocab-gguf: {path} is GGUF version {version}; only 2 and 3 are read")
    reader.u64()  # tensor count: none are copied
    pairs = []
    for _ in range(reader.u64()):
        start = reader.at
        key = reader.string().decode("utf-8", "replace")
        reader.skip_value(reader.u32())
        if kept(key):
            pairs.append(reader.data[start:reader.at])
    if not any(pair[8:].startswith(b"tokenizer.ggml.tokens") for pair in pairs):
        sys.exit(f"make-vocab-gguf: {path} has no tokenizer.ggml.tokens: no vocabulary to copy")
    return pairs


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__.strip().splitlines()[-1])
    source, out = sys.argv[1], sys.argv[2]
    pairs = vocabulary_pairs(source)
    body = b"GGUF" + struct.pack("<IQQ", 3, 0, len(pairs)) + b"".join(pairs)
    body += b"\0" * (-len(body) % ALIGNMENT)
    with open(out, "wb") as f:
        f.write(body)
    print(f"make-vocab-gguf: {out}: {len(pairs)} keys, {len(body)} bytes", file=sys.stderr)


if __name__ == "__main__":
    main()
