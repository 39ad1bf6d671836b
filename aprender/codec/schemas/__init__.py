"""Per-family schemas: tensor aliases, quantizable attributes and load-time validators.

Each module exposes ``SCHEMAS``: a list of ``(classes, Spec)`` pairs. The classes of
one pair (an aprender estimator and its scikit-learn base) share one schema.
"""
