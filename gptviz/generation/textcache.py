"""The keys and values of a text the pages grow a token at a time (the Generation page's
Next token, Undo and branches, the Lesson's continuation), so that each step reads only
the ids it has not seen, as ``sampling.generate`` does; and the crop to the context
window that every decoding path shares.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import torch
from torch import Tensor

from gptviz.i18n import _
from gptviz.model import GPT, KVCache
from gptviz.model.decode import Decoder
from gptviz.tokenizers.specials import BOS


def crop(model: GPT, ids: Sequence[int]) -> tuple[list[int], int]:
    """The last context window of ``ids`` and how many ids were cut from its front."""
    ids = [int(i) for i in ids]
    if not ids:
        raise ValueError(_("the prompt is empty: give at least one token (e.g. the {bos} id, "
                           "which encode_prompt uses for an empty text).").format(bos=BOS))
    n_ctx = model.config.context_length
    cropped = max(0, len(ids) - n_ctx)
    return ids[cropped:], cropped


class TextCache:
    """y_N of a text that grows a token at a time, is cut back, or turns into a branch,
    through the engine's decoding path: a KV cache holds the keys and values of the ids
    read so far, and only the ids it has not seen are fed (one new id by ``Decoder``, as
    in ``generate``).

    The text is cropped to the context window as ``step`` crops it. Inside the window
    the cache keeps the longest prefix the new text shares with the one it read (Undo and
    a branch cut it back; a prefix's keys do not depend on what follows), and reads the
    rest. Past the window every position of the cropped window moves (for RoPE, the
    window ``step`` reads starts afresh), so the window is recomputed without a cache, as
    ``generate`` recomputes it. The cache has room for the text it holds, doubled as the
    text grows, up to the window: GPT-2's full window takes 75 MB, its first 64 positions
    4.7 MB. One pass at a time (two threads of a session may share it).

    >>> c = TextCache(model)
    >>> torch.allclose(c.logits([1, 2, 3]), model([1, 2, 3])[0, -1], atol=1e-5)
    True
    >>> c.logits([1, 2, 4]).shape, c.ids          # [1, 2] kept, 4 read by the decoder
    (torch.Size([10]), (1, 2, 4))
    """

    ROOM = 64  # positions of a new cache (the window, if shorter)

    def __init__(self, model: GPT) -> None:
        self.model = model
        self.cache: KVCache | None = None
        self.ids: tuple[int, ...] = ()  # the ids whose keys and values the cache holds
        self.lock = threading.Lock()

    def logits(self, ids: Sequence[int]) -> Tensor:
        """y_N after ``ids`` (|V|,) float32 on the CPU: the last position's logits of the
        window ``step`` reads, within float rounding of ``model(context)[0, -1]``."""
        with torch.no_grad():  # an ordinary tensor: a caller may change it in place
            return self._logits(ids).clone()

    @torch.inference_mode()  # as generate: no autograd and no version counters
    def _logits(self, ids: Sequence[int]) -> Tensor:
        model = self.model
        context, cropped = crop(model, ids)
        with self.lock:
            if cropped:  # the window slid: recompute it, as generate does
                self.release()
                x = model.check_ids(context)  # (1, N)
                return model._forward(x, None, last_only=True)[0, -1].float().cpu()
            keep = 0  # the longest shared prefix, leaving at least one id to read
            for a, b in zip(self.ids, context[:-1], strict=False):
                if a != b:
                    break
                keep += 1
            x = model.check_ids(context[keep:], offset=keep)  # (1, T_new)
            cache = self._room(keep, len(context))
            self.ids = ()  # until the pass has filled the cache
            decoder = Decoder.of(model) if x.shape[1] == 1 else None
            if decoder is not None:
                y = decoder.step(int(x[0, 0]), cache)  # (|V|,)
            else:
                y = model._forward(x, cache, last_only=True)[0, -1]  # (|V|,)
            self.ids = tuple(context)
            return y.float().cpu()

    def _room(self, keep: int, need: int) -> KVCache:
        """The cache cut back to its first ``keep`` positions, with room for ``need``."""
        c = self.model.config
        old = self.cache
        if old is None or old.capacity < need:
            room = min(c.context_length, max(self.ROOM, 1 << (need - 1).bit_length()))
            new = KVCache(c.n_layer, 1, c.n_head, room, c.d_head, device=self.model.device,
                          dtype=self.model.embed.weight.dtype)
            if old is not None and keep:
                new.kv[..., :keep, :] = old.kv[..., :keep, :]
            self.cache = old = new
        old.length = old.position = keep  # never rolled: a position lives at its own slot
        return old

    def release(self) -> None:
        """Forget the cache (its memory goes back)."""
        self.cache, self.ids = None, ()
