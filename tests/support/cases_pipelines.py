"""Zoo cases: text vectorizers, preprocessing, imputation, pipelines and ColumnTransformers.

Plain scikit-learn classes appear next to aprender's: both must roundtrip through
aprender.save / aprender.load. Step names are short so that nested tensor names
stay within GGUF's 63-byte limit.
"""

from __future__ import annotations

from functools import cache

import numpy as np
import pandas as pd
from sklearn import compose as sk_compose
from sklearn import feature_extraction as sk_fe
from sklearn import impute as sk_impute
from sklearn import linear_model as sk_linear
from sklearn import pipeline as sk_pipeline
from sklearn import preprocessing as sk_pre
from zoo import Case, diabetes, iris

from aprender.compose import ColumnTransformer, make_column_transformer
from aprender.feature_extraction.text import CountVectorizer, TfidfVectorizer
from aprender.impute import SimpleImputer
from aprender.linear_model import LogisticRegression, Ridge
from aprender.pipeline import Pipeline, make_pipeline
from aprender.preprocessing import LabelEncoder, MinMaxScaler, OneHotEncoder, StandardScaler

#: Logistic-regression solver of these cases: a few Newton steps fit iris far faster than lbfgs.
NEWTON = "newton-cholesky"

#: A small two-topic corpus (0: kitchen, 1: space) with a few shared and rare words.
CORPUS = [
    "Simmer the tomato sauce slowly and stir the pasta.",
    "Knead the dough, then bake the bread in a hot oven.",
    "The chef seasons the soup with salt, pepper and fresh basil.",
    "Whisk the eggs and fold them into the melted butter.",
    "Roast the vegetables in the oven until the edges are crisp.",
    "A sharp knife makes chopping onions quick and safe.",
    "The recipe calls for two cups of flour and a pinch of salt.",
    "Grill the fish and serve it with lemon and rice.",
    "The rocket launched at dawn and reached orbit within minutes.",
    "Astronauts on the station watched the sun rise over the planet.",
    "The telescope captured a distant galaxy and its bright stars.",
    "Mars rovers drill the red rock in search of ancient water.",
    "The probe slingshots around Jupiter on its way to the outer planets.",
    "A comet's tail glows as it passes close to the sun.",
    "Engineers test the capsule's heat shield before reentry.",
    "The moon landing remains a milestone of space exploration.",
]
TOPICS = np.array([0] * 8 + [1] * 8)
#: Unseen documents, including words outside every vocabulary.
NEW_TEXTS = [
    "Bake the fish in the oven with basil.",
    "The rocket carried a telescope to orbit around the moon.",
    "Quantum zebras juggle violins.",
    "",
]


def texts() -> list[str]:
    """Training and unseen documents: what vectorizers are compared on."""
    return CORPUS + NEW_TEXTS


@cache
def frame() -> pd.DataFrame:
    """Iris as a DataFrame with two categorical (string) columns derived from it."""
    X, _ = iris()
    df = pd.DataFrame(X, columns=["sepal_length", "sepal_width", "petal_length", "petal_width"])
    df["petal_size"] = np.array(["small", "medium", "large"])[np.digitize(X[:, 2], [2.5, 5.0])]
    df["sepal_shape"] = np.where(X[:, 0] / X[:, 1] > 2.0, "long", "round")
    return df


@cache
def categorical() -> np.ndarray:
    """An object array of string categories, one rare value and one missing (None)."""
    df = frame()
    rows = df[["petal_size", "sepal_shape"]].to_numpy(dtype=object)
    rows[7, 0], rows[11, 1] = "tiny", None
    return rows


def with_missing(X: np.ndarray) -> np.ndarray:
    """A copy of X with every 7th value of each column replaced by NaN."""
    out = X.copy()
    for j in range(out.shape[1]):
        out[j::7, j] = np.nan
    return out


def _vectorizer(vec):
    return vec.fit(CORPUS), texts()


def _transformer(est, X):
    return est.fit(X), X


def _tfidf_transformer():
    counts = sk_fe.text.CountVectorizer().fit(CORPUS)
    X = counts.transform(texts())
    return sk_fe.text.TfidfTransformer(sublinear_tf=True).fit(counts.transform(CORPUS)), X


def _label_encoder(labels):
    # LabelEncoder works on targets: its "X" is a vector of labels (transform maps them to codes).
    return LabelEncoder().fit(labels), labels


def _frame_pipeline():
    df, (_, y) = frame(), iris()
    prep = ColumnTransformer([
        ("cat", OneHotEncoder(handle_unknown="ignore"), ["petal_size", "sepal_shape"]),
        ("num", StandardScaler(), ["sepal_length", "sepal_width", "petal_width"]),
    ])
    return Pipeline([("prep", prep), ("clf", LogisticRegression(solver=NEWTON))]).fit(df, y), df


