"""gptviz: the router. Run with `streamlit run app.py`."""

import streamlit as st

st.set_page_config(page_title="gptviz", page_icon=":material/neurology:", layout="wide")

PAGES = {
    "": [st.Page("pages/home.py", title="Home", icon=":material/home:", default=True)],
    "Explore": [
        st.Page("pages/tokenizers.py", title="Tokenizers", icon=":material/text_fields:"),
    ],
}
st.navigation(PAGES).run()
