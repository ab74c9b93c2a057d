"""Prose paragraphs of an HTML page (a manual's section), with the standard library's :mod:`html.parser`.

A block element (``p``, ``div``, a heading, ``blockquote`` …) ends a paragraph, so a heading or a caption never runs
into the sentence after it. Whole elements that are not prose are left out, each counted as a drop with its reason
and the start of its text (:data:`DROPPED`): code blocks, tables, lists, navigation and the page's head, scripts and
styles. Inline markup (``code``, ``em``, links) keeps its text inside the sentence.
"""

from __future__ import annotations

from html.parser import HTMLParser

DROPPED = {
    "pre": "html code block",
    "table": "html table",
    "ul": "html list",
    "ol": "html list",
    "dl": "html list",
    "nav": "html navigation",
    "head": "html head",
    "script": "html script or style",
    "style": "html script or style",
}
"""The elements left out whole, and the drop reason each is counted under."""
NAVIGATION = ("banner", "breadcrumb", "docnav", "footer", "navigation", "related", "sphinxsidebar")
"""An element whose ``class`` or ``id`` contains one of these is page navigation (``html navigation``)."""
BLOCKS = frozenset(
    "address article aside blockquote body caption dd div dt figcaption figure footer h1 h2 h3 h4 h5 h6 header "
    "hr br li p section title td th tr".split()
)
"""Elements that start and end a paragraph."""
VOID = frozenset("area base br col embed hr img input link meta param source track wbr".split())
"""Elements that have no end tag."""


def html_paragraphs(html: str) -> tuple[list[str], list[tuple[str, str]]]:
    """The prose paragraphs of a page (whitespace collapsed) and the blocks left out.

    Returns:
        ``(paragraphs, dropped)``: ``dropped`` holds ``(reason, text)`` for every left-out element that had text,
        outermost elements only, in page order.
    """
    parser = _ProseParser()
    parser.feed(html)
    parser.close()
    parser.flush()
    return parser.paragraphs, parser.dropped


class _ProseParser(HTMLParser):
    """Collects paragraph text outside the left-out elements, and the text of each left-out element."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.paragraphs: list[str] = []
        self.dropped: list[tuple[str, str]] = []
        self._open: list[str] = []
        self._skip_depth: int | None = None  # depth of the open left-out element, None outside one
        self._reason = ""
        self._prose: list[str] = []
        self._skipped: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self._skip_depth is None:
            reason = _navigation(attrs) or DROPPED.get(tag)
            if tag in BLOCKS or reason:
                self.flush()
            if reason and tag not in VOID:
                self._skip_depth, self._reason = len(self._open), reason
        else:
            self._skipped.append(" ")  # words of a left-out element's parts stay apart in its text
        if tag not in VOID:
            self._open.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag not in self._open:
            return
        if self._skip_depth is not None:
            self._skipped.append(" ")
        while self._open:
            closed = self._open.pop()
            if self._skip_depth is not None and len(self._open) == self._skip_depth:
                self._end_skip()
            if closed == tag:
                break
        if self._skip_depth is None and tag in BLOCKS:
            self.flush()

    def handle_data(self, data: str) -> None:
        (self._prose if self._skip_depth is None else self._skipped).append(data)

    def flush(self) -> None:
        """Ends the paragraph being read (and a left-out element the page never closed)."""
        if self._skip_depth is not None:
            self._end_skip()
        text = " ".join("".join(self._prose).split())
        if text:
            self.paragraphs.append(text)
        self._prose = []

    def _end_skip(self) -> None:
        text = " ".join("".join(self._skipped).split())
        if text:
            self.dropped.append((self._reason, text))
        self._skip_depth, self._reason, self._skipped = None, "", []


def _navigation(attrs: list[tuple[str, str | None]]) -> str | None:
    names = " ".join(value or "" for key, value in attrs if key in ("class", "id")).lower()
    return "html navigation" if any(word in names for word in NAVIGATION) else None
