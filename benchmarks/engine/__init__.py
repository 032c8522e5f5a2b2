"""The library alone: ``tokenizers`` (BPE training and encoding against HuggingFace and
tiktoken), ``train`` (against ``nanogpt_ref``, nanoGPT's loop rewritten to run in the same
process), ``generate`` and ``rope`` (the KV cache against nanoGPT's loop), ``beam`` (against
greedy decoding) and ``models`` (loading the bundled models)."""
