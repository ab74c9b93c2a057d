from hypothesis import given
from hypothesis import strategies as st

from nemo_pc.formatter.html_text import html_paragraphs

PAGE = """<html><head><title>6.2. Commands</title><style>p { color: red }</style></head><body>
<div id="banner"><a href="x">Download the ebook</a></div>
<ul class="docnav"><li>Prev</li><li>Next</li></ul>
<h2 class="title">6.2. The <code>apt</code> Commands</h2>
<div class="para">APT is a vast project. It is based on a <em>library</em>
   which contains the core application.</div>
<pre class="screen">$ sudo apt update</pre>
<p>Run it daily.<br/>Or weekly &amp; monthly.</p>
<table><tr><td>apt</td><td>2.6</td></tr></table>
<ol><li>First step.</li></ol>
<script>var x = 1;</script>
</body></html>"""


def test_prose_paragraphs_and_counted_drops():
    paragraphs, dropped = html_paragraphs(PAGE)
    assert paragraphs == [
        "6.2. The apt Commands",
        "APT is a vast project. It is based on a library which contains the core application.",
        "Run it daily.",
        "Or weekly & monthly.",
    ]
    assert dropped == [
        ("html head", "6.2. Commands p { color: red }"),
        ("html navigation", "Download the ebook"),
        ("html navigation", "Prev Next"),
        ("html code block", "$ sudo apt update"),
        ("html table", "apt 2.6"),
        ("html list", "First step."),
        ("html script or style", "var x = 1;"),
    ]


def test_unclosed_and_stray_tags_lose_no_text():
    paragraphs, dropped = html_paragraphs("<p>One <b>two</p></i> three<pre>code")
    assert paragraphs == ["One two", "three"] and dropped == [("html code block", "code")]


_WORD = st.text("abcdefgh", min_size=1, max_size=6)
_BLOCKS = st.lists(
    st.tuples(
        st.sampled_from(["p", "div", "h3", "pre", "table", "ul", "span"]), st.lists(_WORD, min_size=1, max_size=5)
    ),
    max_size=8,
)


@given(_BLOCKS)
def test_every_word_is_kept_or_counted_as_dropped_once(blocks):
    html = "\n".join(f"<{tag}>{' '.join(words)}</{tag}>" for tag, words in blocks)
    paragraphs, dropped = html_paragraphs(html)
    kept = " ".join(paragraphs).split()
    left_out = " ".join(text for _, text in dropped).split()
    assert sorted(kept + left_out) == sorted(word for _, words in blocks for word in words)
    assert left_out == [w for tag, words in blocks if tag in ("pre", "table", "ul") for w in words]
