"""Generated text never shows "�": bytes that are no whole character show as ‹e2 80›, the
notation of the token chips, and whole characters stay text, even when a token boundary
falls inside them. The Training page's samples and before/after texts go through this."""

from __future__ import annotations

import pytest

from gptviz.app.shared.chips import show_bytes
from gptviz.tokenizers import train_tokenizer
from gptviz.tokenizers.readable import byte_runs, readable_bytes, readable_decode
from gptviz.train.before_after import continuation
from tests.helpers import tiny_gpt

TEXT = "é 𝔄 🜁"  # 2-, 4- and 4-byte characters: c3 a9 20 f0 9d 94 84 20 f0 9f 9c 81


@pytest.fixture(scope="module")
def bpe():
    """Byte-level BPE with no merges: one token per byte, so any cut can split a character."""
    return train_tokenizer("bpe", "abc", vocab_size=260)


def test_the_bpe_gives_one_token_per_byte(bpe):
    assert len(bpe.encode(TEXT)) == len(TEXT.encode()) == 12


@pytest.mark.parametrize("cut, expected", [
    (1, "‹c3›"),  # half of é
    (2, "é"),
    (4, "é ‹f0›"),
    (6, "é ‹f0 9d 94›"),  # three of 𝔄's four bytes
    (7, "é 𝔄"),
    (10, "é 𝔄 ‹f0 9f›"),
    (12, TEXT),
])
def test_a_text_cut_mid_character_shows_the_cut_as_bytes(bpe, cut, expected):
    ids = bpe.encode(TEXT)[:cut]
    assert readable_decode(bpe, ids) == expected
    if expected != TEXT and cut != 2 and cut != 7:
        assert "\ufffd" in bpe.decode(ids)  # what the page printed before


def test_the_notation_is_the_chips_notation(bpe):
    data = TEXT.encode()[3:5]  # f0 9d
    assert readable_bytes(data) == show_bytes(data) == "‹f0 9d›"


def test_a_character_split_over_two_tokens_is_whole_again():
    tok = train_tokenizer("bpe", "——— — —— é", vocab_size=261)  # one merge: 80 94 (of e2 80 94)
    ids = tok.encode("a—b")
    assert [tok.id_to_bytes(i) for i in ids] == [b"a", b"\xe2", b"\x80\x94", b"b"]
    assert readable_decode(tok, ids) == "a—b" == tok.decode(ids)


def test_broken_bytes_anywhere_never_give_a_replacement_character():
    data = b"\x80ok\xe2\x80 \xf0\x9f\x9c\x81\xff\xfe" + "é".encode()[:1]
    shown = readable_bytes(data)
    assert shown == "‹80›ok‹e2 80› 🜁‹ff fe c3›" and "\ufffd" not in shown
    assert [ok for _, ok in byte_runs(data)] == [False, True, False, True, False]


def test_char_and_word_tokenizers_decode_as_before():
    for kind in ("char", "word"):
        tok = train_tokenizer(kind, "the cat sat on the mat. Gödel é 🜁")
        ids = tok.encode("the mat é 🜁 Gödel")
        assert readable_decode(tok, ids) == tok.decode(ids)


def test_a_before_after_continuation_of_a_bpe_model_shows_bytes_not_replacements(bpe):
    """An untrained byte-level model emits bytes ≥ 0x80 at random: decode gives "�"s, the
    continuation shows them as ‹…›."""
    model = tiny_gpt(bpe.vocab_size, context_length=32)
    out = continuation(model, bpe, "é 𝔄", 24, temperature=1.0, seed=3)
    from gptviz.generation.sampling import encode_prompt, generate

    ids = encode_prompt(bpe, "é 𝔄")
    sampled = generate(model, ids, 24, temperature=1.0, seed=3)[len(ids):]
    assert "\ufffd" in bpe.decode(sampled)  # the case this test is about happens
    assert "\ufffd" not in out.text and "‹" in out.text
    assert out.text == readable_decode(bpe, sampled)


def test_the_samples_taken_during_training_show_bytes_not_replacements(bpe):
    from gptviz.model import GPTConfig, RunConfig, TrainConfig
    from gptviz.train.jobs import TrainingJob
    from gptviz.train.slots import TrainerSlots

    config = GPTConfig(vocab_size=bpe.vocab_size, context_length=16, d_model=16, n_layer=1,
                       n_head=2)
    run = RunConfig(config, TrainConfig(steps=2, batch_size=2, eval_batches=1, eval_interval=1))
    job = TrainingJob(run, bpe.encode(TEXT * 40), bpe, slots=TrainerSlots(limit=1),
                      prompt="é 𝔄", sample_tokens=24)
    job.start()
    assert job.join(120)
    texts = [s.text for s in job.snapshot().samples]
    assert len(texts) == 3 and not any("\ufffd" in t for t in texts)
    assert any("‹" in t for t in texts)  # a near-random byte model leaves characters unfinished


def test_control_characters_are_shown_not_sent_to_the_screen():
    shown = readable_bytes(b"a\x1b[31m\r\x00\n\tb\xc2\x85")  # ESC, CR, NUL; then NEL (C1)
    assert shown == "a\\x1b[31m\\x0d\\x00\n\tb\\x85"
