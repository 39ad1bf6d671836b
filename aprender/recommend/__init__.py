"""aprender's own recommenders: content-based recommendation over item texts."""

from aprender.recommend._content import ContentRecommender

__all__ = ["ContentRecommender"]
