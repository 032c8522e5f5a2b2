"""The app's own charts save as PNG, as plotly's figures do from their modebar: the canvas
heatmaps (heatcanvas) and the SVG charts (svgplot) each get a button that downloads the
chart as the reader sees it: its title, its colours, its legend, on the page's background.

The PNG is decoded (Pillow, a Streamlit dependency) and compared with the chart on the page:
its size, and the chart's own colours in it (not a blank image).
"""

from __future__ import annotations

import io

import pytest
from PIL import Image

from tests.helpers import SCREENSHOTS, settle, visit

pytestmark = pytest.mark.browser


def download_png(page, chart: str) -> tuple[Image.Image, str, dict]:
    """Hover the first ``chart`` of the page, click its PNG button, return the image, its
    file name and the chart's box on the page."""
    root = page.locator(chart).first
    root.scroll_into_view_if_needed()
    root.hover()
    button = root.locator(":scope > .gv-png")
    assert button.get_attribute("aria-label") == "Download as PNG"
    with page.expect_download() as info:
        button.click()
    download = info.value
    data = download.path().read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    (SCREENSHOTS / f"png-{download.suggested_filename}").write_bytes(data)
    return Image.open(io.BytesIO(data)).convert("RGB"), download.suggested_filename, \
        root.bounding_box()


def colours(image: Image.Image) -> int:
    return len(image.getcolors(maxcolors=1 << 20) or [])


def test_a_canvas_heatmap_saves_as_png(page, app_url):
    page.set_viewport_size({"width": 1280, "height": 900})
    visit(page, f"{app_url}/positional")
    settle(page)
    image, name, box = download_png(page, '.gv-heat[data-drawn="1"]')
    assert name.endswith(".png") and name != "chart.png"  # named after the chart's title
    assert abs(image.width - box["width"]) <= 2 and image.height >= box["height"] * 0.8
    assert colours(image) > 50, "a heatmap's colour scale, not a blank image"


def test_an_svg_chart_saves_as_png_with_its_legend(page, app_url):
    page.set_viewport_size({"width": 1280, "height": 900})
    visit(page, f"{app_url}/learning")
    settle(page)
    charts = page.locator(".gv-svgbox:has(.gv-sp-legend)")
    if not charts.count():
        charts = page.locator(".gv-svgbox")
    assert charts.count(), "the Learning page draws SVG charts"
    image, name, box = download_png(page, ".gv-svgbox:has(.gv-sp-legend)"
                                    if page.locator(".gv-svgbox .gv-sp-legend").count()
                                    else ".gv-svgbox")
    assert image.width >= 2 * (box["width"] - 4)  # twice the page's size
    background = image.getpixel((1, 1))
    inked = sum(1 for p in image.getdata() if p != background)
    assert colours(image) > 5 and inked > 0.01 * image.width * image.height
