"""The lesson as one self-contained HTML file: every step's narrative, figure, formulas and
question, for the prompt and model of the day, readable with no network at all.

plotly's JavaScript is inlined once; the formulas become MathML (``latex2mathml``), which
browsers draw themselves, so no KaTeX or font is fetched. Pure: steps in, a string out.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from dataclasses import replace

import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio

from gptviz.app.lesson.questions import md, short
from gptviz.app.lesson.run import Lesson, StepView
from gptviz.app.lesson.steps import STEPS, title
from gptviz.app.shared.picker import describe
from gptviz.i18n import SOURCE, _, current, number, use

CSS = """
body{font:17px/1.55 system-ui,-apple-system,"Segoe UI",sans-serif;color:#1d2129;max-width:1100px;
margin:0 auto;padding:24px 28px 80px}
h1{font-size:1.9rem;margin:0 0 .2rem}h2{font-size:1.4rem;margin:2.2rem 0 .6rem;
border-top:1px solid #d0d5de;padding-top:1.2rem}
.meta,.caption{color:#555e6e;font-size:.9rem}
.formula{overflow-x:auto;margin:.6rem 0;padding:.3rem 0}
math[display=block]{font-size:1.1em}
menclose[notation=box]{border:1px solid #333;padding:0 2px}
mtd[columnalign=left]{text-align:left}mtd[columnalign=right]{text-align:right}
mrow.underline{border-bottom:1px solid}
.figure{margin:.8rem 0}
table.tokens{border-collapse:collapse;font:14px ui-monospace,monospace}
table.tokens td,table.tokens th{border:1px solid #d0d5de;padding:2px 8px;text-align:left}
details{background:#f5f7fa;border-radius:6px;padding:.5rem .8rem;margin:.6rem 0}
summary{cursor:pointer;font-weight:600}
pre.tex{white-space:pre-wrap;font-size:.85rem;color:#555}
@media print{h2{break-before:page}details{display:block}}
"""
_MATH = re.compile(r"(?<!\\)\$(.+?)(?<!\\)\$")
_ESCAPED = re.compile(r"\\([\\`*_{}\[\]<>#$~|])")
_FBOX_MATH = re.compile(r"\\fbox\{\$(.*?)\$\}")
_UNDERLINE_BAR = '<mo accent="true">&#x02015;</mo>'
_SAME_ENVIRONMENTS = [("aligned", r"\begin{align*}", r"\end{align*}"),
                      ("gathered", r"\begin{array}{c}", r"\end{array}")]


# tex_escape's escapes, each through the converter as a private-use character and back as
# the character itself: latex2mathml writes "\$" in \text{} as "\$", and ends the text
# at "\}"
_PLAIN = {r"\textbackslash{}": "\\", r"\textasciicircum{}": "^", r"\textasciitilde{}": "~",
          r"\{": "{", r"\}": "}", r"\$": "$", r"\&": "&", r"\#": "#", r"\%": "%", r"\_": "_"}
_STAND_INS = {escaped: chr(0xE000 + i) for i, escaped in enumerate(_PLAIN)}


def tex_to_mathml(tex: str, display: str = "block") -> str:
    r"""MathML for a LaTeX string; what it cannot parse is shown as its source.

    >>> tex_to_mathml("x^2").startswith('<math xmlns="http://www.w3.org/1998/Math/MathML"')
    True
    >>> "menclose" in tex_to_mathml(r"\fbox{$\text{a}$}")
    True
    >>> tex_to_mathml(r"\begin{aligned}a &= 1 \\ b &= 2\end{aligned}").count("<mtr>")
    2
    >>> m = tex_to_mathml(r"\text{·\$,a\_b,\{x\},50\%,\&}", "inline")  # tex_escape's
    >>> m[m.index("<mtext>"):m.index("</mtext>")], "\\" in m
    ('<mtext>·$,a_b,{x},50%,&amp;', False)
    """
    # Imported here: the lesson page loads this module, and only a download uses the
    # converter (with its symbol table and xml.etree, ~1.5 MB that the server keeps).
    from latex2mathml.converter import convert

    source = tex
    tex = _FBOX_MATH.sub(r"\\boxed{\1}", tex).replace(r"\fbox{", r"\boxed{")
    for escaped, stand_in in _STAND_INS.items():
        tex = tex.replace(escaped, stand_in)
    for env, begin, end in _SAME_ENVIRONMENTS:  # spelt the way latex2mathml knows
        tex = tex.replace(rf"\begin{{{env}}}", begin).replace(rf"\end{{{env}}}", end)
    try:
        mathml = _underlines(convert(tex, display=display))
    except Exception:  # noqa: BLE001 — any parser error: show the source, never fail
        return f'<pre class="tex">{html.escape(source)}</pre>'
    for escaped, stand_in in _STAND_INS.items():
        mathml = mathml.replace(stand_in, html.escape(_PLAIN[escaped]))
    return mathml


def _underlines(mathml: str) -> str:
    r"""latex2mathml writes ``\underline{x}`` as x over a bar that Chromium does not stretch;
    make the bar a border under x instead.

    >>> _underlines('<munder><mi>x</mi><mo accent="true">&#x02015;</mo></munder>')
    '<mrow class="underline"><mi>x</mi></mrow>'
    """
    while True:
        opened = []
        for m in re.finditer(r"<(/?)munder>", mathml):
            if not m.group(1):
                opened.append(m.end())
                continue
            start = opened.pop()
            if mathml[:m.start()].endswith(_UNDERLINE_BAR):
                inner = mathml[start:m.start() - len(_UNDERLINE_BAR)]
                mathml = (mathml[:start - len("<munder>")] + '<mrow class="underline">' + inner
                          + "</mrow>" + mathml[m.end():])
                break
        else:
            return mathml


def markdown_html(text: str) -> str:
    r"""The narratives' Markdown (``**bold**``, ``*italic*``, ``$math$``, ``\`` escapes) as HTML.

    >>> markdown_html(r"**a** \*b\* <c>")
    '<b>a</b> *b* &lt;c&gt;'
    """
    parts = _MATH.split(text)  # text, math, text, math, …
    return "".join(tex_to_mathml(p, "inline") if k % 2 else _text_html(p)
                   for k, p in enumerate(parts))


def _text_html(part: str) -> str:
    kept: list[str] = []  # escaped characters, held out of the bold / italic rules

    def hold(m: re.Match) -> str:
        kept.append(m.group(1))
        return f"\x00{len(kept) - 1}\x00"

    s = html.escape(_ESCAPED.sub(hold, part), quote=False)
    s = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", s)
    s = re.sub(r"\*(.+?)\*", r"<i>\1</i>", s)
    return re.sub("\x00(\\d+)\x00", lambda m: html.escape(kept[int(m.group(1))]), s)


def figure_html(fig: object) -> str:
    """One figure: a plotly figure (its JSON and a call to the inlined plotly; the figure
    itself is left as it is), HTML as it is, a DataFrame as a table."""
    if isinstance(fig, go.Figure):
        spec = fig.to_plotly_json()
        for name, axis in spec["layout"].items():  # Streamlit's theme makes room for long
            if name.startswith(("xaxis", "yaxis")):  # tick labels; plain plotly is told to
                spec["layout"][name] = {**axis, "automargin": True}
        height = spec["layout"].get("height") or 450
        return pio.to_html(spec, validate=False, full_html=False, include_plotlyjs=False,
                           default_width="100%", default_height=f"{height}px",
                           config={"displaylogo": False, "responsive": True})
    if isinstance(fig, pd.DataFrame):
        return fig.to_html(index=False, classes="tokens", border=0)
    return str(fig)


def step_html(step: int, name: str, view: StepView) -> str:
    heading = _("Step {step} · {title}").format(step=step, title=name)
    parts = [f'<section id="step-{step}"><h2>{html.escape(heading)}</h2>',
             f"<p>{markdown_html(view.narrative)}</p>"]
    q = view.question
    if q is not None:
        choices = "".join(f"<li>{markdown_html(md(c))}</li>" for c in q.choices)
        predict, answer = html.escape(_("Predict:")), html.escape(_("The model's answer"))
        parts.append(f"<p><b>{predict}</b> {markdown_html(q.text)}</p><ol type='a'>{choices}"
                     f"</ol><details><summary>{answer}</summary><p><b>"
                     f"{markdown_html(md(q.choices[q.answer]))}</b>. "
                     f"{markdown_html(q.why)}</p></details>")
    parts += [f'<div class="figure">{figure_html(f)}</div>' for f in view.figures]
    parts += [f'<div class="formula">{tex_to_mathml(t)}</div>' for t in view.formulas]
    if view.caption:
        parts.append(f'<p class="caption">{markdown_html(view.caption)}</p>')
    parts.append("</section>")
    return "\n".join(parts)


def handout_html(title: str, meta: Sequence[str], steps: Sequence[tuple[int, str, StepView]],
                 plotly_js: str, lang: str = SOURCE) -> str:
    """The whole handout: ``plotly_js`` (``plotly.offline.get_plotlyjs()``) inlined once.

    >>> page = handout_html("t", ["m"], [], "/* plotly */"); page.count("/* plotly */")
    1
    """
    body = "\n".join(step_html(n, t, v) for n, t, v in steps)
    lines = "".join(f'<p class="meta">{html.escape(m)}</p>' for m in meta)
    return (f'<!DOCTYPE html>\n<html lang="{html.escape(lang)}"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{html.escape(title)}</title><style>{CSS}</style>"
            f'<script type="text/javascript">{plotly_js}</script></head>'
            f"<body><h1>{html.escape(title)}</h1>{lines}\n{body}\n</body></html>")


def lesson_handout(ls: Lesson, lang: str | None = None) -> str:
    """The handout of a lesson, in ``lang`` (the reader's language, as the download button
    saw it; default: the current one). It may run in a thread without a session (the
    download button's): a bundled model's figures come from the server's caches, a
    session's own model is computed afresh."""
    from plotly.offline import get_plotlyjs

    lang = lang or current()
    with use(lang):
        ls = replace(ls, offline=ls.offline or not ls.picked.bundled, big=False)
        steps = [(n, title(n), build(ls)) for n, (_t, build) in enumerate(STEPS, start=1)]
        return handout_html(_("A GPT, step by step: one prompt through the model"),
                            _meta(ls), steps, get_plotlyjs(), lang)


def _meta(ls: Lesson) -> list[str]:
    """The lines under the handout's title: the model, the prompt, the settings."""
    p = ls.prompt
    shown = p.text if len(p.text) <= 400 else p.text[:400] + "…"
    chars, toks = number(len(p.text), 0, True), number(len(p.all_tokens), 0, True)
    prompt = (_("Prompt ({chars} characters, {tokens} tokens, the first {k} cut to fit the "
                "context window): {text}") if p.dropped else
              _("Prompt ({chars} characters, {tokens} tokens): {text}"))
    return [_("Model {name}: {about}").format(name=ls.picked.name, about=describe(ls.picked)),
            prompt.format(chars=chars, tokens=toks, k=number(p.dropped, 0, True), text=shown),
            _("Layer {layer}, head {head}, temperature T = {t}. Positions and ids count from "
              "0.").format(layer=ls.layer, head=ls.head, t=short(ls.temperature)),
            _("Made with gptviz. This file needs no network: the figures are interactive.")]
