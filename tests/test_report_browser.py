"""The committed report page in a real headless browser: every figure renders."""

import pytest
from browser import assert_every_figure_rendered, images, needs_browser
from conftest import ROOT

pytestmark = needs_browser


@pytest.mark.parametrize(
    "reports", [ROOT / "reports", ROOT / "profiles" / "full" / "reports"], ids=str
)
def test_committed_report_renders_every_figure(reports):
    """The default profile's page and the full profile's."""
    n = assert_every_figure_rendered(reports / "index.html", reports / "index.md")
    assert n >= 10  # curves, gradient flow, BLEU by length, heatmaps, trade-off, ...


def test_a_broken_figure_is_caught(tmp_path):
    """A figure whose file is corrupt or missing does not render, and the check
    says which."""
    png = (ROOT / "reports" / "figures" / "word-embeddings-0.png").read_bytes()
    (tmp_path / "figures").mkdir()
    (tmp_path / "figures" / "good.png").write_bytes(png)
    (tmp_path / "figures" / "bad.png").write_bytes(b"\0" * 16 + png[16:])
    page = tmp_path / "index.html"
    page.write_text(
        "<!doctype html><html><body>"
        "<img alt='good' src='figures/good.png'>"
        "<img alt='bad' src='figures/bad.png'>"
        "<img alt='gone' src='figures/gone.png'></body></html>"
    )
    (tmp_path / "index.md").write_text(
        "![good](a.png)\n![bad](b.png)\n![gone](c.png)\n"
    )
    shown = {i["alt"]: i for i in images(page)}
    assert shown["good"]["width"] > 0
    assert shown["bad"]["width"] == 0 and shown["gone"]["width"] == 0
    with pytest.raises(AssertionError, match="did not render: \\['bad', 'gone'\\]"):
        assert_every_figure_rendered(page, tmp_path / "index.md")
