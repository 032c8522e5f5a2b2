"""gptviz: the router. Run with `streamlit run app.py`."""

import os
from pathlib import Path

import streamlit as st

from gptviz.app.shared.base_url import serve_base_url
from gptviz.app.shared.fonts import preloads
from gptviz.app.shared.sockets import no_delay
from gptviz.app.shared.validators import lean_validators

# Streamlit's import parsed plotly's whole validator table (~11.6 MB kept for good): read
# it per entry instead, before the imports below reuse the memory it frees.
lean_validators()
no_delay()  # every reply without a 40 ms wait (see sockets.py); once per process

from gptviz.app.shared.widgets import PAGE, VISIT, page_style  # noqa: E402

# pyarrow's default pool (jemalloc or mimalloc) keeps what the first st.dataframe allocated,
# ~4 MB for the server's lifetime; the system pool (malloc) is shared with everything else.
# Read when the pool is first used, after this line. (glibc's own thresholds were tried
# too: fixing them returns freed blocks at once but made training steps 1.8x slower.)
os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")

ICON = Path(__file__).parent / "assets" / "icon.png"  # a local file: nothing is fetched
st.set_page_config(page_title="gptviz", page_icon=str(ICON), layout="wide")

PAGES = {
    "": [st.Page("app_pages/home.py", title="Home", icon=":material/home:", default=True),
         st.Page("app_pages/lesson.py", title="Lesson", icon=":material/school:")],
    "Explore": [
        st.Page("app_pages/tokenizers.py", title="Tokenizers", icon=":material/text_fields:"),
        st.Page("app_pages/embeddings.py", title="Embeddings", icon=":material/scatter_plot:"),
        st.Page("app_pages/positional.py", title="Positional encoding",
                icon=":material/linear_scale:"),
        st.Page("app_pages/attention.py", title="Attention", icon=":material/grid_on:"),
        st.Page("app_pages/block.py", title="Transformer block", icon=":material/view_agenda:"),
        st.Page("app_pages/generation.py", title="Generation", icon=":material/auto_awesome:"),
    ],
    "Train": [st.Page("app_pages/training.py", title="Training", icon=":material/model_training:"),
              st.Page("app_pages/learning.py", title="Learning", icon=":material/insights:")],
    "Class": [st.Page("app_pages/join.py", title="Join a class", icon=":material/login:",
                      url_path="join")],
}
# A page opened at its own address (/attention) connects without first probing for the app's
# root, a 100 ms wait (see base_url.py), and every page asks for its fonts before it is
# drawn (fonts.py); once per process.
serve_base_url((p.url_path for group in PAGES.values() for p in group), preloads())
page = st.navigation(PAGES)
page_style()
if st.session_state.get(PAGE) != page.url_path:  # arrived from another page (or first run)
    st.session_state[VISIT] = st.session_state.get(VISIT, 0) + 1
st.session_state[PAGE] = page.url_path  # one text box per page (see widgets.PAGE)
page.run()
