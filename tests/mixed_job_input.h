// The input the batch-job tests share: greedy and seeded lines, chat and plain, with blank
// and bad lines among them (12 lines, 10 requests; line 5 is bad), and the flags they run
// it with (4 tokens each, a fixed run seed).
#pragma once

namespace pagedgen::test {

inline constexpr const char* kInput = R"({"id": "g1", "prompt": "The capital of France is", "temperature": 0}
{"id": "s1", "prompt": "Once upon a time", "temperature": 0.8}

{"id": "c1", "messages": [{"role": "user", "content": "Name a fruit."}], "temperature": 0}
{"id": "s2", "prompt": "Once upon a time", "temperature": 1.0, "n": 2, "seed": 3}
{"id": "bad", "prompt": 7}
{"id": "c2", "messages": [{"role": "user", "content": "Name a color."}], "temperature": 0.7}
{"id": "g2", "prompt": "The capital of Italy is", "temperature": 0}

{"id": "c3", "messages": [{"role": "user", "content": "Name a fruit."}], "temperature": 0}
{"id": "g3", "prompt": "Two plus two is", "temperature": 0}
{"id": "s3", "prompt": "The sea is", "temperature": 0.9, "top_p": 0.8}
)";

inline constexpr const char* kFlags = "--max-tokens 4 --seed 9";

}  // namespace pagedgen::test
