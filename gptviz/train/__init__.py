"""Training: the Trainer, background jobs for the app, plans and caps, DDP and devices.

``python -m gptviz.train`` is the command line (``__main__.py``).
"""
