#pragma once
// A search's configurations as points of step time (x) against training
// cost (y): the Pareto front joined and in colour, the scenario's own
// configuration ringed, both axes with 1-2-5 ticks. Hover names a point; a
// click chooses it.
#include <optional>
#include <vector>

#include <QRectF>
#include <QString>
#include <QWidget>

#include "search_results.hpp"

namespace simtrain::gui {

class ParetoView : public QWidget {
  Q_OBJECT
public:
  struct Tick {
    double value;  // in seconds (x) or the cost unit (y)
    QString label;
    double at = 0;      // its x (x axis) or y (y axis) in the widget
    QRectF label_rect;  // where the label is drawn, as wide as its text
  };
  // Where everything goes at the widget's size: text gets the room it needs
  // (measured with the widget's font), the plot what is left.
  struct Layout {
    QString caption;
    QRectF caption_rect;  // above the plot, wrapped to the widget's width
    QRectF plot;
    std::vector<Tick> x_ticks, y_ticks;
    QRectF x_title_rect;  // "step time", under the x labels
  };

  explicit ParetoView(QWidget* parent = nullptr);

  void set_results(SearchResults results);
  const SearchResults& results() const { return results_; }
  Layout layout() const;
  // Where point `index` is drawn, in widget coordinates.
  QPointF position_of(int index) const;
  // The point drawn within a few pixels of `position`, if any.
  std::optional<int> point_at(QPointF position) const;

  QSize sizeHint() const override { return {900, 600}; }
  QSize minimumSizeHint() const override { return {480, 320}; }

signals:
  void point_chosen(int index);

protected:
  void paintEvent(QPaintEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;

private:
  QPointF position_in(const QRectF& plot, const SearchPoint& point) const;

  SearchResults results_;
  double min_seconds_ = 0, max_seconds_ = 1, min_cost_ = 0, max_cost_ = 1;
  std::optional<int> chosen_;
};

}  // namespace simtrain::gui
