"""The tree of branches as data: its order, its layout, its link, and its rebuilding.

A tree is the set of its nodes, each a path: the ids chosen after the prompt
(``History.nodes``; the prompt alone is the root, ``()``). Its link (``?branches=``)
starts with a tag of the model and the prompt, then lists the leaves depth-first;
each leaf after the first is written as the number of ids it shares with the leaf
before it, ``-``, and its own ids. Ids are in base 36, ``.`` between ids and ``_``
between leaves (characters a URL keeps as they are):

>>> encode_tree("3f2a1c", [(10, 11, 12), (10, 35)])
'3f2a1c_a.b.c_1-z'
>>> decode_tree("3f2a1c_a.b.c_1-z")
('3f2a1c', [(10, 11, 12), (10, 35)])

Pure Python and torch (no Streamlit); the page's link.py reads and writes the URL.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence

from gptviz.app.generation.state import MAX_NODES, MAX_TOKENS, Path, Turn
from gptviz.generation.beam import prefix_rows
from gptviz.generation.sampling import Sampling
from gptviz.i18n import _, number
from gptviz.model import GPT

TAG_CHARS = 6  # hex digits of the model-and-prompt tag
_LEAF = re.compile(r"(?:(\d+)-)?([0-9a-z]+(?:\.[0-9a-z]+)*)")


def _n(n: int) -> str:
    return number(n, 0, grouping=True)


def children(nodes: Mapping[Path, object]) -> dict[Path, list[Path]]:
    """Each node's children in the order they were made (the root is ``()``).

    >>> children({(4,): 0, (4, 2): 0, (5,): 0})
    {(): [(4,), (5,)], (4,): [(4, 2)], (4, 2): [], (5,): []}
    """
    out: dict[Path, list[Path]] = {(): []}
    for path in nodes:
        out.setdefault(path, [])
        out.setdefault(path[:-1], []).append(path)
    return out


def leaves(nodes: Mapping[Path, object]) -> list[Path]:
    """The leaves depth-first, older branches first.

    >>> leaves({(4,): 0, (4, 2): 0, (5,): 0, (4, 3): 0})
    [(4, 2), (4, 3), (5,)]
    """
    kids, out, stack = children(nodes), [], [()]
    while stack:
        node = stack.pop()
        if not kids.get(node) and node:
            out.append(node)
        stack.extend(reversed(kids.get(node, [])))
    return out


def layout(nodes: Mapping[Path, object]) -> dict[Path, tuple[int, int]]:
    """(x, y) of the root and every node: x its depth, y the row of its first leaf, so a
    branch keeps the row of the text it grew from and each later branch gets a new row.

    >>> layout({(4,): 0, (4, 2): 0, (4, 3): 0})
    {(): (0, 0), (4,): (1, 0), (4, 2): (2, 0), (4, 3): (2, 1)}
    """
    rows: dict[Path, int] = {}
    for row, leaf in enumerate(leaves(nodes)):
        for k in range(len(leaf), -1, -1):
            rows.setdefault(leaf[:k], row)
    out = {(): (0, rows.get((), 0))}
    for path in nodes:
        out[path] = (len(path), rows[path])
    return out


def prompt_tag(model_name: str, prompt_ids: Sequence[int]) -> str:
    """Six hex digits that change when the model or the prompt does.

    >>> prompt_tag("m", [1, 2]) == prompt_tag("m", [1, 2]) != prompt_tag("m", [1, 3])
    True
    """
    text = model_name + "\n" + ",".join(str(int(i)) for i in prompt_ids)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:TAG_CHARS]


def _b36(i: int) -> str:
    digits, out = "0123456789abcdefghijklmnopqrstuvwxyz", ""
    while True:
        i, r = divmod(i, 36)
        out = digits[r] + out
        if not i:
            return out


def encode_tree(tag: str, leaf_paths: Sequence[Path]) -> str:
    """The link's text for a tree given by its leaves in depth-first order (see above)."""
    parts, prev = [tag], ()
    for leaf in leaf_paths:
        shared = next((k for k in range(min(len(leaf), len(prev)))
                       if leaf[k] != prev[k]), min(len(leaf), len(prev)))
        ids = ".".join(_b36(int(i)) for i in leaf[shared:])
        parts.append(ids if not parts[1:] else f"{shared}-{ids}")
        prev = leaf
    return "_".join(parts)


