"""Knowledge distillation: fit a small student to one or more teachers, with provenance.

:func:`distill` labels a transfer set with the teachers and fits the student to the
result, in steps that each have a module:

1. :mod:`~aprender.distillation._inputs`: load and check the teachers, hold out rows;
2. :mod:`~aprender.distillation._transfer`: the transfer set (the training rows and rows
   synthesized around them by MUNGE) and its soft targets,
   ``alpha * softmax(log p_teacher / T) + (1 - alpha) * onehot(y)`` for classifiers,
   ``alpha * teacher + (1 - alpha) * y`` for regressors;
3. :mod:`~aprender.distillation._fit`: fit the student to them exactly (an MLPClassifier as
   its own target matrix, a HistGradientBoostingClassifier through a soft-target loss
   (:mod:`~aprender.distillation._students`), other students by sample-weighted row
   expansion); :mod:`~aprender.distillation._progressive` first matches hidden layers;
4. :mod:`~aprender.distillation._fallback`: keep the distilled student unless a paired test
   on the held-out rows says the same student fitted on the hard labels is better;
5. :mod:`~aprender.distillation._provenance`: the held-out report and the ``provenance_``
   record that every save writes into the file's user metadata (key ``"provenance"``),
   where ``apr inspect`` shows it.

docs/distill.md explains each step. Importing this package imports no scikit-learn:
:func:`distill` comes in on first use (``apr distill --help`` reads :data:`METHODS`).
"""

import lazy_loader as lazy

# The names are listed once, in __init__.pyi, which type checkers read too;
# each is imported on first use.
__getattr__, __dir__, __all__ = lazy.attach_stub(__name__, __file__)
