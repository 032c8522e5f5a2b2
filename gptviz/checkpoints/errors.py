"""The one error a checkpoint reader raises on a bad file: a message naming the file and the
problem. Every reader of a file someone gave (zip, JSON, safetensors header, card, snapshots)
raises it or a subclass, so a page catches this and nothing else."""

from __future__ import annotations


class CheckpointError(ValueError):
    """A checkpoint that cannot be loaded; the message names the file and the reason."""


def brief(error: BaseException | str, most: int = 300) -> str:
    """Another reader's message, cut to ``most`` characters: some quote what they were given
    (a config field holding a 2 MB list), and a message is read on a page.

    >>> len(brief("x" * 400)), brief("x" * 400)[-8:]
    (300, 'x… (cut)')
    """
    text = str(error)
    return text if len(text) <= most else text[:most - 7] + "… (cut)"
