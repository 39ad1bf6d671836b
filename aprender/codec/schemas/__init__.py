"""Per-family schemas: tensor aliases, quantizable attributes and load-time validators.

Each module exposes ``SCHEMAS``: a list of ``(classes, Spec)`` pairs. The classes of
one pair (an aprender estimator and its scikit-learn base) share one schema.

Modules whose names start with an underscore are the helpers those schemas share:
HistGradientBoosting's predictors and bin mapper (``_hgb``), the generic spec
(``_generic``) and the audit of classes that reach compiled code (``_compiled``). Tree
storage (node arrays, packed forests, their structural checks) is its own package,
aprender.codec.trees.
"""
