#!/usr/bin/env python3
"""Writes the GPU decode benchmark's workload: 256 plain prompts of ~985 tokens, in 8
groups of 32 that share a ~970-token document and differ only in a short question at the
end, so that with prefix sharing each document is prefilled once. Lines are plain prompts,
{"id": "doc3-q17", "prompt": "..."}, grouped by document (the planner reorders anyway).
The text is English-like filler drawn from a fixed word list by a seeded generator: the
same --seed gives the same file on every machine and Python 3 version (only
random.Random(seed).random() is used, whose sequence Python guarantees).

Token counts, measured with `pagedgen tokenize` on the default model (SmolLM2, a GPT-2
style byte-level BPE that adds no BOS) at the default settings: the 8 documents (875
words + a 2-word header) are 961-979 tokens, the 256 prompts 976-995 (mean 984): about
1.11 tokens per word, since the list's words are common ones that are mostly one token.
Llama 3's tokenizer (byte-level BPE too, a 128k vocabulary holding these words) should
split this text no finer (not measured here); the usual ~1.3 tokens per word is for
varied real text. --doc-words and --question-words move the lengths.

Run it (the throughput target's measurement; the dummy Llama-3-8B shape, the default model's
tokenizer, whose 49,152 ids fit the config's 128,256):
  scripts/make-gpu-workload.py -o /tmp/gpu-workload.jsonl
  build/app/pagedgen generate -m samples/llama-3-8b.config.json --load-format dummy \\
      --tokenizer ~/.cache/pagedgen/models/SmolLM2-135M-Instruct.Q4_1.gguf \\
      -i /tmp/gpu-workload.jsonl -o /tmp/gpu-out.jsonl --stats /tmp/gpu-stats.json \\
      --ignore-eos --max-num-seqs 256 --max-batch-tokens 8192 --max-tokens 128 --temperature 0
and once more with --no-prefix-sharing for the run without sharing.
"""
import argparse
import json
import random
import sys

WORDS = """
the of and to in a is that for it as was with be by on not he this are or his from at
which but have an they you were her she there been one all we their has would when if so
no will can more other its into than them only some could these may first then do any
like my now over such our man me even most made after also did many before must through
back years where much your way well down should because each just those people how too
little state good very make world still own see men work long get here between both life
being under never day same another know while last might us great old year off come since
against go came right used take three states himself few house use during without again
place around however home small found thought went say part once general high upon school
every does got united left number course war until always away something fact though
water less public put think almost hand enough far took head yet government system better
set told nothing night end why called didn eyes find going look asked later knew point
next program city business give group toward young days let room president side social
given present several order national possible rather second face per among form important
often things looking early white case john become large big need four within felt along
children saw best church ever least power development light thing seemed family interest
want members mind country area others done turned although open god service certain kind
problem began different door thus help sense means whole matter perhaps itself york times
law human line above name example action company hands local show five history whether
gave either act today feet across taken past quite anything seen having death week body
word half really field car words already themselves information tell college shall money
period held keep sure free seems real behind cannot miss political air question making
office brought whose special major heard problems federal became study ago moment
available known result street economic boy position reason change south board individual
job society areas west close turn love community true court force full seem am wife age
policy voice plan future military evidence report sound river morning stone mountain
""".split()


class Text:
    """Words drawn from WORDS by one seeded stream, in sentences of 6-17 words."""

    def __init__(self, seed):
        self.rng = random.Random(seed)

    def below(self, n):
        return int(self.rng.random() * n)

    def sentence(self, max_words):
        n = min(max_words, 6 + self.below(12))
        words = [WORDS[self.below(len(WORDS))] for _ in range(n)]
        return " ".join(words).capitalize(), n

    def sentences(self, num_words, end="."):
        out, left = [], num_words
        while left > 0:
            text, n = self.sentence(left)
            out.append(text + end)
            left -= n
        return " ".join(out)


def document(text, index, num_words):
    return f"Document {index + 1}.\n\n" + text.sentences(num_words)


def question(text, num_words):
    return text.sentences(num_words, end="?")


def workload(args):
    text = Text(args.seed)
    for d in range(args.documents):
        doc = document(text, d, args.doc_words)
        for q in range(args.questions):
            prompt = f"{doc}\n\nQuestion {q + 1}: {question(text, args.question_words)}\nAnswer:"
            yield {"id": f"doc{d}-q{q}", "prompt": prompt}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-o", "--output", default="-", help="JSONL file to write (default: standard output)")
    parser.add_argument("--seed", type=int, default=10, help="generator seed (default 10)")
    parser.add_argument("--documents", type=int, default=8, help="shared documents (default 8)")
    parser.add_argument("--questions", type=int, default=32, help="questions per document (default 32)")
    parser.add_argument("--doc-words", type=int, default=875, help="words per document (default 875, ~970 tokens)")
    parser.add_argument("--question-words", type=int, default=5, help="words per question (default 5, ~15 tokens with its frame)")
    args = parser.parse_args()
    out = sys.stdout if args.output == "-" else open(args.output, "w", encoding="utf-8")
    with out:
        for line in workload(args):
            out.write(json.dumps(line) + "\n")


if __name__ == "__main__":
    main()
