"""Sentences several pages say in the same words."""

from __future__ import annotations

from datetime import UTC, datetime

import streamlit as st

from gptviz.words import counted

INDEX_NOTE = (
    "Positions and token ids count from 0, as in the code: the first token of the prompt is "
    "at position 0. The seeds write a prompt as $t_1 \\dots t_N$, so their $t_k$ is our "
    "position $k-1$, and their last token $t_N$ is our position $N-1$.")


def index_note() -> None:
    """Say once, on a page that shows positions or ids, that they count from 0."""
    st.caption(INDEX_NOTE)


def agree(n: int, one: str, many: str) -> str:
    """The word that agrees with a count of ``n``: ``one`` for 1, else ``many``.

    >>> f"{counted(1, 'piece')} {agree(1, 'is', 'are')}", agree(3, "it is", "they are")
    ('1 piece is', 'they are')
    """
    return one if n == 1 else many


def duration(seconds: float) -> str:
    """Seconds as a reader wants them.

    >>> duration(75), duration(9.6), duration(3563.8)
    ('1 min 15 s', '10 s', '59 min 24 s')
    """
    seconds = round(seconds)
    return f"{seconds} s" if seconds < 60 else f"{seconds // 60} min {seconds % 60:02d} s"


def card_facts(card: dict) -> dict[str, str]:
    """How a model was made, as a reader wants it: the card's corpus, tokenizer, steps, the
    step kept, the training time in minutes and seconds and the date to the minute (UTC).

    >>> card_facts({"corpus": "a.txt", "steps": 800, "wall_time_s": 3563.8,
    ...             "date": "2026-11-23T21:31:39+00:00"})
    {'corpus': 'a.txt', 'steps': '800', 'trained in': '59 min 24 s', 'date': '2026-11-23 21:31 UTC'}
    """
    out = {}
    for key in ("corpus", "tokenizer", "steps", "kept_step"):
        if key in card:
            v = card[key]
            out[key.replace("_", " ")] = f"{v:,}" if isinstance(v, int) else str(v)
    seconds = card.get("wall_time_s")
    if isinstance(seconds, (int, float)):
        out["trained in"] = duration(seconds)
    date = card.get("date")
    if isinstance(date, str):
        try:
            when = datetime.fromisoformat(date)
            when = when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)
            out["date"] = when.strftime("%Y-%m-%d %H:%M UTC")
        except ValueError:
            out["date"] = date
    return out


def held_out_line(card: dict) -> str:
    """The model's held-out loss as its card gives it: one total, spread over the tokens it
    predicted and over the characters of the text (one token fewer than characters for a
    character model: the first is never predicted, so the two figures differ a little).

    >>> held_out_line({"held_out": {"nats_per_token": 3.9, "nats_per_char": 1.41}})
    'held-out loss 3.900 nats/token = 1.410 nats/char'
    >>> held_out_line({"held_out": {"nats_per_token": 2.7496, "nats_per_char": 2.7495,
    ...                             "tokens": 36581, "chars": 36582}}).split(" = ")
    ['held-out loss 2.750 nats per predicted token (over 36,581 tokens)',
     '2.749 nats per character (36,582 characters)']
    >>> held_out_line({"final_val_loss": 2.5}), held_out_line({"held_out": "?"})
    ('validation loss 2.500', '')
    """
    held = card.get("held_out")
    if isinstance(held, dict):
        per_token, per_char = held.get("nats_per_token"), held.get("nats_per_char")
        tokens, chars = held.get("tokens"), held.get("chars")
        if all(isinstance(v, (int, float)) for v in (per_token, per_char)):
            if isinstance(tokens, int) and isinstance(chars, int):
                return (f"held-out loss {per_token:.3f} nats per predicted token (over "
                        f"{counted(tokens, 'token')}) = {per_char:.3f} nats per character "
                        f"({counted(chars, 'character')})")
            return f"held-out loss {per_token:.3f} nats/token = {per_char:.3f} nats/char"
    val = card.get("final_val_loss")
    return f"validation loss {val:.3f}" if isinstance(val, (int, float)) else ""
