"""gptviz: the router. Run with `streamlit run app.py` (`GPTVIZ_STOCK=1` for stock mode)."""

import os
from pathlib import Path

import streamlit as st

from gptviz.app import speedups
from gptviz.app.shared import language
from gptviz.i18n import _

# The session's language first: every title below is looked up in it (gptviz/i18n.py).
language.install()
language.choose()
PAGES = {
    "": [st.Page("app_pages/home.py", title=_("Home"), icon=":material/home:", default=True),
         st.Page("app_pages/lesson.py", title=_("Lesson"), icon=":material/school:")],
    _("Explore"): [
        st.Page("app_pages/tokenizers.py", title=_("Tokenizers"), icon=":material/text_fields:"),
        st.Page("app_pages/embeddings.py", title=_("Embeddings"),
                icon=":material/scatter_plot:"),
        st.Page("app_pages/positional.py", title=_("Positional encoding"),
                icon=":material/linear_scale:"),
        st.Page("app_pages/attention.py", title=_("Attention"), icon=":material/grid_on:"),
        st.Page("app_pages/block.py", title=_("Transformer block"),
                icon=":material/view_agenda:"),
        st.Page("app_pages/generation.py", title=_("Generation"),
                icon=":material/auto_awesome:"),
    ],
    _("Train"): [st.Page("app_pages/training.py", title=_("Training"),
                         icon=":material/model_training:"),
                 st.Page("app_pages/learning.py", title=_("Learning"), icon=":material/insights:")],
    _("Class"): [st.Page("app_pages/join.py", title=_("Join a class"), icon=":material/login:",
                         url_path="join")],
}
# The server patches (gptviz/app/speedups/), once per process and before the imports below:
# plotly's validator table read per entry frees memory those imports can then reuse.
speedups.install(p.url_path for group in PAGES.values() for p in group)

from gptviz.app.serving.memory import trim_thread_heaps  # noqa: E402
from gptviz.app.serving.sessions import lease  # noqa: E402
from gptviz.app.shared.presenter import presenting  # noqa: E402
from gptviz.app.shared.widgets import PAGE, VISIT, page_style  # noqa: E402

# pyarrow's default pool keeps what the first st.dataframe allocated for the server's
# lifetime; the system pool (malloc) is shared with everything else. Read when the pool is
# first used, after this line.
os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")
# Each script run is a new thread with a malloc heap of its own, whose free top glibc would
# keep: handed back past 8 MB from the first run on (gptviz/app/serving/memory.py).
trim_thread_heaps()

ICON = Path(__file__).parent / "assets" / "icon.png"  # a local file: nothing is fetched
st.set_page_config(page_title="gptviz", page_icon=str(ICON), layout="wide")

page = st.navigation(PAGES)
page_style()
language.style()
if not presenting():  # presenter mode hides the sidebar: the title row has the picker
    with st.sidebar:
        language.picker()
lease()  # released when the session disconnects: its memory is handed back then
if st.session_state.get(PAGE) != page.url_path:  # arrived from another page (or first run)
    st.session_state[VISIT] = st.session_state.get(VISIT, 0) + 1
st.session_state[PAGE] = page.url_path  # one text box per page (see widgets.PAGE)
page.run()
