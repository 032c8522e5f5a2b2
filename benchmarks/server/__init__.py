"""One server's capacity: ``crowd`` (a class of N students at once, over
``streamlit_client``, Streamlit's websocket protocol without a browser), ``session_rss`` (the
memory after one session visits every page), ``upload_memory`` (what an upload costs) and
``gpt2_shape`` (a model of GPT-2 small's size)."""
