"""The tree of branches in the page's link: ``?branches=<tag>_<leaves>&at=<leaf>.<depth>``
(the format is in tree.py).

The page writes the link at the end of every run, so a shared link holds the model, the
prompt, the whole tree and the current text. Opening it in a new session rebuilds the
same tree (each token's numbers recomputed from its ids) and makes the same node the text.
A link whose branches were grown from another prompt or model, or one that was mangled,
is explained and not applied: the text starts from the prompt.
"""

from __future__ import annotations

import streamlit as st

from gptviz.app.generation import tree
from gptviz.app.generation.state import History
from gptviz.app.shared.picker import Picked
from gptviz.generation.sampling import Sampling
from gptviz.i18n import _, number

BRANCHES, AT = "branches", "at"  # the link's query parameters
LINK_CHARS = 4_000  # longer trees stay out of the link (proxies and chat apps cut long URLs)


def restore(hist: History, picked: Picked, sampling: Sampling) -> None:
    """Grow the link's tree into a new ``hist``, or say why it cannot be used."""
    text = st.query_params.get(BRANCHES)
    if not text:
        return
    tag = tree.prompt_tag(picked.name, hist.prompt_ids)
    try:
        got, leaf_paths = tree.decode_tree(text)
        if got != tag:
            raise ValueError(_(
                "they were grown from another prompt or another model (the prompt or the "
                "model was changed since the link was made), so the positions they branch "
                "from do not exist here"))
        nodes = tree.rebuild(picked.checkpoint.model, hist.prompt_ids, leaf_paths, sampling)
    except ValueError as exc:
        st.warning(_("This link's branches (`?{param}=`) cannot be used: {why}. The text starts "
                     "from the prompt; open the link again with the prompt and model it was "
                     "made with, or grow new branches here.").format(param=BRANCHES, why=exc),
                   icon=":material/link_off:")
        return
    hist.nodes = nodes
    try:
        path = tree.decode_node(st.query_params.get(AT, "0.0"), leaf_paths)
    except ValueError as exc:
        st.warning(_("This link's current text (`?{param}=`) cannot be used: {why}. Showing the "
                     "first branch instead.").format(param=AT, why=exc),
                   icon=":material/link_off:")
        path = leaf_paths[0]
    hist.select(path)


def sync(hist: History, picked: Picked) -> None:
    """Write the tree and the current node into the link (or take them out of it)."""
    text = at = None
    if hist.nodes:
        leaf_paths = tree.leaves(hist.nodes)
        text = tree.encode_tree(tree.prompt_tag(picked.name, hist.prompt_ids), leaf_paths)
        at = tree.encode_node(leaf_paths, hist.path)
        if len(text) > LINK_CHARS:
            st.caption(_("The tree of branches ({n} tokens) is too large for the page's link, "
                         "which keeps up to {most} characters of it: the link opens on the "
                         "prompt alone.").format(n=number(len(hist.nodes), 0, grouping=True),
                                                 most=number(LINK_CHARS, 0, grouping=True)))
            text = at = None
    want = {BRANCHES: text, AT: at}
    changed = {k: v for k, v in want.items() if v is not None and st.query_params.get(k) != v}
    if changed:  # one message to the browser for both (``st.query_params[k] = v`` sends one each)
        st.query_params.update(changed)
    for key in [k for k, v in want.items() if v is None and k in st.query_params]:
        del st.query_params[key]