def decode_tree(text: str) -> tuple[str, list[Path]]:
    """The tag and the leaves of a link's text; ValueError saying what is wrong."""
    tag, *parts = text.strip().lower().split("_")
    if not re.fullmatch(f"[0-9a-f]{{{TAG_CHARS}}}", tag) or not parts:
        raise ValueError(_("it does not start with the six-digit tag of a model and a prompt, "
                           "followed by the branches"))
    out: list[Path] = []
    for n, part in enumerate(parts):
        m = _LEAF.fullmatch(part)
        if m is None:
            raise ValueError(_("branch {n} ({part}) is not ids in base 36 separated by "
                               "dots").format(n=n + 1, part=repr(part[:20])))
        shared = int(m.group(1) or 0)
        if (m.group(1) is not None) != (n > 0) or shared > len(out[-1] if out else ()):
            raise ValueError(_("branch {n} starts from a position the branch before it does "
                               "not have").format(n=n + 1))
        out.append((out[-1][:shared] if out else ()) + tuple(int(x, 36) for x in
                                                              m.group(2).split(".")))
    return tag, out


def encode_node(leaf_paths: Sequence[Path], path: Path) -> str:
    """A node as 'leaf.depth' (the first leaf that passes through it), for ``?at=``.

    >>> encode_node([(4, 2), (5,)], (5,)), encode_node([(4, 2)], ())
    ('1.1', '0.0')
    """
    row = next((r for r, leaf in enumerate(leaf_paths) if leaf[:len(path)] == path), 0)
    return f"{row}.{len(path)}"


def decode_node(text: str, leaf_paths: Sequence[Path]) -> Path:
    """The node a 'leaf.depth' names; ValueError when the tree has no such node.

    >>> decode_node("1.1", [(4, 2), (5,)])
    (5,)
    """
    m = re.fullmatch(r"(\d+)\.(\d+)", text.strip())
    if m is None or int(m.group(1)) >= len(leaf_paths) or \
            int(m.group(2)) > len(leaf_paths[int(m.group(1))]):
        raise ValueError(_("the position “{text}” is not a node of the tree").format(
            text=text[:20]))
    return leaf_paths[int(m.group(1))][: int(m.group(2))]


def nodes_of(leaf_paths: Sequence[Path]) -> list[Path]:
    """Every node the leaves pass through, each once, in the order they are first met.

    >>> nodes_of([(4, 2), (4, 3)])
    [(4,), (4, 2), (4, 3)]
    """
    seen: dict[Path, None] = {}
    for leaf in leaf_paths:
        for k in range(1, len(leaf) + 1):
            seen.setdefault(leaf[:k], None)
    return list(seen)


def rebuild(model: GPT, prompt_ids: Sequence[int], leaf_paths: Sequence[Path],
            sampling: Sampling) -> dict[Path, Turn]:
    """Every node of a tree given by its leaves, each Turn recomputed from the ids (its
    origin is "link"); ValueError for a tree the page cannot hold."""
    paths = nodes_of(leaf_paths)
    deepest = max((len(p) for p in paths), default=0)
    if len(paths) > MAX_NODES or deepest > MAX_TOKENS:
        raise ValueError(_("it holds {n} tokens, {deepest} in its longest text; the page keeps "
                           "at most {nodes} and {most}").format(
                               n=_n(len(paths)), deepest=_n(deepest), nodes=_n(MAX_NODES),
                               most=_n(MAX_TOKENS)))
    n_ctx, out = model.config.context_length, {}
    for leaf in leaf_paths:
        start = next((k for k in range(len(leaf)) if leaf[: k + 1] not in out), len(leaf))
        if start == len(leaf):
            continue
        k = start
        for block in prefix_rows(model, list(prompt_ids) + list(leaf[:start]), leaf[start:]):
            for row in block:  # (|V|,) y_N before token k: kept only as a Turn's few numbers
                cropped = max(0, len(prompt_ids) + k - n_ctx)
                out[leaf[: k + 1]] = Turn.of(row, int(leaf[k]), sampling, cropped, "link")
                k += 1
    return {p: out[p] for p in paths}
