"""The prompt as the model reads it: token chips, with the tokens cut by the context window.

A prompt longer than the model's context N is cropped to its last N tokens (as
generation does). The cut tokens are still drawn, faded and struck through,
before a ✂ marker, so the reader sees exactly what the model never sees.
"""

from __future__ import annotations

from gptviz.tokenizers.base import TokenInfo
from gptviz.viz.tokens import token_chips_html

CROP_CSS = """
<style>
.gv-dropped{opacity:.38;text-decoration:line-through}
.gv-cut{font:600 12px ui-sans-serif,system-ui,sans-serif;color:#b42318;margin:4px 0 3px}
</style>
"""


def prompt_chips_html(tokens: list[TokenInfo], text: str, dropped: int = 0,
                      max_tokens: int = 600) -> str:
    """Chips for ``tokens``; the first ``dropped`` are faded, then a ✂ line, then the kept ones.

    Kept tokens are numbered from position 0, as the model numbers them.

    >>> from gptviz.tokenizers.base import TokenInfo
    >>> t = [TokenInfo(i, c, c.encode(), (i, i + 1)) for i, c in enumerate("abc")]
    >>> html = prompt_chips_html(t, "abc", dropped=1); html.count('class="gv-chip"')
    3
    >>> "✂" in html
    True
    """
    if not dropped:
        return token_chips_html(tokens, text, max_tokens=max_tokens)
    cut, kept = tokens[:dropped], tokens[dropped:]
    shown_cut = cut[-max(1, max_tokens // 4):]  # the cut tokens nearest the window
    skipped = len(cut) - len(shown_cut)
    head = (f'<div class="gv-cut">… {skipped:,} earlier tokens not drawn</div>'
            if skipped else "")
    return (CROP_CSS + head
            + f'<div class="gv-dropped">{token_chips_html(shown_cut, text, max_tokens)}</div>'
            + f'<div class="gv-cut">✂ cut here: the {len(cut):,} tokens above do not fit the '
            f"context window; the model reads the {len(kept):,} below (positions 0 to "
            f"{len(kept) - 1})</div>"
            + token_chips_html(kept, text, max_tokens=max_tokens))
