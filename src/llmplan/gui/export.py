"""Pictures and PDFs for the exports: the charts as PNG bytes and the HTML report printed with Qt.

Charts: a chart on a tab that was never shown has never been painted, so pyqtgraph has not
yet widened its axes to their tick labels, and an export of it drew the "tokens/s" axis
title over "50,000" (issue 18). Each chart is therefore painted once off screen (twice: the
first paint measures the tick labels, the second lays the axis out) before pyqtgraph's
``ImageExporter`` renders it.

PDF: ``QTextDocument`` renders the report's HTML (``report_html``), its charts registered as
image resources, onto a ``QPdfWriter`` (A4, 300 dpi) writing into memory; the bytes are then
saved with ``atomic_write`` like every other file.
"""

from __future__ import annotations

from PySide6.QtCore import QBuffer, QByteArray, QIODevice, QMarginsF, QUrl
from PySide6.QtGui import QImage, QPageLayout, QPageSize, QPdfWriter, QTextDocument
from PySide6.QtWidgets import QApplication

EXPORT_WIDTH = 900  # pixels of an exported chart


def settle_axes(plot) -> None:
    """Paint the plot off screen until its axes have room for their tick labels."""
    for _ in range(2):
        plot.grab()
        QApplication.processEvents()


def chart_pngs(charts) -> list[tuple[str, str, bytes]]:
    """(tab name, chart title, PNG bytes) for every chart of a ``ChartsPanel``, each drawn with its latest data."""
    from pyqtgraph.exporters import ImageExporter

    from llmplan.gui.files import png_bytes

    charts.draw_all()
    out = []
    for i in range(charts.count()):
        widget = charts.widget(i)
        settle_axes(widget)
        exporter = ImageExporter(widget.getPlotItem())
        exporter.parameters()["width"] = EXPORT_WIDTH
        out.append((charts.tabText(i), widget.plotItem.titleLabel.text, png_bytes(exporter.export(toBytes=True))))
    return out


def pdf_bytes(html: str, pictures: list[bytes]) -> bytes:
    """The HTML (with ``report_html.image_name`` references) as an A4 PDF."""
    from llmplan.gui.report_html import image_name

    doc = QTextDocument()
    for i, png in enumerate(pictures):
        doc.addResource(QTextDocument.ResourceType.ImageResource, QUrl(image_name(i)), QImage.fromData(png, "PNG"))
    doc.setHtml(html)
    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    writer = QPdfWriter(buffer)
    writer.setPageLayout(QPageLayout(QPageSize(QPageSize.PageSizeId.A4), QPageLayout.Orientation.Portrait,
                                     QMarginsF(15, 15, 15, 15), QPageLayout.Unit.Millimeter))
    writer.setResolution(300)
    writer.setTitle("llmplan report")
    writer.setCreator("llmplan")
    doc.print_(writer)
    del writer  # finishes the PDF into the buffer
    buffer.close()
    return bytes(data)
