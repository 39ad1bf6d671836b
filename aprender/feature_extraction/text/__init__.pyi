from ._generated import HashingVectorizer as HashingVectorizer, TfidfTransformer as TfidfTransformer
from ._vectorizers import CountVectorizer as CountVectorizer, TfidfVectorizer as TfidfVectorizer
