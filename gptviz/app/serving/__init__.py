"""The server's resources, shared by every session of one process: memory budgets for the
models sessions add and the ones the server names (``budget``), a results cache bounded in
bytes (``lru``), freed heap pages handed back (``memory``), one torch thread for a small
model's passes (``threads``), the trainer slots (``trainers``) and who is asking behind a
proxy (``client``). Only ``trainers`` (a ``st.cache_resource``) and ``client`` (``st.context``)
use Streamlit; the rest is plain Python and torch.
"""
