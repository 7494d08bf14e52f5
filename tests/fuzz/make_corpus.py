#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets into tests/fuzz/corpus/<target>/: small valid
inputs of every kind each reader accepts, and a few hostile ones that once crashed them.
Run from anywhere; it rewrites the directories it owns. The inputs come from the samples,
tests/data/chat_templates and ../shared/tokenizer-vectors (texts only, when present)."""

import json
import pathlib
import struct

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
SHARED = ROOT.parent / "shared"
SEP = b"\x1e"  # separates the parts of a multi-part input (see each target's header)


def write(target, name, data):
    path = HERE / "corpus" / target / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data if isinstance(data, bytes) else data.encode())


# ---- GGUF ------------------------------------------------------------------------------

UINT8, INT8, UINT16, INT16, UINT32, INT32, FLOAT32, BOOL, STRING, ARRAY, UINT64, INT64, FLOAT64 = range(13)
SCALAR = {UINT8: "<B", INT8: "<b", UINT16: "<H", INT16: "<h", UINT32: "<I", INT32: "<i", FLOAT32: "<f",
          BOOL: "<?", UINT64: "<Q", INT64: "<q", FLOAT64: "<d"}


def gguf_string(text):
    data = text.encode() if isinstance(text, str) else text
    return struct.pack("<Q", len(data)) + data


def gguf_value(kind, value):
    if kind == STRING:
        return gguf_string(value)
    if kind == ARRAY:
        element_kind, items = value
        out = struct.pack("<IQ", element_kind, len(items))
        return out + b"".join(gguf_value(element_kind, item) for item in items)
    return struct.pack(SCALAR[kind], value)


def gguf(metadata, tensors=(), version=3, alignment=32):
    """metadata: [(key, kind, value)]; tensors: [(name, dims, ggml_type, data bytes)]."""
    out = b"GGUF" + struct.pack("<IQQ", version, len(tensors), len(metadata))
    for key, kind, value in metadata:
        out += gguf_string(key) + struct.pack("<I", kind) + gguf_value(kind, value)
    offset, placed = 0, []
    for name, dims, ggml_type, data in tensors:
        out += gguf_string(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims)
        out += struct.pack("<IQ", ggml_type, offset)
        placed.append((offset, data))
        offset = (offset + len(data) + alignment - 1) // alignment * alignment
    out += b"\0" * (-len(out) % alignment)
    start = len(out)
    for at, data in placed:
        out += b"\0" * (start + at - len(out)) + data
    return out


def llama_keys(arch="llama", layers=2, hidden=64, heads=4, kv_heads=2):
    return [("general.architecture", STRING, arch), ("general.name", STRING, "fuzz seed"),
            (f"{arch}.block_count", UINT32, layers), (f"{arch}.embedding_length", UINT32, hidden),
            (f"{arch}.feed_forward_length", UINT32, 128), (f"{arch}.attention.head_count", UINT32, heads),
            (f"{arch}.attention.head_count_kv", UINT32, kv_heads), (f"{arch}.context_length", UINT32, 256),
            (f"{arch}.rope.freq_base", FLOAT32, 10000.0),
            (f"{arch}.attention.layer_norm_rms_epsilon", FLOAT32, 1e-5)]


def gpt2_vocab():
    tokens = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "H", "e", "l", "o", "\u0120", "He", "ll", "Hell",
              "Hello", "\u0120w", "o\u0120", "1", "2", "3"]
    merges = ["H e", "l l", "He ll", "Hell o", "\u0120 w"]
    types = [3, 3, 3] + [1] * (len(tokens) - 3)
    return [("tokenizer.ggml.model", STRING, "gpt2"), ("tokenizer.ggml.pre", STRING, "smollm"),
            ("tokenizer.ggml.tokens", ARRAY, (STRING, tokens)), ("tokenizer.ggml.token_type", ARRAY, (INT32, types)),
            ("tokenizer.ggml.merges", ARRAY, (STRING, merges)), ("tokenizer.ggml.bos_token_id", UINT32, 1),
            ("tokenizer.ggml.eos_token_id", UINT32, 2), ("tokenizer.ggml.add_bos_token", BOOL, False),
            ("tokenizer.chat_template", STRING,
             "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + "
             "'<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}"
             "{% endif %}")]


def spm_vocab():
    tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)] + \
             ["\u2581", "\u2581H", "e", "l", "o", "\u2581Hello", "ll", "\u2581w", "or", "d"]
    types = [2, 3, 3] + [6] * 256 + [1] * 10
    scores = [0.0, 0.0, 0.0] + [0.0] * 256 + [-float(i) for i in range(10)]
    return [("tokenizer.ggml.model", STRING, "llama"), ("tokenizer.ggml.tokens", ARRAY, (STRING, tokens)),
            ("tokenizer.ggml.scores", ARRAY, (FLOAT32, scores)), ("tokenizer.ggml.token_type", ARRAY, (INT32, types)),
            ("tokenizer.ggml.bos_token_id", UINT32, 1), ("tokenizer.ggml.eos_token_id", UINT32, 2),
            ("tokenizer.ggml.unknown_token_id", UINT32, 0), ("tokenizer.ggml.add_bos_token", BOOL, True)]


def gguf_seeds():
    f32 = struct.pack("<8f", *range(8))
    q8_0 = struct.pack("<e", 0.5) + bytes(range(32))  # one Q8_0 block: f16 scale + 32 int8
    every_type = [("u8", UINT8, 255), ("i8", INT8, -128), ("u16", UINT16, 65535), ("i16", INT16, -5),
                  ("u32", UINT32, 7), ("i32", INT32, -7), ("f32", FLOAT32, 1.5), ("bool", BOOL, True),
                  ("str", STRING, "text"), ("u64", UINT64, 2**40), ("i64", INT64, -2**40), ("f64", FLOAT64, 2.25),
                  ("array.u8", ARRAY, (UINT8, [1, 2, 3])), ("array.str", ARRAY, (STRING, ["a", "bc"])),
                  ("array.nested", ARRAY, (ARRAY, [(UINT16, [1, 2]), (UINT16, [])])),
                  ("general.alignment", UINT32, 32)]
    tensors = [("norm.weight", [8], 0, f32), ("tok.weight", [32, 1], 8, q8_0)]
    write("fuzz_gguf", "every-value-type.gguf", gguf(every_type, tensors))
    write("fuzz_gguf", "every-value-type-v2.gguf", gguf(every_type, tensors, version=2))
    layer = [(f"blk.0.attn_q.bias", [64], 0, bytes(256))]
    write("fuzz_gguf", "llama-gpt2-vocab.gguf", gguf(llama_keys() + gpt2_vocab(), [("output_norm.weight", [64], 0, bytes(256))]))
    write("fuzz_gguf", "qwen2-gpt2-vocab.gguf", gguf(llama_keys("qwen2") + gpt2_vocab() + [("qwen2.vocab_size", UINT32, 17)], layer))
    write("fuzz_gguf", "llama-spm-vocab.gguf", gguf(llama_keys() + spm_vocab()))
    write("fuzz_gguf", "empty.gguf", gguf([]))


# ---- safetensors and config.json --------------------------------------------------------

def safetensors(header, data):
    text = json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + data


def safetensors_seeds():
    header = {"__metadata__": {"format": "pt"},
              "model.norm.weight": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
              "model.embed_tokens.weight": {"dtype": "BF16", "shape": [2, 2], "data_offsets": [8, 16]},
              "scale": {"dtype": "F64", "shape": [], "data_offsets": [16, 24]}}
    write("fuzz_safetensors", "three-tensors.safetensors", safetensors(header, bytes(range(24))))
    write("fuzz_safetensors", "empty.safetensors", safetensors({}, b""))
    write("fuzz_safetensors", "index.json", json.dumps(
        {"metadata": {"total_size": 11}, "weight_map": {"x": "a.safetensors", "y": "a.safetensors"}}))


HF_CONFIGS = {
    "llama-3.1.json": {"model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336,
                       "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
                       "vocab_size": 128256, "max_position_embeddings": 131072, "rms_norm_eps": 1e-05,
                       "rope_theta": 500000.0, "tie_word_embeddings": False,
                       "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                        "original_max_position_embeddings": 8192, "rope_type": "llama3"}},
    "qwen2.json": {"model_type": "qwen2", "hidden_size": 896, "intermediate_size": 4864, "num_hidden_layers": 24,
                   "num_attention_heads": 14, "num_key_value_heads": 2, "vocab_size": 151936,
                   "max_position_embeddings": 32768, "rope_theta": 1000000.0, "tie_word_embeddings": True,
                   "sliding_window": None},
    "mistral.json": {"model_type": "mistral", "hidden_size": 4096, "intermediate_size": 14336,
                     "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
                     "vocab_size": 32000, "max_position_embeddings": 32768, "sliding_window": 4096,
                     "head_dim": 128},
}


def hf_config_seeds():
    for name, config in HF_CONFIGS.items():
        write("fuzz_hf_config", name, json.dumps(config, indent=1))
    for sample in ("smollm2-135m.config.json", "llama-3-8b.config.json"):
        write("fuzz_hf_config", sample, (ROOT / "samples" / sample).read_bytes())


# ---- tokenizer files ---------------------------------------------------------------------

TINY_TOKENIZER = {
    "version": "1.0",
    "added_tokens": [
        {"id": 9, "content": "<|endoftext|>", "single_word": False, "lstrip": False, "rstrip": False,
         "normalized": False, "special": True},
        {"id": 10, "content": "<|im_start|>", "lstrip": False, "rstrip": False, "special": True},
        {"id": 11, "content": "<|im_end|>", "lstrip": True, "rstrip": True, "special": True},
        {"id": 12, "content": "<tool>", "normalized": True, "special": False}],
    "normalizer": None,
    "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
        {"type": "Digits", "individual_digits": True},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}]},
    "post_processor": {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<|endoftext|>"}},
                                                                {"Sequence": {"id": "A"}}]},
    "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
    "model": {"type": "BPE", "dropout": None, "unk_token": None, "ignore_merges": False,
              "vocab": {"h": 0, "e": 1, "l": 2, "o": 3, "\u0120": 4, "he": 5, "ll": 6, "hell": 7, "hello": 8,
                        "1": 13, "2": 14, "\u0120hello": 15},
              "merges": ["h e", ["l", "l"], "he ll", "hell o", "\u0120 hello"]}}

SPLIT_TOKENIZER = dict(TINY_TOKENIZER, normalizer={"type": "NFC"}, pre_tokenizer={
    "type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|"
                                               "\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},
         "behavior": "Isolated", "invert": False},
        {"type": "Split", "pattern": {"String": " "}, "behavior": "Removed"},
        {"type": "ByteLevel", "add_prefix_space": False, "use_regex": False}]})

TOKENIZER_CONFIG = {"add_bos_token": True, "add_eos_token": False, "bos_token": "<|endoftext|>",
                    "eos_token": {"content": "<|im_end|>", "special": True}, "unk_token": None,
                    "added_tokens_decoder": {"11": {"content": "<|im_end|>", "special": True}},
                    "chat_template": [{"name": "default", "template": "{{ bos_token }}{% for m in messages %}"
                                                                      "{{ m['content'] }}{% endfor %}"}]}


def varint(n):
    out = b""
    while True:
        byte, n = n & 0x7F, n >> 7
        out += bytes([byte | (0x80 if n else 0)])
        if not n:
            return out


def proto_field(number, wire, payload):
    if wire == 0:
        return varint(number << 3) + varint(payload)
    if wire == 5:
        return varint(number << 3 | 5) + struct.pack("<f", payload)
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def spm_model_proto():
    """A tiny SentencePiece BPE ModelProto: control tokens, bytes, a few pieces."""
    pieces = [("<unk>", 0.0, 2), ("<s>", 0.0, 3), ("</s>", 0.0, 3)] + \
             [(f"<0x{b:02X}>", 0.0, 6) for b in (0x0A, 0x20, 0x41, 0xC3, 0xA9)] + \
             [("\u2581", -1.0, 1), ("\u2581H", -2.0, 1), ("e", -3.0, 1), ("llo", -4.0, 1), ("\u2581Hello", -5.0, 1)]
    proto = b"".join(proto_field(1, 2, proto_field(1, 2, text.encode()) + proto_field(2, 5, score) +
                                 proto_field(3, 0, kind)) for text, score, kind in pieces)
    trainer = proto_field(3, 0, 2) + proto_field(4, 0, len(pieces)) + proto_field(35, 0, 1) + \
        proto_field(40, 0, 0) + proto_field(41, 0, 1) + proto_field(42, 0, 2)
    normalizer = proto_field(1, 2, b"identity") + proto_field(3, 0, 1) + proto_field(4, 0, 0)
    return proto + proto_field(2, 2, trainer) + proto_field(3, 2, normalizer)


def hf_tokenizer_seeds():
    config = json.dumps(TOKENIZER_CONFIG).encode()
    generation = json.dumps({"eos_token_id": [9, 11], "bos_token_id": 9}).encode()
    write("fuzz_hf_tokenizer", "tiny-bpe", json.dumps(TINY_TOKENIZER).encode() + SEP + config + SEP + generation)
    write("fuzz_hf_tokenizer", "split-bpe", json.dumps(SPLIT_TOKENIZER).encode() + SEP + SEP + generation)
    write("fuzz_hf_tokenizer", "spm-model", json.dumps({"added_tokens": []}).encode() + SEP + config + SEP + SEP +
          spm_model_proto())


def tokenizer_roundtrip_seeds():
    texts = ["Hello world", " Hello", "  leading spaces", "\t\n\r\n", "\u00e9t\u00e9 \u4e2d\u6587 \U0001F600",
             "<s> <|im_end|> <|endoftext|>", "123 4567 89", "a\u0000b", "\u0120\u2581 bytes"]
    for i, text in enumerate(texts):
        for vocab in range(5):  # gpt-2, llama-spm, phi-3, starcoder, the default model
            write("fuzz_tokenizer_roundtrip", f"text{i:02d}-vocab{vocab}", bytes([vocab]) + text.encode())
    vectors = SHARED / "tokenizer-vectors" / "ggml-vocab-gpt-2.gguf.inp"
    if vectors.exists():
        cases = [t for t in vectors.read_text().split("\n__ggml_vocab_test__\n") if t][:25]
        for i, text in enumerate(cases):
            write("fuzz_tokenizer_roundtrip", f"vector{i:02d}", bytes([i % 5]) + text.encode())


# ---- requests and chat templates ----------------------------------------------------------

def request_seeds():
    for sample in ("prompts.jsonl", "chat.jsonl", "openai_batch.jsonl"):
        write("fuzz_request_parser", sample, (ROOT / "samples" / sample).read_bytes())
    plain = [
        '{"id": 7, "prompt": "a", "temperature": 0.5, "top_p": 0.9, "top_k": -1, "min_p": 0.1, "seed": 3, '
        '"stop": ["x", "y"], "stop_token_ids": [1, 2], "max_tokens": 5, "min_tokens": 1, "ignore_eos": true, "n": 2}',
        '{"messages": [{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}]}',
        '', ' \t', '{"prompt": "a", "prompt": "b"}', '{"prompt": "a\\u00e9\\n", "id": null, "x": {"y": [1, {}]}}',
        '{"prompt": 5}', '[1, 2]', 'not json', '{"prompt": "a"} x', '{"custom_id": "r", "body": {}}']
    write("fuzz_request_parser", "plain-fields.jsonl", "\ufeff" + "\r\n".join(plain) + "\n")
    batch = [
        '{"custom_id": "r", "method": "POST", "url": "/v1/completions", "body": {"prompt": "p", '
        '"max_completion_tokens": 3, "stream": false, "logprobs": null, "best_of": 1, "logit_bias": {}, "user": "u"}}',
        '{"custom_id": "s", "method": "POST", "url": "/v1/chat/completions", "body": {"model": "m", '
        '"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]}}',
        '{"custom_id": "t", "method": "GET", "url": "/v1/embeddings", "body": {"prompt": ["a"]}}',
        '{"id": "plain", "prompt": "a"}']
    write("fuzz_request_parser", "openai-fields.jsonl", "\n".join(batch))
    hostile = [b'{"prompt": "a\x01b"}', b'{"prompt": "abc', b'{"prompt": "a", "x": ' + b"[" * 200 + b"]" * 200 + b"}",
               b'{"prompt": "a", "x": "\\', b'{"prompt": "\xff"}']
    write("fuzz_request_parser", "hostile.jsonl", b"\n".join(hostile) + b"\n")


def chat_template_seeds():
    """The real templates with a conversation (tools and content parts in some), and hostile
    templates: deep nesting, huge ranges and repeats, runaway recursion and output."""
    conversation = {"messages": [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Hi"},
                                 {"role": "assistant", "content": "Hello!"}, {"role": "user", "content": "Bye"}],
                    "bos_token": "<s>", "eos_token": "</s>", "add_generation_prompt": True}
    with_tools = dict(conversation, tools=[{"type": "function", "function": {
        "name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}])
    parts = dict(conversation, messages=[{"role": "user", "content": [{"type": "text", "text": "Hi \u00e9"}]},
                                         {"role": "assistant", "content": None,
                                          "tool_calls": [{"function": {"name": "f", "arguments": {"a": 1}}}]}])
    for path in sorted((ROOT / "tests" / "data" / "chat_templates").glob("*.jinja")):
        write("fuzz_chat_template", path.stem, path.read_bytes() + SEP + json.dumps(conversation).encode())
        write("fuzz_chat_template", path.stem + "-tools", path.read_bytes() + SEP + json.dumps(with_tools).encode())
        write("fuzz_chat_template", path.stem + "-parts", path.read_bytes() + SEP + json.dumps(parts).encode())
    hostile = {
        "deep-parentheses": "{{ " + "(" * 5000 + "1" + ")" * 5000 + " }}",
        "deep-ifs": "{% if true %}" * 500 + "x" + "{% endif %}" * 500,
        "deep-subscripts": "{{ messages" + "[0]" * 5000 + " }}",
        "long-operator-chain": "{{ 1" + " + 1" * 5000 + " }}",
        "huge-range": "{% for i in range(10**9) %}{{ i }}{% endfor %}",
        "nested-ranges": "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
        "huge-repeat": "{{ 'x' * 10**12 }}{{ [1] * 10**12 }}",
        "doubling-string": "{% set ns = namespace(s='ab') %}{% for i in range(80) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}",
        "runaway-macro": "{% macro f(n) %}{{ f(n + 1) }}{{ f(n + 2) }}{% endmacro %}{{ f(0) }}",
        "deep-macro-frames": "{% macro f(n) %}" + "{% if true %}" * 120 + "{{ f(" + "-" * 60 + "n) }}" +
                             "{% endif %}" * 120 + "{% endmacro %}{{ f(0) }}",
        "big-integers": "{{ 10**100 }}{{ 2**63 }}{{ -9223372036854775807 - 2 }}{{ 9223372036854775807 // -1 }}",
        "nesting-values": "{% set ns = namespace(v=[]) %}{% for i in range(2000) %}{% set ns.v = [ns.v] %}{% endfor %}{{ ns.v }}{{ ns.v | tojson }}",
        "format-widths": "{{ '%999999999s' % 'x' }}{{ '{:>999999999}'.format('x') }}{{ 'x' | indent(10**12) }}",
        "unclosed": "{% for m in messages %}{% if m %}{{ m.role",
        "raise": "{{ raise_exception('no ' ~ messages[0].role) }}",
    }
    for name, template in hostile.items():
        write("fuzz_chat_template", name, template.encode() + SEP + json.dumps(conversation).encode())
    write("fuzz_chat_template", "deep-json", b"{{ x | tojson }}" + SEP + b'{"x": ' + b"[" * 5000 + b"]" * 5000 + b"}")


# ---- JSON schemas (structured outputs) -----------------------------------------------------
# The sizes keep each seed under about 150 KB: big enough to walk the compiler's long paths
# (issue 32's cases), small enough that a mutated copy still runs in well under a second.

def compact(value):
    return json.dumps(value, separators=(",", ":"))


def chained_refs_schema(n):
    """$defs d0 -> d1 -> ... -> d(n-1) -> a short string, the root referring to d0."""
    defs = {f"d{i}": {"$ref": f"#/$defs/d{i + 1}"} for i in range(n)}
    defs[f"d{n}"] = {"type": "string", "maxLength": 4}
    return compact({"$ref": "#/$defs/d0", "$defs": defs})


def nested_schema(keyword, depth):
    """`depth` levels of anyOf (or properties, or items) around an integer."""
    schema = {"type": "integer", "minimum": 0, "maximum": 9}
    for _ in range(depth):
        if keyword == "anyOf":
            schema = {"anyOf": [schema, {"type": "null"}]}
        elif keyword == "properties":
            schema = {"type": "object", "properties": {"a": schema}, "required": ["a"]}
        else:
            schema = {"type": "array", "items": schema, "maxItems": 2}
    return compact(schema)


def optional_properties_schema(n):
    return compact({"type": "object", "properties": {f"p{i}": {"type": "integer"} for i in range(n)}})


SMALL_SCHEMAS = {
    "true": True, "false": False, "empty": {},
    "object": {"type": "object", "properties": {"name": {"type": "string", "minLength": 1, "maxLength": 8},
                                                "age": {"type": "integer", "minimum": 0, "maximum": 150},
                                                "tags": {"type": "array", "items": {"type": "string"}}},
               "required": ["name"], "additionalProperties": False},
    "open-object": {"type": "object", "additionalProperties": {"type": "number"}},
    "array": {"type": "array", "prefixItems": [{"const": 1}, {"type": "boolean"}], "items": {"type": "null"},
              "minItems": 2, "maxItems": 5},
    "old-array": {"type": "array", "items": [{"type": "string"}], "additionalItems": False},
    "enum": {"enum": ["a", 1, None, True, {"k": [1]}, 1.5e300]},
    "numbers": {"type": ["number", "integer", "null"], "exclusiveMinimum": -5, "exclusiveMaximum": 5.5},
    "choices": {"oneOf": [{"type": "string"}, {"allOf": [{"type": "integer", "maximum": -1}]}],
                "anyOf": [{"type": "string", "maxLength": 0}, {"type": "integer"}]},
    "recursive-tree": {"$ref": "#/$defs/node", "$defs": {"node": {
        "type": "object", "properties": {"v": {"type": "integer"}, "kids": {"type": "array",
                                                                              "items": {"$ref": "#/$defs/node"}}},
        "required": ["v"]}}},
    "pointer-escapes": {"$ref": "#/definitions/a~1b~0c%25", "definitions": {"a/b~c%": {"type": "boolean"}}},
    "refused": {"type": "string", "pattern": "^a+$", "format": "email", "not": {"const": 1}},
    "left-recursion": {"$ref": "#/$defs/a", "$defs": {"a": {"anyOf": [{"$ref": "#/$defs/a"}, {"type": "null"}]}}},
    "unsatisfiable": {"type": "integer", "minimum": 5, "maximum": 1},
    "annotations": {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": "x", "title": "t",
                    "description": "d", "default": 1, "examples": [1], "x-unknown": {"pattern": 1}},
}

# Values of every JSON type, for each keyword the compiler reads (most are malformed there).
KEYWORD_VALUES = {"null": None, "true": True, "int": 3, "negative": -1, "float": 1.5, "huge": 1e300,
                  "string": "s", "array": [1, "a"], "object": {"a": 1}}


def json_schema_seeds():
    for name, schema in SMALL_SCHEMAS.items():
        write("fuzz_json_schema", f"{name}.json", compact(schema))
    for keyword in ("type", "enum", "const", "anyOf", "oneOf", "allOf", "$ref", "properties", "required",
                    "additionalProperties", "items", "prefixItems", "additionalItems", "minItems", "maxItems",
                    "minLength", "maxLength", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        for kind, value in KEYWORD_VALUES.items():
            write("fuzz_json_schema", f"keyword-{keyword.lstrip('$')}-{kind}.json", compact({keyword: value}))
    write("fuzz_json_schema", "ref-chain-5000.json", chained_refs_schema(5000))
    write("fuzz_json_schema", "anyof-nested-200.json", nested_schema("anyOf", 200))
    write("fuzz_json_schema", "anyof-wide-500.json", compact({"anyOf": [{"const": i} for i in range(500)]}))
    write("fuzz_json_schema", "properties-nested-200.json", nested_schema("properties", 200))
    write("fuzz_json_schema", "items-nested-200.json", nested_schema("items", 200))
    write("fuzz_json_schema", "optional-properties-120.json", optional_properties_schema(120))
    write("fuzz_json_schema", "optional-properties-3000.json", optional_properties_schema(3000))


def schema_line(request_id, schema_text):
    return ('{"id": "%s", "prompt": "A JSON value:", "response_format": {"type": "json_schema", '
            '"json_schema": {"name": "s", "schema": %s}}}' % (request_id, schema_text))


def response_format_seeds():
    formats = [
        '{"id": "text", "prompt": "a", "response_format": {"type": "text"}}',
        '{"id": "object", "prompt": "a", "response_format": {"type": "json_object"}}',
        schema_line("small", compact(SMALL_SCHEMAS["object"])),
        schema_line("tree", compact(SMALL_SCHEMAS["recursive-tree"])),
        schema_line("refused", compact(SMALL_SCHEMAS["refused"])),
        schema_line("bad-min", '{"type": "string", "minLength": -1}'),
        schema_line("bool", "true"),
        '{"id": "no-schema", "prompt": "a", "response_format": {"type": "json_schema", "json_schema": {"name": "s"}}}',
        '{"id": "odd", "prompt": "a", "response_format": {"type": "xml", "json_schema": 1, "extra": null}}',
        '{"custom_id": "b", "method": "POST", "url": "/v1/chat/completions", "body": {"messages": '
        '[{"role": "user", "content": "u"}], "response_format": {"type": "json_schema", "json_schema": '
        '{"name": "n", "strict": true, "description": "d", "schema": {"enum": [1, 2]}}}}}']
    write("fuzz_request_parser", "response-formats.jsonl", "\n".join(formats) + "\n")
    write("fuzz_request_parser", "ref-chain-2000.jsonl", schema_line("chain", chained_refs_schema(2000)) + "\n")
    write("fuzz_request_parser", "optional-properties.jsonl",
          schema_line("compiles", optional_properties_schema(120)) + "\n" +
          schema_line("refused", optional_properties_schema(2000)) + "\n")
    write("fuzz_request_parser", "nested-schemas.jsonl",
          "\n".join(schema_line(k, nested_schema(k, 100)) for k in ("anyOf", "properties", "items")) + "\n")
    many_keys = '{"id": "keys", "prompt": "Hi"' + "".join(f', "k{i}": {i}' for i in range(10000)) + "}"
    write("fuzz_request_parser", "many-keys.jsonl", many_keys + "\n")


# ---- guided outputs: regexes ('r'), choices ('c', one per line), GBNF grammars ('g') ----------
# Beside small cases of every construct, the hostile ones: bounds past the automaton's
# caps, nested bounded repeats, a deterministic automaton that would blow up, deep
# nesting, long rule chains, left recursion, many choices.

REGEXES = [r"[0-9]{3}-[0-9]{4}", r"(yes|no), [a-z]{2,8}( [a-z]{2,8}){0,3}\.", r"^(?:cat|dog)s?$|bird|",
           r"[^\"\n]*\u00e9\x41\t\d\w\s\D\W\S.", r"(?<name>ab)+?c*?d??e{2,}f{1,3}", r"[\d-z\]]+\uD83D\uDE00",
           r"a{1000000}", r"((a{100}){100}){100}", r"(a|b)*a(a|b){20}", r"(a)\1", r"a(?=b)", r"(?<!a)b", r"\bx",
           r"\p{L}", r"a^b", r"(ab", r"ab)", r"*a", r"a{3,2}", r"[b-a]", r"[^\s\S]", r"a{,2}", r"\uD800", r"(?i)a"]
GRAMMARS = {
    "list": 'root ::= "[" ws ( item ( "," ws item )* )? ws "]"\nitem ::= [a-z]+ | num\nnum ::= "-"? [0-9]{1,3}\n'
            'ws ::= [ \\t\\n]*\n',
    "nested": 'root ::= ws expr ws\nexpr ::= "(" ws expr? ws ")" | [0-9]\nws ::= " "*\n',
    "unicode": 'root ::= "caf\\u00e9 " [^\\x00-\\x7F]{2} "\\U0001F600" .\n',
    "empty-root": 'root ::= "a"* | ""\n',
    "self": 'root ::= ( "<" root ">" )*\n',
    "left-recursion": 'root ::= root "a" | "b"\n',
    "undefined": 'root ::= "a" b\n',
    "unproductive": 'root ::= a\na ::= "x" a\n',
    "token-reference": "root ::= <think>\n",
    "big-bound": 'root ::= "a"{1000000}\n',
    "nested-bounds": 'root ::= (("ab"{100}){100}){100}\n',
}


def guided_seeds():
    for i, regex in enumerate(REGEXES):
        write("fuzz_guided", f"regex-{i:02d}", "r" + regex)
    for name, grammar in GRAMMARS.items():
        write("fuzz_guided", f"gbnf-{name}", "g" + grammar)
    write("fuzz_guided", "gbnf-deep-20000", "groot ::= " + "(" * 20000 + '"x"' + ")" * 20000 + "\n")
    write("fuzz_guided", "gbnf-chain-3000",
          "groot ::= r0\n" + "".join(f'r{i} ::= r{i + 1} "a"\n' for i in range(3000)) + 'r3000 ::= "b"\n')
    write("fuzz_guided", "regex-deep-20000", "r" + "(" * 20000 + "a" + ")*" * 20000)
    write("fuzz_guided", "choices-small", "c" + "\n".join(["yes", "yesterday", "no", "", "caf\u00e9", "\"q\""]))
    write("fuzz_guided", "choices-10000", "c" + "\n".join(f"choice {i} of many" for i in range(10000)))


# Inputs that fuzz runs found, committed by hand beside the generated seeds: kept.
FOUND_INPUTS = {"fuzz_request_parser": ("big-integer-id.jsonl", "big-integer-id-2.jsonl",
                                        "format-after-broken-lines.jsonl")}


def main():
    for target in ("fuzz_gguf", "fuzz_safetensors", "fuzz_hf_config", "fuzz_hf_tokenizer", "fuzz_request_parser",
                   "fuzz_tokenizer_roundtrip", "fuzz_chat_template", "fuzz_json_schema", "fuzz_guided"):
        for path in (HERE / "corpus" / target).glob("*"):
            if path.name not in FOUND_INPUTS.get(target, ()):
                path.unlink()
    gguf_seeds()
    safetensors_seeds()
    hf_config_seeds()
    hf_tokenizer_seeds()
    tokenizer_roundtrip_seeds()
    request_seeds()
    response_format_seeds()
    json_schema_seeds()
    guided_seeds()
    chat_template_seeds()


if __name__ == "__main__":
    main()
