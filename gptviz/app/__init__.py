"""The Streamlit app: its pages' views (one package a page), the shared pieces, the wing of
speed-ups and the server's accounting. Every page looks its messages up in the session's
language: ``shared/language.py`` registers that when it is first imported."""
