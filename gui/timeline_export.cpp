#include "timeline_export.hpp"

#include <QBuffer>
#include <QImage>
#include <QPainter>
#include <QSvgGenerator>

#include "compare_view.hpp"
#include "sim/base/atomic_file.hpp"

namespace simtrain::gui {

void export_timeline(const CompareView& view, const QString& path) {
  const QSize size = view.export_size();
  QBuffer buffer;
  buffer.open(QIODevice::WriteOnly);
  if (path.endsWith(".svg", Qt::CaseInsensitive)) {
    QSvgGenerator svg;
    svg.setOutputDevice(&buffer);
    svg.setSize(size);
    svg.setViewBox(QRect(QPoint(0, 0), size));
    svg.setTitle("simtrain timeline");
    QPainter painter(&svg);
    view.paint_export(painter);
  } else {
    QImage image(size, QImage::Format_RGB32);
    {
      QPainter painter(&image);
      view.paint_export(painter);
    }
    image.save(&buffer, "PNG");
  }
  const QByteArray& bytes = buffer.data();
  write_file_atomically(path.toStdString(), [&](std::ostream& out) { out.write(bytes.constData(), bytes.size()); });
}

}  // namespace simtrain::gui
