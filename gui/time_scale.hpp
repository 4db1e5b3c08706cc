#pragma once
// The time axis that compared timelines share: zooming or panning one moves
// the other, so both stay on the same scale.
#include <QObject>

namespace simtrain::gui {

class TimeScale : public QObject {
  Q_OBJECT
public:
  double origin_seconds() const { return origin_seconds_; }
  double pixels_per_second() const { return pixels_per_second_; }
  void set(double origin_seconds, double pixels_per_second) {
    origin_seconds_ = origin_seconds;
    pixels_per_second_ = pixels_per_second;
    emit changed();
  }

signals:
  void changed();

private:
  double origin_seconds_ = 0;
  double pixels_per_second_ = 1000;
};

}  // namespace simtrain::gui
