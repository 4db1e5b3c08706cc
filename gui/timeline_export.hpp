#pragma once
// Writes what the timelines show as a PNG or an SVG (by the file's
// extension), atomically: the file is complete or not there.
#include <QString>

namespace simtrain::gui {

class CompareView;

// Throws InputError naming the path if it cannot be written.
void export_timeline(const CompareView& view, const QString& path);

}  // namespace simtrain::gui
