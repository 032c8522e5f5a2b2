"""gptviz: the router. Run with `streamlit run app.py`."""

import streamlit as st

st.set_page_config(page_title="gptviz", page_icon=":material/neurology:", layout="wide")

PAGES = {
    "": [st.Page("pages/home.py", title="Home", icon=":material/home:", default=True)],
    "Explore": [
        st.Page("pages/tokenizers.py", title="Tokenizers", icon=":material/text_fields:"),
        st.Page("pages/embeddings.py", title="Embeddings", icon=":material/scatter_plot:"),
        st.Page("pages/positional.py", title="Positional encoding", icon=":material/linear_scale:"),
        st.Page("pages/attention.py", title="Attention", icon=":material/grid_on:"),
        st.Page("pages/block.py", title="Transformer block", icon=":material/view_agenda:"),
        st.Page("pages/generation.py", title="Generation", icon=":material/auto_awesome:"),
    ],
    "Train": [st.Page("pages/training.py", title="Training", icon=":material/model_training:")],
}
st.navigation(PAGES).run()
