#!/usr/bin/env python3
"""Checks pagedgen's guided outputs with code that shares nothing with its compilers.

Usage: validate_guided_outputs.py FORMATS.json OUTPUT.jsonl

FORMATS.json maps each request's id (plain "id" or OpenAI "custom_id") to what its text
must be: {"choice": [...]} (exactly one of the texts), {"regex": P} (re.fullmatch, so P
must mean the same in Python and ECMA-262), {"grammar": GBNF} (parsed and matched by the
small GBNF reader below), or {"pattern": {KEY: P, ...}} (the text is a JSON object whose
string value at each KEY contains a match of P: re.search on the decoded value). A sample
cut by max_tokens (finish_reason "length") is counted, not checked. Prints one JSON line:
{"records", "samples", "finished", "cut", "invalid": [...], "errors": [...],
"by_kind": {kind: {"finished", "cut"}}}.
"""
import json
import re
import sys

from validate_structured_outputs import samples_of  # reads both output formats


# --- GBNF: a reader and a matcher over code points -----------------------------------------

def parse_gbnf(text):
    """{rule name: node}; nodes are ("alt", [seq]), ("seq", [node]), ("chars", negated,
    [(lo, hi)]), ("any",), ("ref", name), ("rep", node, min, max or None)."""
    pos = 0
    n = len(text)

    def skip():
        nonlocal pos
        while pos < n:
            if text[pos] == "#":
                while pos < n and text[pos] != "\n":
                    pos += 1
            elif text[pos].isspace():
                pos += 1
            else:
                return

    def name_at(p):
        m = re.compile(r"[A-Za-z0-9_-]+").match(text, p)
        return m.group(0) if m else ""

    def at_definition():
        name = name_at(pos)
        if not name:
            return False
        p = pos + len(name)
        while p < n and text[p].isspace():
            p += 1
        return text.startswith("::=", p)

    def char():
        nonlocal pos
        c = text[pos]
        pos += 1
        if c != "\\":
            return c
        e = text[pos]
        pos += 1
        simple = {"n": "\n", "r": "\r", "t": "\t"}
        if e in simple:
            return simple[e]
        digits = {"x": 2, "u": 4, "U": 8}.get(e)
        if digits:
            value = int(text[pos:pos + digits], 16)
            pos += digits
            return chr(value)
        return e

    def item():
        nonlocal pos
        c = text[pos]
        if c == '"':
            pos += 1
            chars = []
            while text[pos] != '"':
                chars.append(char())
            pos += 1
            return ("seq", [("chars", False, [(ord(ch), ord(ch))]) for ch in chars])
        if c == "[":
            pos += 1
            negated = text[pos] == "^"
            if negated:
                pos += 1
            ranges = []
            while text[pos] != "]":
                lo = hi = ord(char())
                if text[pos] == "-" and text[pos + 1] != "]":
                    pos += 1
                    hi = ord(char())
                ranges.append((lo, hi))
            pos += 1
            return ("chars", negated, ranges)
        if c == ".":
            pos += 1
            return ("any",)
        if c == "(":
            pos += 1
            node = alternatives(nested=True)
            assert text[pos] == ")"
            pos += 1
            return node
        name = name_at(pos)
        assert name, f"unexpected {c!r} at {pos}"
        pos += len(name)
        return ("ref", name)

    def repetition(node):
        nonlocal pos
        c = text[pos] if pos < n else ""
        if c in "*+?":
            pos += 1
            return ("rep", node, 1 if c == "+" else 0, 1 if c == "?" else None)
        if c == "{":
            end = text.index("}", pos)
            body = text[pos + 1:end].replace(" ", "")
            pos = end + 1
            lo, _, hi = body.partition(",")
            low = int(lo) if lo else 0
            high = low if "," not in body else (int(hi) if hi else None)
            return ("rep", node, low, high)
        return node

    def alternatives(nested):
        nonlocal pos
        seqs = [[]]
        while True:
            skip()
            if pos >= n or (not nested and at_definition()):
                break
            c = text[pos]
            if c == ")" and nested:
                break
            if c == "|":
                pos += 1
                seqs.append([])
                continue
            node = item()
            node = repetition(node)
            seqs[-1].append(node)
        return ("alt", [("seq", s) for s in seqs])

    rules = {}
    skip()
    while pos < n:
        name = name_at(pos)
        pos += len(name)
        skip()
        assert text.startswith("::=", pos), f"expected ::= at {pos}"
        pos += 3
        rules[name] = alternatives(nested=False)
        skip()
    return rules


def gbnf_matches(rules, text):
    """Whether the whole text is in the language of rules["root"]."""
    memo = {}

    def ends(node, i):
        key = (id(node), i)
        if key in memo:
            return memo[key]
        memo[key] = frozenset()  # no left recursion in the tested grammars
        kind = node[0]
        if kind == "alt":
            out = frozenset().union(*(ends(s, i) for s in node[1]))
        elif kind == "seq":
            out = frozenset([i])
            for part in node[1]:
                out = frozenset().union(*(ends(part, j) for j in out)) if out else out
        elif kind == "chars":
            inside = i < len(text) and any(lo <= ord(text[i]) <= hi for lo, hi in node[2])
            out = frozenset([i + 1]) if i < len(text) and inside != node[1] else frozenset()
        elif kind == "any":
            out = frozenset([i + 1]) if i < len(text) else frozenset()
        elif kind == "ref":
            out = ends(rules[node[1]], i)
        else:  # rep
            _, inner, low, high = node
            out, frontier, count = set(), {i}, 0
            if low == 0:
                out.add(i)
            while frontier and (high is None or count < high):
                count += 1
                frontier = set().union(*(ends(inner, j) for j in frontier)) - (out if count > low else set())
                if count >= low:
                    out |= frontier
            out = frozenset(out)
        memo[key] = out
        return out

    return len(text) in ends(rules["root"], 0)


# --- the outputs --------------------------------------------------------------------------

def problem_of(text, expected, grammars):
    if "choice" in expected:
        return None if text in expected["choice"] else "not one of the choices"
    if "regex" in expected:
        return None if re.fullmatch(expected["regex"], text) else "the regex does not match the whole text"
    if "grammar" in expected:
        rules = grammars.setdefault(expected["grammar"], parse_gbnf(expected["grammar"]))
        return None if gbnf_matches(rules, text) else "the grammar does not match the text"
    try:
        value = json.loads(text)
    except ValueError as e:
        return f"not JSON: {e}"
    for key, pattern in expected["pattern"].items():
        if not isinstance(value.get(key), str) or not re.search(pattern, value[key]):
            return f"{key}: no match of {pattern!r}"
    return None


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        formats = json.load(f)
    summary = {"records": 0, "samples": 0, "finished": 0, "cut": 0, "invalid": [], "errors": [], "by_kind": {}}
    grammars = {}
    with open(sys.argv[2], encoding="utf-8") as f:
        for line in f:
            summary["records"] += 1
            request_id, samples, error = samples_of(line)
            if error is not None:
                summary["errors"].append({"id": request_id, "error": error})
                continue
            expected = formats[str(request_id)]
            counts = summary["by_kind"].setdefault(next(iter(expected)), {"finished": 0, "cut": 0})
            for text, finish_reason in samples:
                summary["samples"] += 1
                state = "cut" if finish_reason == "length" else "finished"
                summary[state] += 1
                counts[state] += 1
                problem = None if state == "cut" else problem_of(text, expected, grammars)
                if problem:
                    summary["invalid"].append({"id": request_id, "text": text, "problem": problem})
    print(json.dumps(summary, ensure_ascii=False))


if __name__ == "__main__":
    main()
