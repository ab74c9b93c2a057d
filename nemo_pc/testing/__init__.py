"""Helpers for tests: tiny corpora and books built in code."""

from nemo_pc.testing.corpus import PARAGRAPH, make_book, write_chapter

__all__ = ["PARAGRAPH", "make_book", "write_chapter"]
