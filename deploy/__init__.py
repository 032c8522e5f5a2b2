"""A lecture hall: several replicas of the app behind HAProxy, the class in Redis
(``serve.py``; ``compose.yaml`` for containers). Run ``python deploy/serve.py --help``."""
