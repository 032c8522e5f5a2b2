"""Ordinary helpers every page shares: the model picker, caches, prompt input, widgets,
heatmap builders, token chips and TeX helpers. What replaces or patches Streamlit or plotly
is in ``gptviz/app/speedups/``; the server's resources are in ``gptviz/app/serving/``.
"""
