"""The pages: ``pages`` (every page's load in Chromium against a bare page), ``app`` (warm
AppTest runs of every view), ``lesson``, ``learning``, ``generation_page`` and
``training_page`` (one page in depth), ``attribution`` and ``circuits`` (their views' warm
runs)."""
