"""The one error a checkpoint reader raises on a bad file: a message naming the file and the
problem. Every reader of a file someone gave (zip, JSON, safetensors header, card, snapshots)
raises it or a subclass, so a page catches this and nothing else."""

from __future__ import annotations


class CheckpointError(ValueError):
    """A checkpoint that cannot be loaded; the message names the file and the reason."""
