"""The Positional page on a RoPE model: nothing is added to X; every head rotates its q and k
by angles p·θ_m, and the score of two positions then depends only on i − j."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from gptviz.analysis import positions
from gptviz.app.positional import figures as vp
from gptviz.app.positional import formulas as pos_tex
from gptviz.app.shared.cache import activations, per_model, vocab_labels
from gptviz.app.shared.heatmaps import heatmap, matrix_panels, title_room
from gptviz.app.shared.inputs import Prompt, example_prompt
from gptviz.app.shared.picker import Picked
from gptviz.app.shared.tex import tex_text, vector
from gptviz.app.shared.views import url_bound
from gptviz.app.shared.widgets import chart, csv_download, dataframe, on_demand
from gptviz.checkpoints.folder import Checkpoint
from gptviz.i18n import N_, _, separators
from gptviz.model.names import act_name

ADDS_NOTHING = N_(
    "This model uses **rotary positions (RoPE)**. It adds nothing to the token embeddings: "
    "$p_i = 0$, so the first block receives $x_i = E[t_i]$. The position enters inside "
    "attention instead: in every layer, every head turns its query and its key at position "
    "$p$ pair by pair, coordinates $(2m, 2m+1)$ by the angle $p\\,\\theta_m$. Values are "
    "not rotated.")


@per_model
def _rope_check(ckpt: Checkpoint, query: int, key: int, head: int) -> positions.RopeCheck:
    q, k = positions.layer0_qk(ckpt.model, query, key, head)
    check = positions.rope_relative_check(q, k, ckpt.config.context_length)
    for a in (check.scores, check.by_offset):  # shared by every session: read-only
        a.flags.writeable = False
    return check


def rope_positions(picked: Picked) -> None:
    """"This model's positions" for a RoPE model: the angle table and the i − j property."""
    c = picked.checkpoint.config
    st.info(_(ADDS_NOTHING), icon=":material/rotate_right:")
    st.latex(pos_tex.rope_rotation(c.context_length, c.d_head))
    wraps = ["mod 2π", N_("in radians")]
    shown = st.segmented_control(_("Angles"), wraps, default="mod 2π", format_func=_,
                                 required=True, key="rope_wrap",
                                 **url_bound("rope_wrap", wraps, str))
    angles = positions.rope_angle_table(c.context_length, c.d_head)  # (N, d_k/2)
    chart(vp.rope_angle_heatmap(angles, wrapped=shown != "in radians"))
    st.caption(_("Row p holds the {n} angles by which position p turns the pairs of q and k. "
                 "Pair 0 turns by one radian per position (θ_0 = 1), a full turn every 2π ≈ "
                 "6.3 positions; the last pair by θ = {last} radians per position, so it "
                 "barely moves within the window. Every layer and head uses the same angles: "
                 "nothing here is learned.").format(
        n=c.d_head // 2, last=f"{angles[1, -1]:.2g}".replace(".", separators()[0])))
    df = pd.DataFrame(angles, columns=[f"m{m}" for m in range(angles.shape[1])])
    df.insert(0, N_("position"), range(len(df)))
    with on_demand(_("The angles p·θ_m as a table (radians)"), key="angles_table") as shown:
        if shown:
            dataframe(df, hide_index=True, width="stretch", height=240)
            csv_download(df, f"rope-angles-{picked.name}.csv", _("Download the angles as CSV"))
    relative_property(picked)


def relative_property(picked: Picked) -> None:
    """q_i·k_j of two tokens placed at every pair of positions: a function of i − j."""
    ckpt, c = picked.checkpoint, picked.checkpoint.config
    n = c.context_length
    st.markdown("#### " + _("The score depends only on i − j"))
    st.caption(_("In layer 0 a RoPE model's q and k depend only on the token (nothing was "
                 "added to X). Put the query token at position i and the key token at position "
                 "j, rotate both, and take the dot product (the score before dividing by "
                 "√d_k)."))
    labels = vocab_labels(picked)
    ids = ckpt.tokenizer.encode(example_prompt(ckpt))[:2] or [0, 0]
    cols = st.columns(5)
    query = cols[0].selectbox(_("Query token"), range(len(labels)), index=ids[-1],
                              format_func=lambda t: f"{t}: {labels[t]}", key="rope_q")
    key = cols[1].selectbox(_("Key token"), range(len(labels)), index=ids[0],
                            format_func=lambda t: f"{t}: {labels[t]}", key="rope_k")
    head = int(cols[2].number_input(_("Head"), 0, c.n_head - 1, 0, key="rope_head"))
    i = int(cols[3].number_input(_("Position i (query)"), 0, n - 1, min(5, n - 1),
                                 key="rope_i"))
    j = int(cols[4].number_input(_("Position j (key)"), 0, n - 1, min(2, n - 1), key="rope_j"))
    check = _rope_check(picked, int(query), int(key), head)
    st.latex(pos_tex.rope_relative(i, j, c.d_head, float(check.scores[i, j]),
                                   float(check.by_offset[i, j]), check.max_deviation))
    chart(title_room(heatmap(check.scores, None, None, kind="signed",
                             title=_("q_i · k_j, layer 0, head {head}: {query} at i, {key} at "
                                     "j").format(head=head, query=repr(labels[query]),
                                                 key=repr(labels[key])),
                             x_title=_("key position j"), y_title=_("query position i"))))
    st.caption(_("A rotation by α followed by one by −β is a rotation by α − β, so "
                 "(R_i q)·(R_j k) = q·R_{{j−i}} k: only the offset i − j is left. Every "
                 "diagonal of the matrix is therefore constant (a causal model uses only j ≤ "
                 "i, the lower half): along the diagonal where it varies most, its entries "
                 "differ by {spread}, float64 rounding. Shift the whole text and no score "
                 "changes, which is why the cached keys of a RoPE model stay valid when its "
                 "window slides.").format(
        spread=f"{check.diagonal_spread:.1e}".replace(".", separators()[0])))
    offsets = [d for d in (0, 1, 2, 5, 10, n // 2) if d < n]
    rows = [{"i − j": d, "i": a + d, "j": a, "q_i · k_j": float(check.scores[a + d, a]),
             N_("Σ_m formula at i − j"): float(check.by_offset[a + d, a])}
            for d in offsets for a in sorted({0, (n - 1 - d) // 2, n - 1 - d})]
    df = pd.DataFrame(rows)
    dataframe(df, hide_index=True, width="stretch", height=220, column_config={
        k: st.column_config.NumberColumn(format="%.6f") for k in df.columns[3:]})
    csv_download(df, f"rope-relative-{picked.name}.csv")


def rope_sum(picked: Picked, prompt: Prompt, pos: int) -> None:
    """"X + PE" for a RoPE model: X = E[ids], then q and k of layer 0 before and after."""
    c = picked.checkpoint.config
    st.info(_(ADDS_NOTHING), icon=":material/rotate_right:")
    names = [act_name("embed"), *(act_name(n, 0) for n in ("q", "q_rot", "k", "k_rot"))]
    cache, _counts = activations(picked, prompt.ids, names)
    X = cache[names[0]][0].numpy()  # (T, d)
    st.latex(rf"x_{{{pos}}} = E[{tex_text(prompt.labels[pos], 16)}] + 0 = {vector(X[pos])}")
    head = int(st.number_input(_("Head of layer 0"), 0, c.n_head - 1, 0, key="rope_sum_head"))
    q, q_rot, k, k_rot = (cache[n][0, head].numpy() for n in names[1:])  # (T, d_k) each
    st.latex(pos_tex.rope_pair(prompt.labels[pos], pos, q[pos], q_rot[pos]))
    chart(matrix_panels({"q": q, "R_p q": q_rot, "k": k, "R_p k": k_rot}, None, prompt.labels,
                        title=_("layer 0, head {head}: q and k before and after the "
                                "rotation").format(head=head)))
    st.caption(_("Row p of R_p q is row p of q turned by the angles of position p: position 0 "
                 "is not turned at all, and a rotation keeps every length, so each row keeps "
                 "its norm (table below). Only the scores q_i · k_j feel the positions."))
    norms = {f"‖{name}‖": np.linalg.norm(m, axis=1) for name, m in (
        ("q_p", q), ("R_p q_p", q_rot), ("k_p", k), ("R_p k_p", k_rot))}
    df = pd.DataFrame({N_("position"): range(len(prompt.ids)), N_("token"): prompt.labels,
                       **norms})
    dataframe(df, hide_index=True, width="stretch", height=220)
    csv_download(df, f"rope-q-k-{picked.name}.csv")
