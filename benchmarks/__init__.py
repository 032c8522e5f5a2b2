"""The scripts behind BENCHMARKS.md, by what they measure; run each from the repository's root
as ``python -m benchmarks.<room>.<name> --help``.

- ``engine``: the library alone, beside a reference in the same run (tokenizers against
  tiktoken and HuggingFace, training and generation against nanoGPT's loop, beam search
  against greedy decoding, model loading);
- ``app``: the pages, on the server (AppTest's warm runs) and in Chromium, beside a bare
  one-line Streamlit page in the same run;
- ``server``: one server's capacity: a class at once, the memory of a session, of an upload,
  of a GPT-2-sized model.

``common`` holds what they share (the machine's line, timing, the server and the bare page).
"""
