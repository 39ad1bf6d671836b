from ._generated import CategoricalNB as CategoricalNB, ComplementNB as ComplementNB
from ._naive_bayes import BernoulliNB as BernoulliNB, GaussianNB as GaussianNB, MultinomialNB as MultinomialNB
