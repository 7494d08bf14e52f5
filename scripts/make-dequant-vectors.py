#!/usr/bin/env python3
"""Writes tests/data/dequant_vectors.bin: ggml block bytes and the float32 values the
`gguf` Python package (llama.cpp's gguf-py) dequantizes them to, for every type pagedgen
dequantizes. tests/test_dequant.cpp compares pagedgen's output with these bit for bit.

Blocks are random bytes with finite f16 scales (so every bit pattern of the quants is
exercised), plus blocks made by gguf.quants.quantize from random floats where gguf-py can
quantize the type. Plain types also get special values (signed zeros, subnormals, inf, NaN).

File format, all little-endian:
  "PGDV" | u32 record_count | records
  record: u32 ggml_type | u32 num_elements | u32 num_bytes | bytes[num_bytes]
          | f32[num_elements] (the expected floats' bit patterns)

Usage: python3 scripts/make-dequant-vectors.py [out_path]   (needs numpy and gguf)
"""
import struct
import sys
from pathlib import Path

import numpy as np
from gguf import GGMLQuantizationType as T
from gguf import quants

SEED = 20240601

# Byte offsets of the f16 scale fields inside one block, per type.
F16_FIELDS = {
    T.Q4_0: [0], T.Q4_1: [0, 2], T.Q5_0: [0], T.Q5_1: [0, 2], T.Q8_0: [0],
    T.Q4_K: [0, 2], T.Q5_K: [0, 2], T.Q6_K: [208],
}
BLOCK = {T.Q4_0: (32, 18), T.Q4_1: (32, 20), T.Q5_0: (32, 22), T.Q5_1: (32, 24),
         T.Q8_0: (32, 34), T.Q4_K: (256, 144), T.Q5_K: (256, 176), T.Q6_K: (256, 210)}
QUANTIZABLE = {T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1, T.Q8_0}


def random_blocks(rng, qtype, num_blocks):
    _, block_bytes = BLOCK[qtype]
    blocks = rng.integers(0, 256, size=(num_blocks, block_bytes), dtype=np.uint8)
    for b in range(num_blocks):
        for offset in F16_FIELDS[qtype]:
            # Mostly ordinary scales; block 0 also gets a subnormal and block 1 a negative one.
            value = np.float16(rng.normal(0.0, 0.05))
            if b == 0 and offset == F16_FIELDS[qtype][-1]:
                value = np.float16(3e-7)
            if b == 1:
                value = np.float16(-abs(float(value)) - 0.001)
            blocks[b, offset:offset + 2] = np.frombuffer(value.tobytes(), dtype=np.uint8)
    return blocks.reshape(-1)


def plain_cases(rng):
    f32_special = np.array([0.0, -0.0, 1.0, -2.5, np.inf, -np.inf, np.nan, 1e-45, -1e-40,
                            3.4028235e38, 1.17549435e-38], dtype=np.float32)
    f32 = np.concatenate([f32_special, rng.normal(0, 1, 53).astype(np.float32)])
    yield T.F32, f32.view(np.uint8)

    f16_special = np.array([0x0000, 0x8000, 0x0001, 0x03ff, 0x0400, 0x3c00, 0x7bff, 0x7c00,
                            0xfc00, 0x7e00, 0x7d00, 0xfd01, 0x8001, 0xbc00], dtype=np.uint16)
    f16 = np.concatenate([f16_special, rng.integers(0, 65536, 242, dtype=np.uint16)])
    yield T.F16, f16.view(np.uint8)

    bf16_special = np.array([0x0000, 0x8000, 0x0001, 0x007f, 0x0080, 0x3f80, 0x7f7f, 0x7f80,
                             0xff80, 0x7fc0, 0x7fa0, 0xc000], dtype=np.uint16)
    bf16 = np.concatenate([bf16_special, rng.integers(0, 65536, 244, dtype=np.uint16)])
    yield T.BF16, bf16.view(np.uint8)


def quant_cases(rng):
    for qtype in BLOCK:
        yield qtype, random_blocks(rng, qtype, 4)
        if qtype in QUANTIZABLE:
            block_elements, _ = BLOCK[qtype]
            floats = rng.normal(0, 0.02, size=(2, block_elements)).astype(np.float32)
            floats[1, 3] = 0.25  # an outlier, as real weights have
            yield qtype, quants.quantize(floats, qtype).reshape(-1)


def main():
    out_path = Path(sys.argv[1]) if len(sys.argv) > 1 else \
        Path(__file__).resolve().parent.parent / "tests" / "data" / "dequant_vectors.bin"
    rng = np.random.default_rng(SEED)
    records = []
    for qtype, raw in [*plain_cases(rng), *quant_cases(rng)]:
        raw = np.ascontiguousarray(raw, dtype=np.uint8)
        expected = quants.dequantize(raw, qtype).astype(np.float32, copy=False).reshape(-1)
        records.append(struct.pack("<III", int(qtype), expected.size, raw.size)
                       + raw.tobytes() + expected.astype("<f4").tobytes())
    out_path.write_bytes(b"PGDV" + struct.pack("<I", len(records)) + b"".join(records))
    print(f"wrote {len(records)} records, {out_path.stat().st_size} bytes to {out_path}")


if __name__ == "__main__":
    main()
