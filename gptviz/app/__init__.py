"""The Streamlit app: its pages' views (one package a page), the shared pieces, the wing of
speed-ups and the server's accounting. Importing it looks messages up in each session's
language (``shared/language.py``)."""

from gptviz.app.shared import language as _language

_language.install()