def _mixed_sklearn_pipeline():
    # A plain scikit-learn Pipeline and ColumnTransformer holding aprender and sklearn steps.
    df, (_, y) = frame(), iris()
    prep = sk_compose.ColumnTransformer(
        [
            ("cat", sk_pre.OneHotEncoder(drop="first"), ["petal_size", "sepal_shape"]),
            ("num", MinMaxScaler(), slice(0, 2)),
        ],
        remainder="passthrough",
    )
    steps = [("prep", prep), ("scale", StandardScaler()), ("clf", sk_linear.LogisticRegression(solver=NEWTON))]
    return sk_pipeline.Pipeline(steps).fit(df, y), df


def _text_pipeline():
    pipe = Pipeline([("tfidf", TfidfVectorizer(ngram_range=(1, 2))), ("clf", LogisticRegression(solver=NEWTON))])
    return pipe.fit(CORPUS, TOPICS), texts()


def _imputing_pipeline():
    X, y = diabetes()
    pipe = make_pipeline(SimpleImputer(strategy="median"), MinMaxScaler(), Ridge(alpha=0.5))
    return pipe.fit(with_missing(X), y), with_missing(X)


CASES: list[Case] = [
    # -- text -------------------------------------------------------------------
    Case("CountVectorizer", lambda: _vectorizer(CountVectorizer(ngram_range=(1, 2), stop_words="english"))),
    Case("CountVectorizer-sklearn", lambda: _vectorizer(sk_fe.text.CountVectorizer(max_features=20, binary=True))),
    Case("TfidfVectorizer", lambda: _vectorizer(TfidfVectorizer(sublinear_tf=True, min_df=1, max_df=0.9))),
    Case("TfidfVectorizer-char", lambda: _vectorizer(TfidfVectorizer(analyzer="char_wb", ngram_range=(2, 3)))),
    Case("TfidfVectorizer-no-idf", lambda: _vectorizer(TfidfVectorizer(use_idf=False, norm="l1"))),
    Case("TfidfVectorizer-sklearn", lambda: _vectorizer(sk_fe.text.TfidfVectorizer(dtype=np.float32))),
    Case("TfidfTransformer-sklearn", _tfidf_transformer),
    # -- preprocessing ------------------------------------------------------------
    Case("MinMaxScaler", lambda: _transformer(MinMaxScaler(feature_range=(-1, 1)), iris()[0])),
    Case("MinMaxScaler-sklearn", lambda: _transformer(sk_pre.MinMaxScaler(clip=True), diabetes()[0])),
    Case("OneHotEncoder", lambda: _transformer(OneHotEncoder(handle_unknown="ignore"), categorical())),
    Case("OneHotEncoder-drop-dense", lambda: _transformer(
        OneHotEncoder(drop="first", sparse_output=False, handle_unknown="ignore"), categorical())),
    Case("OneHotEncoder-infrequent", lambda: _transformer(
        OneHotEncoder(min_frequency=5, handle_unknown="infrequent_if_exist"), categorical())),
    Case("OneHotEncoder-numeric-sklearn", lambda: _transformer(
        sk_pre.OneHotEncoder(sparse_output=False), np.round(iris()[0][:, :2]))),
    Case("LabelEncoder", lambda: _label_encoder(np.array(["setosa", "versicolor", "virginica"])[iris()[1]])),
    Case("LabelEncoder-ints", lambda: _label_encoder(iris()[1] * 10 - 5)),
    Case("SimpleImputer", lambda: _transformer(SimpleImputer(), with_missing(iris()[0]))),
    Case("SimpleImputer-strings-sklearn", lambda: _transformer(
        sk_impute.SimpleImputer(strategy="most_frequent", missing_values=None, add_indicator=True), categorical())),
    Case("SimpleImputer-constant", lambda: _transformer(
        SimpleImputer(strategy="constant", fill_value=-1.0, add_indicator=True), with_missing(diabetes()[0]))),
    # -- pipelines and column transformers ------------------------------------------
    Case("Pipeline-scaler-logistic", lambda: (
        Pipeline([("scale", StandardScaler()), ("clf", LogisticRegression(solver=NEWTON))]).fit(*iris()), iris()[0])),
    Case("make_pipeline-minmax-ridge", lambda: (
        make_pipeline(MinMaxScaler(), Ridge()).fit(*diabetes()), diabetes()[0])),
    Case("Pipeline-impute-scale-ridge", _imputing_pipeline),
    Case("Pipeline-text", _text_pipeline),
    Case("Pipeline-frame-columns-logistic", _frame_pipeline),
    Case("Pipeline-sklearn-mixed", _mixed_sklearn_pipeline),
    Case("ColumnTransformer-passthrough", lambda: _transformer(
        make_column_transformer((StandardScaler(), [0, 1]), ("drop", [2]), remainder="passthrough"), iris()[0])),
    Case("ColumnTransformer-frame-sparse", lambda: _transformer(
        ColumnTransformer([("cat", OneHotEncoder(), ["petal_size", "sepal_shape"])], sparse_threshold=1.0), frame())),
]
