#!/usr/bin/env python3
"""Writes NAME.vocab: the part of llama.cpp's models/ggml-vocab-NAME.gguf that its vectors
(NAME.gguf.out) can reach, so the test can rebuild a GGUF that tokenizes those texts
exactly as the whole vocabulary does, from a file of a few tens of KB instead of MBs.

Kept: every token of every expected tokenization, every token a kept token can be merged
from (recursively), every merge between kept tokens whose result is kept (in rank order),
every token that is not a normal one (control, user-defined, ...: they change how text is
split), and the tokenizer.ggml.* scalar keys. Why it tokenizes the same: BPE applies, at
each step, the lowest-ranked merge among the adjacent pairs; every merge the whole
vocabulary applies to these texts is kept, and the kept merges are a subset in the same
order, so the reduced vocabulary takes the same step each time and stops where it stops.
The test gives every dropped id an unused placeholder token, so ids keep their values.

Usage: reduce_vocab.py MODELS_DIR NAME OUT_DIR  (needs the gguf package: pip install gguf)
"""
import sys
from pathlib import Path

import gguf

NORMAL = 1


def escape(raw: bytes) -> bytes:
    """One field of a line: backslash escapes for '\\', space and control bytes; other
    bytes (UTF-8 included) as they are."""
    out = bytearray()
    for b in raw:
        if b == 0x5C:
            out += b"\\\\"
        elif b == 0x20:
            out += b"\\s"
        elif b < 0x20 or b == 0x7F:
            out += b"\\x%02X" % b
        else:
            out.append(b)
    return bytes(out)


def split_merge(merge: bytes):
    """'left right' at the first space after the first byte, as GGUF merges are read."""
    space = merge.index(b" ", 1)
    return merge[:space], merge[space + 1:]


def string_array(reader, key):
    field = reader.fields[key]
    return [bytes(field.parts[i]) for i in field.data]


def main():
    models_dir, name, out_dir = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
    vocab_path = models_dir / f"ggml-vocab-{name}.gguf"
    reader = gguf.GGUFReader(str(vocab_path))
    tokens = string_array(reader, "tokenizer.ggml.tokens")
    types = [int(reader.fields["tokenizer.ggml.token_type"].parts[i][0])
             for i in reader.fields["tokenizer.ggml.token_type"].data]
    merges = string_array(reader, "tokenizer.ggml.merges")
    assert reader.fields["tokenizer.ggml.model"].contents() == "gpt2", "only byte-level BPE vocabularies"

    expected = (models_dir / f"ggml-vocab-{name}.gguf.out").read_text().splitlines()
    id_of = {text: i for i, text in reversed(list(enumerate(tokens)))}
    made_from = {}  # merged text -> [(left, right)]
    for merge in merges:
        left, right = split_merge(merge)
        made_from.setdefault(left + right, []).append((left, right))

    kept = {int(i) for line in expected for i in line.split()}
    kept |= {i for i, t in enumerate(types) if t != NORMAL}
    todo = [tokens[i] for i in kept]
    while todo:
        text = todo.pop()
        for left, right in made_from.get(text, []):
            for part in (left, right):
                if part in id_of and id_of[part] not in kept:
                    kept.add(id_of[part])
                    todo.append(part)
    kept_texts = {tokens[i] for i in kept}
    kept_merges = []
    for merge in merges:
        left, right = split_merge(merge)
        if left in kept_texts and right in kept_texts and left + right in kept_texts:
            kept_merges.append(merge)

    lines = [f"# {len(kept)} of the {len(tokens)} tokens and {len(kept_merges)} of the {len(merges)} merges of",
             f"# llama.cpp's models/ggml-vocab-{name}.gguf (MIT licence, LICENSE-llama.cpp), made by",
             "# reduce_vocab.py; see README.md for the format."]
    for key, field in reader.fields.items():
        if not key.startswith("tokenizer.ggml.") or len(field.types) != 1 or key == "tokenizer.chat_template":
            continue
        kind = field.types[0]
        value = field.contents()
        if kind == gguf.GGUFValueType.STRING:
            lines.append(f"key {key} str ".encode() + escape(value.encode()))
        elif kind == gguf.GGUFValueType.BOOL:
            lines.append(f"key {key} bool {'true' if value else 'false'}")
        elif kind == gguf.GGUFValueType.UINT32:
            lines.append(f"key {key} u32 {value}")
        elif kind == gguf.GGUFValueType.INT32:
            lines.append(f"key {key} i32 {value}")
        else:
            raise SystemExit(f"{key}: type {kind} not written by this script")
    lines.append(f"num_tokens {len(tokens)}")
    for i in sorted(kept):
        lines.append(f"token {i} {types[i]} ".encode() + escape(tokens[i]))
    for merge in kept_merges:
        lines.append(b"merge " + escape(merge))
    out = out_dir / f"{name}.vocab"
    out.write_bytes(b"\n".join(line if isinstance(line, bytes) else line.encode() for line in lines) + b"\n")
    print(f"{out}: {len(kept)} tokens, {len(kept_merges)} merges, {out.stat().st_size} bytes")


if __name__ == "__main__":
    main()
