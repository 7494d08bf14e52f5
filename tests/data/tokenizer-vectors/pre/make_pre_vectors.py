#!/usr/bin/env python3
"""Reference ids for every GGUF pre-tokenizer on one vocabulary: llama.cpp's gpt-2
vocabulary (../shared/tokenizer-vectors/ggml-vocab-gpt-2.gguf) with tokenizer.ggml.pre set
to each NAME, tokenized by llama-cpp-python (which builds llama.cpp from source) without
BOS and without special-token parsing. The texts are texts.inp (llama.cpp's standard test
texts, then a few aimed at how the pre-tokenizers differ: case, digits, CJK, scripts with
marks, slashes, long spaces).

Names whose ids agree on every text are one family: FAMILY.out holds their ids (one line
per text, as llama.cpp's .out files) and names.txt lists "FAMILY.out NAME NAME ...".

Usage: make_pre_vectors.py GPT2_VOCAB.gguf NAME...   (in a venv with llama-cpp-python, gguf)
"""
import sys
import tempfile
from pathlib import Path

import gguf
import llama_cpp

HERE = Path(__file__).resolve().parent
SEPARATOR = "\n__ggml_vocab_test__\n"


def with_pre(source: Path, pre: str, out: Path):
    reader = gguf.GGUFReader(str(source))
    writer = gguf.GGUFWriter(str(out), arch=reader.fields["general.architecture"].contents())
    for key, field in reader.fields.items():
        if key.startswith("GGUF.") or key == "general.architecture":
            continue
        value = pre if key == "tokenizer.ggml.pre" else field.contents()
        sub_type = field.types[1] if len(field.types) > 1 else None
        writer.add_key_value(key, value, field.types[0], sub_type=sub_type)
    if "tokenizer.ggml.pre" not in reader.fields:
        writer.add_string("tokenizer.ggml.pre", pre)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.close()


def tokenize_all(vocab: Path, texts):
    model = llama_cpp.Llama(model_path=str(vocab), vocab_only=True, verbose=False)
    return [model.tokenize(text.encode("utf-8"), add_bos=False, special=False) for text in texts]


def main():
    source, names = Path(sys.argv[1]), sys.argv[2:]
    content = (HERE / "texts.inp").read_bytes().decode("utf-8")  # keeps \r\n
    texts = content.split(SEPARATOR)
    if texts and texts[-1] == "":
        texts.pop()
    families = {}  # ids of all texts -> names
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            vocab = Path(tmp) / f"{name}.gguf"
            with_pre(source, name, vocab)
            ids = tuple(tuple(row) for row in tokenize_all(vocab, texts))
            families.setdefault(ids, []).append(name)
    lines = []
    for ids, family in families.items():
        out = f"{family[0]}.out"
        (HERE / out).write_text("".join(" ".join(map(str, row)) + "\n" for row in ids))
        lines.append(" ".join([out] + family))
    (HERE / "names.txt").write_text("\n".join(lines) + "\n")
    print(f"{len(texts)} texts, {len(names)} names, {len(families)} families")


if __name__ == "__main__":
    main()
