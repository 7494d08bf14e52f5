#!/usr/bin/env python3
"""HF tokenizers' ids for the pre-tokenizers whose llama.cpp patterns only approximate
their tokenizer.json: llama.cpp reads \\p{Lu}, \\p{Ll}, ... as "any letter" and \\b as an
ASCII word boundary, so on some texts llama-cpp-python's ids are not the model's. For
those texts hf.out holds HF tokenizers' ids (the tokenizer.json patterns, run by the
library the models ship with), on the same gpt-2 vocabulary: lines "NAME TEXT_INDEX ids".
The other texts keep llama-cpp-python's ids; this script checks that HF agrees on them.

Usage: hf_check.py GPT2_VOCAB.gguf   (in a venv with tokenizers, gguf)
"""
import sys
from pathlib import Path

import gguf
from tokenizers import Regex, Tokenizer, models, pre_tokenizers

HERE = Path(__file__).resolve().parent
SEPARATOR = "\n__ggml_vocab_test__\n"
O200K = (r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
         r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?")
FAMILIES = {  # tokenizer.json split patterns, ignore_merges
    "tiny_aya": ([r"\d{1,3}(?=(?:\d{3})*\b)", O200K + r"|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"], False),
    "youtu": (["[가-힣ㄱ-ㆎ]+|[！…“”‘’—：；，、-〿︰-﹏]+|[ㄅ-ㄯ]+|[一-龥぀-ゟ゠-ヿ]+",
               O200K + r"|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"], True),
}


def main():
    reader = gguf.GGUFReader(sys.argv[1])
    tokens = reader.fields["tokenizer.ggml.tokens"].contents()
    merges = [tuple(m.split(" ", 1)) for m in reader.fields["tokenizer.ggml.merges"].contents()]
    vocab = {t: i for i, t in enumerate(tokens)}
    texts = (HERE / "texts.inp").read_bytes().decode("utf-8").split(SEPARATOR)[:-1]
    names = {line.split()[0]: line.split()[1:] for line in (HERE / "names.txt").read_text().splitlines()}
    lines = []
    for family, (patterns, ignore_merges) in FAMILIES.items():
        tok = Tokenizer(models.BPE(vocab, merges, ignore_merges=ignore_merges))
        tok.pre_tokenizer = pre_tokenizers.Sequence(
            [pre_tokenizers.Split(Regex(p), behavior="isolated") for p in patterns]
            + [pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
        out_file = next(f for f, ns in names.items() if family in ns)
        llama = [l.split() for l in (HERE / out_file).read_text().splitlines()]
        for i, text in enumerate(texts):
            ids = [str(x) for x in tok.encode(text, add_special_tokens=False).ids]
            if ids != llama[i]:
                for name in names[out_file]:
                    lines.append(f"{name} {i} {' '.join(ids)}")
                print(f"{family} text {i}: HF differs from llama.cpp")
    (HERE / "hf.out").write_text("".join(l + "\n" for l in lines))


if __name__ == "__main__":
    main()
