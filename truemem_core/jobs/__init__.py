"""Background jobs: the broker, the runner with its table of kinds, the handlers, dispatch.

Work is first written to the ``jobs`` table (``storage/outbox.py``) in the same
transaction as the data it concerns; this package moves it to a worker and runs it.
"""
